import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import type { RequestHandler } from "express";
import { VISITOR_HEADERS } from "./widget-page.js";

/**
 * `widget.js`, the one-line embed: `<script src="https://parley.example.com/webchat/widget.js"
 * data-channel="chn_..." async></script>`. It runs on the business's page (no framework, no
 * third-party script or font) and adds a launcher bubble in a closed shadow root, which opens
 * the panel: an iframe of `/webchat/{channel_id}?parent={this page's origin}`.
 *
 * It keeps the visitor's token in the host site's own storage (first-party there, so it
 * survives reloads where the browser refuses the iframe its storage) and hands it to the
 * panel with `postMessage`. Parley's origin is the script's own (its `src`): messages go only
 * there, and only messages from there, from the panel's own window, are heard. The panel's
 * side of this protocol is the host bridge (widget-bridge.ts).
 *
 * Data attributes: `data-channel` (required), `data-position` (`right` or `left`),
 * `data-color` (`#rgb` or `#rrggbb`; anything else is ignored), `data-label` (the bubble's
 * accessible name, "Chat with us" by default). Without `data-color` or `data-position` the
 * channel's `color` / `position` settings apply (read once before the bubble is drawn, from
 * `GET /v1/webchat/channels/{id}/launcher`), then Parley's default (blue, on the right).
 */
