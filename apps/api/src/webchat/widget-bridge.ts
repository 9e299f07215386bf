/**
 * The page's half of widget.js's protocol (the host bridge), placed inside the page's script
 * (widget-page.ts) where it can see `config`, `input` and `markRead`.
 *
 * Only when the page is framed and its `?parent=` is an exact http(s) origin does it speak:
 * it posts to `window.parent` with that origin as the target (the browser drops the message
 * if the parent is anyone else) and hears only messages whose `event.origin` is that origin
 * and whose source is its parent. It then keeps no token of its own: the host keeps it (the
 * host site's storage is first-party there) and gives it once, in answer to `ready`; the page
 * reports a new token (`token`), an ended chat (`ended`), replies not yet seen while the
 * panel is closed (`unread`), that the conversation has a message (`active`: the host then
 * loads the panel with each page) and the visitor's wish to close it (`close`: Escape, or
 * the × the bridge adds to the header, the way back on a phone). It never
 * reads its own storage in this mode, so a token kept by the frame for another site can
 * never be handed to this parent.
 *
 * Messages are `{ parley: 1, type, ... }`. Host to page: `token` (`token`: a `wct_` token or
 * null, `open`), `open`, `close`. Page to host: `ready`, `token`, `ended`, `active`, `unread`
 * (`count`), `close`.
 *
 * Without a valid `parent` (the plain iframe embed, or the page opened on its own) `bridge`
 * changes nothing: `ready` resolves at once, the page is always shown, and nothing is posted.
 */
export const HOST_BRIDGE_SCRIPT = String.raw`
  const bridge = (() => {
    let parentOrigin = null;
    try {
      const declared = new URLSearchParams(location.search).get("parent");
      const url = declared ? new URL(declared) : null;
      if (url && url.origin === declared && /^https?:$/.test(url.protocol) && window.parent !== window) parentOrigin = declared;
    } catch {}
    const tell = (type, extra) => {
      if (parentOrigin) window.parent.postMessage(Object.assign({ parley: 1, type }, extra), parentOrigin);
    };
    if (!parentOrigin) {
      return { ready: Promise.resolve(), shown: () => true, unread() {}, keep: (own) => own };
    }
    let shown = false;
    let memory = null;
    let give = null;
    // The host answers 'ready' at once; if it never does (not widget.js), go on without a token.
    const ready = new Promise((resolve) => {
      give = () => { give = null; resolve(); };
      setTimeout(() => { if (give) give(); }, 3000);
    });
    window.addEventListener("message", (event) => {
      if (event.origin !== parentOrigin || event.source !== window.parent) return;
      const message = event.data;
      if (!message || message.parley !== 1) return;
      if (message.type === "token" && give) {
        if (typeof message.token === "string" && /^wct_[0-9A-Za-z]{40}$/.test(message.token)) memory = message.token;
        shown = message.open === true;
        if (shown) input.focus();
        give();
      } else if (message.type === "open") {
        shown = true;
        markRead();
        input.focus();
      } else if (message.type === "close") {
        shown = false;
      }
    });
    document.addEventListener("keydown", (event) => { if (event.key === "Escape") tell("close"); });
    // A way back to the host page where there is no Escape key (a phone, where the panel fills the screen).
    const header = document.querySelector("header");
    if (header) {
      const close = document.createElement("button");
      close.type = "button";
      close.id = "close";
      close.textContent = "\u00d7";
      close.setAttribute("aria-label", "Close the chat window");
      close.addEventListener("click", () => tell("close"));
      header.appendChild(close);
    }
    // The conversation has a message (history or new, either side): from now on the host loads the panel with its pages.
    let active = false;
    const list = document.getElementById("messages");
    if (list) {
      new MutationObserver(() => {
        if (!active && memory && list.querySelector("[data-id]")) { active = true; tell("active"); }
      }).observe(list, { childList: true, subtree: true });
    }
    tell("ready");
    return {
      ready,
      shown: () => shown,
      unread: (count) => tell("unread", { count }),
      // The host's storage, through the parent: this frame's own is never read here.
      keep: () => ({
        get: () => memory,
        set(value) { memory = value; active = false; tell("token", { token: value }); },
        clear() { memory = null; active = false; tell("ended"); },
      }),
    };
  })();
`;
