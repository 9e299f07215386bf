import { type WebchatSettings, webchatSettingsOf } from "@parley/channels";
import { type PanelLocale, panelLocale } from "./panel-strings.js";
import { PANEL_STYLE } from "./panel-style.js";
import { HOST_BRIDGE_SCRIPT } from "./widget-bridge.js";

/** What the panel shows besides the conversation: the channel's settings and the visitor's language. */
export interface PanelOptions {
  settings: WebchatSettings;
  locale: PanelLocale;
}

/**
 * The embeddable widget: one self-contained page, no build step and no third-party
 * script. It keeps the visitor's token in localStorage (or sessionStorage) where the
 * browser allows it and in memory where it does not (a third-party frame under blocked
 * third-party storage), shows the history, streams the replies and the typing dots
 * (EventSource) and reports `delivered` on arrival and `read` when in view. There is no
 * `<form>`: nothing the browser could ever submit natively, so a message's text never
 * lands in a URL, script or no script. Text is only ever set with `textContent` and
 * links are built element by element (http, https and mailto only): no HTML from a
 * message is ever parsed.
 */
export function widgetPage(
  channelId: string,
  title: string,
  nonce: string,
  panel: PanelOptions = { settings: webchatSettingsOf({}), locale: panelLocale(undefined, undefined) },
): string {
  const { settings, locale } = panel;
  const t = locale.strings;
  const config = JSON.stringify({
    channelId,
    title,
    lang: locale.lang,
    strings: t,
    prechat: { name: settings.prechat_name, email: settings.prechat_email },
  }).replace(/</g, "\\u003c");
  const field = (id: string, label: string, mode: string, type: string, autocomplete: string, max: number) =>
    mode === "off"
      ? ""
      : `<label for="prechat-${id}">${escapeHtml(label)}${mode === "optional" ? ` <span class="hint">${escapeHtml(t.optional)}</span>` : ""}</label>
  <input id="prechat-${id}" type="${type}" autocomplete="${autocomplete}" maxlength="${max}" dir="auto"${mode === "required" ? ' aria-required="true"' : ""} aria-describedby="prechat-error">`;
  const greeting = settings.greeting
    ? `<div class="row greeting"><div class="message greeting" dir="auto">${escapeHtml(settings.greeting)}</div></div>`
    : "";
  return `<!doctype html>
<html lang="${locale.lang}" dir="${locale.dir}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
<style nonce="${nonce}">${PANEL_STYLE}</style>
</head>
<body>
<header><h1 dir="auto">${escapeHtml(title)}</h1><button id="end" type="button" title="${escapeHtml(t.endTitle)}">${escapeHtml(t.end)}</button></header>
<main>
<div id="notice" role="status" aria-live="polite"></div>
<div id="messages" role="log" aria-live="polite" aria-label="${escapeHtml(t.messages)}" tabindex="0">${greeting}</div>
<div id="typing" role="status" hidden><span class="sr" id="typing-text"></span><span class="dot" aria-hidden="true"></span><span class="dot" aria-hidden="true"></span><span class="dot" aria-hidden="true"></span></div>
<div id="status" role="status" aria-live="polite"></div>
<div id="prechat" role="form" aria-label="${escapeHtml(t.details)}" hidden>
  <p>${escapeHtml(t.prechatIntro)}</p>
  ${field("name", t.name, settings.prechat_name, "text", "name", 160)}
  ${field("email", t.email, settings.prechat_email, "email", "email", 254)}
  <p id="prechat-error" role="alert"></p>
  <button id="prechat-start" type="button">${escapeHtml(t.start)}</button>
</div>
<div id="composer" role="form" aria-label="${escapeHtml(t.composer)}">
  <input id="text" type="text" autocomplete="off" placeholder="${escapeHtml(t.placeholder)}" maxlength="4096" aria-label="${escapeHtml(t.messageLabel)}" dir="auto">
  <button id="send" type="button">${escapeHtml(t.send)}</button>
</div>
</main>
<script nonce="${nonce}">
(() => {
  const config = ${config};
  const api = location.origin + "/v1/webchat";
  const storageKey = "parley:webchat:" + config.channelId;
  const t = config.strings;
  const list = document.getElementById("messages");
  const status = document.getElementById("status");
  const notice = document.getElementById("notice");
  const typingBox = document.getElementById("typing");
  const input = document.getElementById("text");
  const composer = document.getElementById("composer");
  const prechat = document.getElementById("prechat");
  const seen = new Set();
  const unread = new Set();
  const mine = new Map();
  let token = null;
  let stream = null;
  let starting = null;
  let lastAnswer = 0;
  let retry = null;
  let delay = 1000;

  // The handlers come first: nothing below can leave the visitor with a dead page.
  document.getElementById("send").addEventListener("click", () => send());
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.isComposing && !event.shiftKey) { event.preventDefault(); send(); }
  });
  document.getElementById("end").addEventListener("click", () => end());
  document.addEventListener("visibilitychange", markRead);
  document.getElementById("prechat-start").addEventListener("click", () => submitPrechat());
  prechat.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.isComposing && event.target.tagName === "INPUT") { event.preventDefault(); submitPrechat(); }
  });
  // Escape leaves the panel: focus goes (the host bridge below asks the launcher to close it).
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || event.isComposing) return;
    if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
  });
  window.addEventListener("offline", () => connection("offline"));
  window.addEventListener("online", () => reconnect());

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

  function say(template, values) {
    return template.replace(/\\{(\\w+)\\}/g, (all, key) => (values && key in values ? String(values[key]) : all));
  }

  async function call(method, path, body) {
    const response = await fetch(api + path, {
      method,
      headers: Object.assign({ "content-type": "application/json" }, token ? { authorization: "Bearer " + token } : {}),
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!response.ok) {
      const failure = await response.json().catch(() => null);
      const error = new Error(say(t.error, { status: response.status }));
      error.status = response.status;
      error.param = failure && failure.error ? failure.error.param : undefined;
      throw error;
    }
    return response.status === 204 ? null : response.json();
  }

  async function ensureSession(visitor) {
    if (token) {
      try { return await call("GET", "/session/messages"); } catch (error) { if (!error.status) throw error; token = null; store.clear(); }
    }
    // The kept session is gone (expired, ended elsewhere): a new one starts with the pre-chat form.
    if (!visitor && asksPrechat) throw Object.assign(new Error(t.prechatIntro), { prechat: true });
    const session = await call("POST", "/channels/" + config.channelId + "/sessions", visitor || {});
    token = session.token;
    store.set(token);
    return [];
  }

  // One session at a time, however many messages the visitor sends while it starts.
  function start(visitor) {
    if (!starting) {
      // host bridge: under widget.js, the token the host keeps first.
      starting = bridge.ready.then(() => { token = token || store.get(); return ensureSession(visitor); }).then((history) => {
        history.forEach(show);
        if (stream) stream.close();
        listen();
        status.textContent = "";
      });
      starting.catch(() => { starting = null; });
    }
    return starting;
  }

  // The pre-chat form: asked before a session starts, when the channel wants it.
  const asksPrechat = config.prechat.name !== "off" || config.prechat.email !== "off";

  function askPrechat() {
    composer.hidden = true;
    prechat.hidden = false;
  }

  function submitPrechat() {
    const error = document.getElementById("prechat-error");
    const fields = [["name", config.prechat.name], ["email", config.prechat.email]];
    const visitor = {};
    let problem = null;
    for (const [name, mode] of fields) {
      const field = document.getElementById("prechat-" + name);
      if (!field) continue;
      const value = field.value.trim();
      let fault = null;
      if (!value && mode === "required") fault = name === "name" ? t.nameRequired : t.emailRequired;
      else if (value && name === "email" && (!field.checkValidity() || !/^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$/.test(value))) fault = t.emailInvalid;
      field.setAttribute("aria-invalid", fault ? "true" : "false");
      if (fault && !problem) problem = { field, fault };
      if (value) visitor[name] = value;
    }
    if (problem) {
      error.textContent = problem.fault;
      problem.field.focus();
      return;
    }
    error.textContent = "";
    start(visitor).then(() => {
      prechat.hidden = true;
      composer.hidden = false;
      input.focus();
    }).catch((failure) => {
      if (failure.param === "email") {
        error.textContent = t.emailInvalid;
        document.getElementById("prechat-email").setAttribute("aria-invalid", "true");
      } else error.textContent = failure.status ? failure.message : t.notSent;
    });
  }

  function show(message) {
    if (seen.has(message.id)) return;
    seen.add(message.id);
    const row = document.createElement("div");
    row.className = "row " + message.direction;
    const sender = document.createElement("div");
    sender.className = message.direction === "inbound" ? "sender sr" : "sender";
    sender.dir = "auto";
    sender.textContent = message.direction === "inbound" ? t.you : message.agent_name || config.title;
    const item = document.createElement("div");
    item.className = "message " + message.direction;
    item.dataset.id = message.id;
    item.dir = "auto";
    item.appendChild(linkify(message.text || ""));
    const meta = document.createElement("div");
    meta.className = "meta";
    meta.appendChild(timeOf(message.created_at));
    row.append(sender, item, meta);
    list.appendChild(row);
    list.scrollTop = list.scrollHeight;
    const at = Date.parse(message.created_at);
    if (message.direction === "inbound") {
      const mark = document.createElement("span");
      mark.className = "mark";
      meta.appendChild(mark);
      mine.set(mark, at);
      setMark(mark, at <= lastAnswer ? "read" : "delivered");
    }
    if (message.direction === "outbound") {
      answered(at);
      hideTyping();
      if (message.status !== "read") {
        if (message.status !== "delivered") receipt(message.id, "delivered");
        unread.add(message.id);
        markRead();
      }
    }
  }

  // The visitor's own messages: delivered once stored, read once the business answered after them.
  function setMark(mark, state) {
    mark.dataset.state = state;
    mark.textContent = state === "read" ? "✓✓ " + t.read : "✓ " + t.delivered;
  }

  function answered(at) {
    lastAnswer = Math.max(lastAnswer, at);
    for (const [mark, sent] of mine) if (sent <= lastAnswer) { setMark(mark, "read"); mine.delete(mark); }
  }

  function timeOf(iso) {
    const date = new Date(iso);
    const time = document.createElement("time");
    time.dateTime = iso;
    const today = new Date().toDateString() === date.toDateString();
    const options = today ? { hour: "numeric", minute: "2-digit" } : { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" };
    try { time.textContent = new Intl.DateTimeFormat(config.lang, options).format(date); } catch { time.textContent = date.toLocaleString(); }
    return time;
  }

  // Links made clickable without parsing any HTML: text nodes and <a> elements only, and only
  // http, https and mailto addresses; each opens in a new tab that cannot reach this page.
  function linkify(text) {
    const fragment = document.createDocumentFragment();
    const pattern = /\\b(?:https?:\\/\\/|mailto:)[^\\s<>"']+/gi;
    let last = 0;
    for (const match of text.matchAll(pattern)) {
      const address = match[0].replace(/[.,;:!?)\\]}]+$/, "");
      let url = null;
      try { url = new URL(address); } catch {}
      if (!url || !["http:", "https:", "mailto:"].includes(url.protocol)) continue;
      fragment.append(document.createTextNode(text.slice(last, match.index)));
      const link = document.createElement("a");
      link.href = url.href;
      link.textContent = address;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      fragment.append(link);
      last = match.index + address.length;
    }
    fragment.append(document.createTextNode(text.slice(last)));
    return fragment;
  }

  function showTyping(event) {
    if (!event.typing) return hideTyping();
    answered(Date.now());
    document.getElementById("typing-text").textContent = event.agent_name ? say(t.typing, { name: event.agent_name }) : t.typingAnyone;
    typingBox.hidden = false;
    list.scrollTop = list.scrollHeight;
  }

  function hideTyping() {
    typingBox.hidden = true;
    document.getElementById("typing-text").textContent = "";
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

  // "ok", "reconnecting" (the stream dropped, the server answers) or "offline" (it does not).
  function connection(state) {
    document.body.dataset.connection = state;
    notice.dataset.state = state;
    const text = state === "ok" ? "" : state === "offline" ? t.offline : t.reconnecting;
    if (notice.textContent !== text) notice.textContent = text;
  }

  // Is the server there at all? Decides between "reconnecting" and "offline".
  async function probe() {
    if (!navigator.onLine) return connection("offline");
    try {
      await fetch(location.origin + "/healthz", { cache: "no-store" });
      // The server answers: an open stream (the drop was this device's) is back to normal.
      connection(stream && stream.readyState === EventSource.OPEN ? "ok" : "reconnecting");
    } catch {
      connection("offline");
    }
  }

  // The browser's EventSource retries a dropped stream by itself; one it gave up on (closed)
  // is reopened here, later and later (up to 30 s) while it keeps failing.
  function later() {
    if (!retry) retry = setTimeout(reconnect, delay);
    delay = Math.min(delay * 2, 30000);
  }

  function reconnect() {
    clearTimeout(retry);
    retry = null;
    if (!token) return;
    probe();
    if (stream && stream.readyState !== EventSource.CLOSED) return;
    starting = null;
    start().catch((error) => { if (error.prechat) askPrechat(); else { probe(); later(); } });
  }

  function listen() {
    stream = new EventSource(api + "/session/events?token=" + encodeURIComponent(token));
    stream.addEventListener("message", (event) => show(JSON.parse(event.data)));
    stream.addEventListener("typing", (event) => showTyping(JSON.parse(event.data)));
    stream.onopen = () => { delay = 1000; connection("ok"); };
    stream.onerror = (event) => {
      hideTyping();
      if (document.body.dataset.connection !== "offline") connection("reconnecting");
      probe();
      if (event.target.readyState === EventSource.CLOSED) later();
    };
  }

  async function send() {
    const text = input.value.trim();
    if (!text) return;
    if (!token && !starting && asksPrechat) return askPrechat();
    input.value = "";
    try {
      await start();
      show(await call("POST", "/session/messages", { text }));
    } catch (error) {
      input.value = input.value || text;
      if (error.prechat) askPrechat();
      else if (!error.status) { status.textContent = t.notSent; probe(); } else status.textContent = error.message;
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
    for (const row of [...list.querySelectorAll(".row:not(.greeting)")]) row.remove();
    seen.clear();
    unread.clear();
    mine.clear();
    hideTyping();
    connection("ok");
    status.textContent = t.ended;
    if (asksPrechat) askPrechat();
  }

  if (!token && asksPrechat) {
    askPrechat();
    document.body.dataset.ready = "true";
  } else {
    start().then(() => { document.body.dataset.ready = "true"; })
      .catch((error) => {
        if (error.prechat) { askPrechat(); document.body.dataset.ready = "true"; return; }
        status.textContent = error.status ? error.message : t.notSent;
        probe();
      });
  }
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