export const WIDGET_SCRIPT = String.raw`/* Parley web chat launcher */
(() => {
  const script = document.currentScript || document.querySelector('script[src*="/webchat/widget.js"][data-channel]');
  if (!script || !script.src) return;
  const data = script.dataset;
  const channel = data.channel || "";
  if (!/^[A-Za-z0-9_]{1,64}$/.test(channel)) { console.warn("Parley web chat: data-channel is missing or invalid."); return; }
  if (window["parley:webchat:" + channel]) return;
  window["parley:webchat:" + channel] = true;
  const parley = new URL(script.src, location.href).origin;
  const COLOR = /^#([0-9a-f]{3}){1,2}$/i;
  // The page's data attributes first, then the channel's settings (read before the bubble is drawn), then ours.
  let color = COLOR.test(data.color || "") ? data.color : null;
  let side = data.position === "left" || data.position === "right" ? data.position : null;
  const label = data.label || "Chat with us";
  const TOKEN = /^wct_[0-9A-Za-z]{40}$/;
  const key = "parley:webchat:" + channel;

  // The token lives in this site's storage: first-party here, whatever the browser does to iframes.
  let storage = null;
  for (const name of ["localStorage", "sessionStorage"]) {
    try { const s = window[name]; s.setItem(key + ":probe", "1"); s.removeItem(key + ":probe"); storage = s; break; } catch {}
  }
  // The token, and whether its conversation has a message yet (only then is the panel loaded with the page).
  const memory = {};
  const read = (name) => { try { return memory[name] || (storage && storage.getItem(name)) || null; } catch { return memory[name] || null; } };
  const write = (name, value) => {
    memory[name] = value;
    try { if (storage) { if (value) storage.setItem(name, value); else storage.removeItem(name); } } catch {}
  };
  const keep = {
    get: () => read(key),
    set(value) { write(key, value); write(key + ":active", null); },
    clear() { write(key, null); write(key + ":active", null); },
    active: () => read(key) !== null && read(key + ":active") === "1",
    activate() { if (read(key)) write(key + ":active", "1"); },
  };

  const host = document.createElement("parley-webchat");
  const root = host.attachShadow({ mode: "closed" });
  const css = () => ":host{all:initial}" +
    ".bubble{position:fixed;bottom:20px;" + side + ":20px;z-index:2147483001;width:56px;height:56px;border-radius:50%;border:0;padding:0;cursor:pointer;" +
    "background:" + color + ";color:#fff;box-shadow:0 4px 12px rgba(0,0,0,.25);display:flex;align-items:center;justify-content:center;transition:transform .15s}" +
    ".bubble:hover{transform:scale(1.06)}.bubble:focus-visible{outline:3px solid #111;outline-offset:3px}" +
    ".badge{position:absolute;top:-4px;" + (side === "left" ? "right" : "left") + ":-4px;min-width:20px;height:20px;padding:0 5px;box-sizing:border-box;border-radius:10px;" +
    "background:#b91c1c;color:#fff;font:700 12px/20px system-ui,sans-serif;text-align:center}" +
    ".panel{position:fixed;bottom:88px;" + side + ":20px;z-index:2147483000;width:370px;height:min(600px,calc(100vh - 108px));" +
    "border-radius:12px;overflow:hidden;box-shadow:0 8px 28px rgba(0,0,0,.3);background:#fff}" +
    "iframe{border:0;width:100%;height:100%;display:block}[hidden]{display:none!important}" +
    "@media (max-width:480px){.panel{inset:0;width:auto;height:auto;border-radius:0}.open .bubble{display:none}}" +
    "@media (prefers-reduced-motion:reduce){.bubble{transition:none}.bubble:hover{transform:none}}";
  const style = () => {
    try { const sheet = new CSSStyleSheet(); sheet.replaceSync(css()); root.adoptedStyleSheets = [sheet]; }
    catch { const element = document.createElement("style"); element.textContent = css(); root.prepend(element); }
  };

  const box = document.createElement("div");
  const bubble = document.createElement("button");
  bubble.type = "button";
  bubble.className = "bubble";
  bubble.setAttribute("aria-expanded", "false");
  // Built node by node: no innerHTML, so a host page enforcing Trusted Types is no obstacle.
  const svg = "http://www.w3.org/2000/svg";
  const icon = document.createElementNS(svg, "svg");
  const path = document.createElementNS(svg, "path");
  for (const [name, value] of [["width", "28"], ["height", "28"], ["viewBox", "0 0 24 24"], ["aria-hidden", "true"], ["fill", "currentColor"]]) icon.setAttribute(name, value);
  path.setAttribute("d", "M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z");
  icon.appendChild(path);
  bubble.appendChild(icon);
  const badge = document.createElement("span");
  badge.className = "badge";
  badge.hidden = true;
  bubble.appendChild(badge);
  const panel = document.createElement("div");
  panel.className = "panel";
  panel.hidden = true;
  box.append(panel, bubble);
  root.appendChild(box);

  let frame = null;
  let open = false;
  let unread = 0;
  const mark = (name) => { try { performance.mark("parley-webchat:" + name); } catch {} };

  function post(type, extra) {
    if (frame && frame.contentWindow) frame.contentWindow.postMessage(Object.assign({ parley: 1, type }, extra), parley);
  }

  function describe() {
    bubble.setAttribute("aria-label", open ? "Close chat" : unread ? label + " (" + unread + " unread)" : label);
    badge.textContent = unread > 9 ? "9+" : String(unread);
    badge.hidden = open || !unread;
    host.dataset.unread = String(open ? 0 : unread);
    host.dataset.open = String(open);
  }

  // The panel: the web chat page itself, told which origin its parent is (it checks it).
  function createFrame() {
    if (frame) return;
    mark("frame");
    frame = document.createElement("iframe");
    frame.title = label;
    frame.referrerPolicy = "no-referrer";
    frame.src = parley + "/webchat/" + encodeURIComponent(channel) + "?parent=" + encodeURIComponent(location.origin);
    panel.appendChild(frame);
  }

  function toggle(next) {
    if (next === open) return;
    open = next;
    if (open) { createFrame(); unread = 0; }
    panel.hidden = !open;
    box.className = open ? "open" : "";
    bubble.setAttribute("aria-expanded", String(open));
    describe();
    post(open ? "open" : "close");
    if (open) frame.focus(); else bubble.focus();
  }

  bubble.addEventListener("click", () => toggle(!open));
  root.addEventListener("keydown", (event) => { if (event.key === "Escape" && open) toggle(false); });

  // The protocol (the panel's half is in the page): only Parley's origin, only our own frame.
  window.addEventListener("message", (event) => {
    if (event.origin !== parley || !frame || event.source !== frame.contentWindow) return;
    const message = event.data;
    if (!message || message.parley !== 1) return;
    if (message.type === "ready") {
      mark("ready");
      try { performance.measure("parley-webchat:interactive", "parley-webchat:frame", "parley-webchat:ready"); } catch {}
      post("token", { token: keep.get(), open });
    } else if (message.type === "token" && TOKEN.test(message.token)) {
      keep.set(message.token);
    } else if (message.type === "active") {
      keep.activate();
    } else if (message.type === "ended") {
      keep.clear();
    } else if (message.type === "unread" && Number.isInteger(message.count) && message.count >= 0) {
      if (!open) { unread = message.count; describe(); }
    } else if (message.type === "close") {
      toggle(false);
    }
  });

  describe();
  const mount = () => {
    style();
    host.dataset.position = side;
    document.body.appendChild(host);
    // A conversation under way: load the panel at once (hidden) so a reply raises the badge.
    // A session without a message yet waits for the visitor to open the panel, as a first visit does.
    if (keep.active()) createFrame();
  };
  const whenReady = () => { if (document.body) mount(); else document.addEventListener("DOMContentLoaded", mount); };
  const fallback = (look) => {
    color = color || (look && COLOR.test(look.color || "") ? look.color : "#2563eb");
    side = side || (look && look.position === "left" ? "left" : "right");
    whenReady();
  };
  if (color && side) fallback(null);
  else {
    // At most 2 s: an unreachable server still gets Parley's default bubble.
    let settled = false;
    const settle = (look) => { if (!settled) { settled = true; clearTimeout(timer); fallback(look); } };
    const timer = setTimeout(() => settle(null), 2000);
    fetch(parley + "/v1/webchat/channels/" + encodeURIComponent(channel) + "/launcher", { credentials: "omit" })
      .then((response) => (response.ok ? response.json() : null))
      .then(settle, () => settle(null));
  }
})();
`;

