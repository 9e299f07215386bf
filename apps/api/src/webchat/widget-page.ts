import { HOST_BRIDGE_SCRIPT } from "./widget-bridge.js";

/**
 * The embeddable widget: one self-contained page, no build step and no third-party
 * script. It keeps the visitor's token in localStorage (or sessionStorage) where the
 * browser allows it and in memory where it does not (a third-party frame under blocked
 * third-party storage), shows the history, streams the replies (EventSource) and reports
 * `delivered` on arrival and `read` when in view. There is no `<form>`: nothing the browser
 * could ever submit natively, so a message's text never lands in a URL, script or no script.
 */
export function widgetPage(channelId: string, title: string, nonce: string): string {
  const config = JSON.stringify({ channelId, title }).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style nonce="${nonce}">
  body { font: 15px/1.4 system-ui, sans-serif; margin: 0; display: flex; flex-direction: column; height: 100vh; background: #f6f7f9; }
  header { padding: 12px 16px; background: #1f2937; color: #fff; font-weight: 600; display: flex; justify-content: space-between; align-items: center; }
  header button { background: transparent; border: 1px solid #6b7280; padding: 2px 8px; font-size: 12px; }
  #messages { flex: 1; overflow-y: auto; padding: 12px 16px; display: flex; flex-direction: column; gap: 8px; }
  .message { max-width: 75%; padding: 8px 12px; border-radius: 12px; white-space: pre-wrap; word-wrap: break-word; }
  .inbound { align-self: flex-end; background: #2563eb; color: #fff; }
  .outbound { align-self: flex-start; background: #fff; border: 1px solid #e5e7eb; }
  #composer { display: flex; gap: 8px; padding: 12px 16px; background: #fff; border-top: 1px solid #e5e7eb; }
  input { flex: 1; padding: 8px 10px; border: 1px solid #d1d5db; border-radius: 8px; font: inherit; }
  button { padding: 8px 14px; border: 0; border-radius: 8px; background: #2563eb; color: #fff; font: inherit; cursor: pointer; }
  #status { font-size: 12px; color: #6b7280; padding: 0 16px 8px; }
</style>
</head>
<body>
<header><span>${escapeHtml(title)}</span><button id="end" type="button" title="End this chat and forget it on this device">End chat</button></header>
<div id="messages" aria-live="polite"></div>
<div id="status"></div>
<div id="composer" role="form" aria-label="Send a message">
  <input id="text" type="text" autocomplete="off" placeholder="Write a message" maxlength="4096" aria-label="Message">
  <button id="send" type="button">Send</button>
</div>
<script nonce="${nonce}">
(() => {
  const config = ${config};
  const api = location.origin + "/v1/webchat";
  const storageKey = "parley:webchat:" + config.channelId;
  const list = document.getElementById("messages");
  const status = document.getElementById("status");
  const input = document.getElementById("text");
  const seen = new Set();
  const unread = new Set();
  let token = null;
  let stream = null;
  let starting = null;

  // The handlers come first: nothing below can leave the visitor with a dead page.
  document.getElementById("send").addEventListener("click", () => send());
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.isComposing && !event.shiftKey) { event.preventDefault(); send(); }
  });
  document.getElementById("end").addEventListener("click", () => end());
  document.addEventListener("visibilitychange", markRead);

  // ---- host bridge (widget.js): the launcher's postMessage protocol, see widget-bridge.ts ----
${HOST_BRIDGE_SCRIPT}
  // ---- end of host bridge ----

  // Where the browser refuses storage (a third-party frame with third-party storage blocked,
  // where merely reading localStorage throws), the token lives in this page's memory only:
  // the conversation goes on while the page is open, and a reload starts afresh.
  const store = bridge.keep((() => {
    let storage = null;
    for (const name of ["localStorage", "sessionStorage"]) {
      try {
        const candidate = window[name];
        candidate.setItem(storageKey + ":probe", "1");
        candidate.removeItem(storageKey + ":probe");
        storage = candidate;
        break;
      } catch {}
    }
    let memory = null;
    return {
      get() { if (memory) return memory; try { return storage ? storage.getItem(storageKey) : null; } catch { return null; } },
      set(value) { memory = value; try { if (storage) storage.setItem(storageKey, value); } catch {} },
      clear() { memory = null; try { if (storage) storage.removeItem(storageKey); } catch {} },
    };
  })()); // host bridge: under widget.js the host's storage keeps the token
  token = store.get();

  async function call(method, path, body) {
    const response = await fetch(api + path, {
      method,
      headers: Object.assign({ "content-type": "application/json" }, token ? { authorization: "Bearer " + token } : {}),
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!response.ok) {
      const failure = await response.json().catch(() => null);
      throw new Error(failure && failure.error ? failure.error.message : "Something went wrong (" + response.status + ").");
    }
    return response.status === 204 ? null : response.json();
  }

  async function ensureSession() {
    if (token) {
      try { return await call("GET", "/session/messages"); } catch { token = null; store.clear(); }
    }
    const session = await call("POST", "/channels/" + config.channelId + "/sessions", {});
    token = session.token;
    store.set(token);
    return [];
  }

  // One session at a time, however many messages the visitor sends while it starts.
  function start() {
    if (!starting) {
      // host bridge: under widget.js, the token the host keeps first.
      starting = bridge.ready.then(() => { token = token || store.get(); return ensureSession(); }).then((history) => {
        history.forEach(show);
        if (stream) stream.close();
        listen();
        status.textContent = "";
      });
      starting.catch(() => { starting = null; });
    }
    return starting;
  }

  function show(message) {
    if (seen.has(message.id)) return;
    seen.add(message.id);
    const item = document.createElement("div");
    item.className = "message " + message.direction;
    item.dataset.id = message.id;
    item.textContent = message.text || "";
    list.appendChild(item);
    list.scrollTop = list.scrollHeight;
    if (message.direction === "outbound" && message.status !== "read") {
      if (message.status !== "delivered") receipt(message.id, "delivered");
      unread.add(message.id);
      markRead();
    }
  }

  function receipt(id, state) {
    call("POST", "/session/receipts", { message_id: id, status: state }).catch(() => {});
  }

  function markRead() {
    // host bridge: a closed panel has not been seen; the launcher shows a badge instead.
    if (document.visibilityState !== "visible" || !bridge.shown()) return bridge.unread(unread.size);
    for (const id of unread) receipt(id, "read");
    unread.clear();
  }

  function listen() {
    stream = new EventSource(api + "/session/events?token=" + encodeURIComponent(token));
    stream.addEventListener("message", (event) => show(JSON.parse(event.data)));
    stream.onopen = () => { status.textContent = ""; };
    stream.onerror = () => { status.textContent = "Reconnecting…"; };
  }

  async function send() {
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    try {
      await start();
      show(await call("POST", "/session/messages", { text }));
    } catch (error) {
      input.value = input.value || text;
      status.textContent = error.message;
    }
  }

  // Ending the chat revokes the token on the server and forgets it here; a new message starts afresh.
  async function end() {
    if (!token) return;
    if (stream) stream.close();
    stream = null;
    await fetch(api + "/session", { method: "DELETE", headers: { authorization: "Bearer " + token } }).catch(() => {});
    store.clear();
    token = null;
    starting = null;
    list.textContent = "";
    seen.clear();
    unread.clear();
    status.textContent = "Chat ended.";
  }

  start().then(() => { document.body.dataset.ready = "true"; })
    .catch((error) => { status.textContent = error.message; });
})();
</script>
</body>
</html>`;
}

/**
 * The page's own headers: its script and style run only with this response's nonce (an
 * injected `<script>` does not), it talks to its own origin only, the browser never
 * sniffs a type, and no address (the event stream's carries the token) leaves in a
 * Referer. Any site may frame it: that is what it is for.
 */
export function widgetPageHeaders(nonce: string): Record<string, string> {
  return {
    "Content-Security-Policy": [
      "default-src 'none'",
      `script-src 'nonce-${nonce}'`,
      `style-src 'nonce-${nonce}'`,
      "connect-src 'self'",
      "img-src 'self' data:",
      "base-uri 'none'",
      "form-action 'none'",
    ].join("; "),
    ...VISITOR_HEADERS,
  };
}

/** On every web chat response, the page's and the visitor API's. */
export const VISITOR_HEADERS = {
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}
