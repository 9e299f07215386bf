/**
 * The embeddable widget: one self-contained page, no build step and no third-party
 * script. It keeps the visitor's token in localStorage, shows the history, streams the
 * replies (EventSource) and reports `delivered` on arrival and `read` when in view.
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
  form { display: flex; gap: 8px; padding: 12px 16px; background: #fff; border-top: 1px solid #e5e7eb; }
  input { flex: 1; padding: 8px 10px; border: 1px solid #d1d5db; border-radius: 8px; font: inherit; }
  button { padding: 8px 14px; border: 0; border-radius: 8px; background: #2563eb; color: #fff; font: inherit; cursor: pointer; }
  #status { font-size: 12px; color: #6b7280; padding: 0 16px 8px; }
</style>
</head>
<body>
<header><span>${escapeHtml(title)}</span><button id="end" type="button" title="End this chat and forget it on this device">End chat</button></header>
<div id="messages" aria-live="polite"></div>
<div id="status"></div>
<form id="composer">
  <input id="text" name="text" autocomplete="off" placeholder="Write a message" maxlength="4096" aria-label="Message">
  <button type="submit">Send</button>
</form>
<script nonce="${nonce}">
(() => {
  const config = ${config};
  const api = location.origin + "/v1/webchat";
  const storageKey = "parley:webchat:" + config.channelId;
  const list = document.getElementById("messages");
  const status = document.getElementById("status");
  const seen = new Set();
  const unread = new Set();
  let token = localStorage.getItem(storageKey);
  let stream = null;

  async function call(method, path, body) {
    const response = await fetch(api + path, {
      method,
      headers: Object.assign({ "content-type": "application/json" }, token ? { authorization: "Bearer " + token } : {}),
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!response.ok) throw new Error((await response.json()).error.message);
    return response.json();
  }

  async function ensureSession() {
    if (token) {
      try { return await call("GET", "/session/messages"); } catch { token = null; }
    }
    const session = await call("POST", "/channels/" + config.channelId + "/sessions", {});
    token = session.token;
    localStorage.setItem(storageKey, token);
    return [];
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
    if (document.visibilityState !== "visible") return;
    for (const id of unread) receipt(id, "read");
    unread.clear();
  }

  function listen() {
    stream = new EventSource(api + "/session/events?token=" + encodeURIComponent(token));
    stream.addEventListener("message", (event) => show(JSON.parse(event.data)));
    stream.onopen = () => { status.textContent = ""; };
    stream.onerror = () => { status.textContent = "Reconnecting…"; };
  }

  // Ending the chat revokes the token on the server and forgets it here; a new message starts afresh.
  document.getElementById("end").addEventListener("click", async () => {
    if (!token) return;
    if (stream) stream.close();
    await fetch(api + "/session", { method: "DELETE", headers: { authorization: "Bearer " + token } }).catch(() => {});
    localStorage.removeItem(storageKey);
    token = null;
    list.textContent = "";
    seen.clear();
    unread.clear();
    status.textContent = "Chat ended.";
  });

  document.addEventListener("visibilitychange", markRead);
  document.getElementById("composer").addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = document.getElementById("text");
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    try {
      if (!token) { await ensureSession(); listen(); status.textContent = ""; }
      show(await call("POST", "/session/messages", { text }));
    }
    catch (error) { status.textContent = error.message; }
  });

  ensureSession().then((history) => { history.forEach(show); listen(); document.body.dataset.ready = "true"; })
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