const identity = Buffer.from(WIDGET_SCRIPT, "utf8");
const gzipped = gzipSync(identity, { level: 9 });
const hash = createHash("sha256").update(identity).digest("base64url").slice(0, 27);
/** A strong validator per representation: the gzipped bytes are not the plain ones. */
const ETAG = `"${hash}"`;
const ETAG_GZIP = `"${hash}-gz"`;

/**
 * `GET /webchat/widget.js`: the same bytes for everyone, so any cache may keep them (10
 * minutes, then revalidated by ETag: a new release reaches every site within that time).
 * Any page may load it: `Cross-Origin-Resource-Policy: cross-origin` (for sites with COEP)
 * and CORS `*` (for `<script crossorigin>`); no cookie is involved.
 */
export const widgetScriptRoute: RequestHandler = (req, res) => {
  const gzip = /\bgzip\b/.test(req.get("accept-encoding") ?? "");
  const etag = gzip ? ETAG_GZIP : ETAG;
  res.set({
    ...VISITOR_HEADERS,
    "Content-Type": "text/javascript; charset=utf-8",
    "Cache-Control": "public, max-age=600",
    ETag: etag,
    Vary: "Accept-Encoding",
    "Cross-Origin-Resource-Policy": "cross-origin",
    "Access-Control-Allow-Origin": "*",
  });
  const candidates = (req.get("if-none-match") ?? "").split(",").map((tag) => tag.trim().replace(/^W\//, ""));
  if (candidates.includes(etag) || candidates.includes("*")) {
    res.status(304).end();
    return;
  }
  if (gzip) res.set("Content-Encoding", "gzip");
  res.send(gzip ? gzipped : identity);
};
