/**
 * The chat panel's stylesheet (served inline under the page's nonce). Colours meet WCAG
 * AA contrast (4.5:1 for text, 3:1 for focus rings); logical properties and flex
 * alignment turn the whole layout round for a right-to-left language; the typing dots
 * stand still under `prefers-reduced-motion`; at 480 px and below the panel is the whole
 * screen. System fonts only: nothing is fetched from anywhere.
 */
export const PANEL_STYLE = `
  * { box-sizing: border-box; }
  html, body { height: 100%; }
  body { font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; display: flex; flex-direction: column; height: 100vh; height: 100dvh; background: #f6f7f9; color: #111827; }
  header { padding: 12px 16px; background: #1f2937; color: #fff; display: flex; justify-content: space-between; align-items: center; gap: 8px; }
  header h1 { font-size: 16px; margin: 0; font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  header button { background: transparent; border: 1px solid #9ca3af; color: #fff; padding: 4px 10px; font-size: 13px; flex: none; }
  main { flex: 1; display: flex; flex-direction: column; min-height: 0; }
  #notice { font-size: 13px; padding: 6px 16px; background: #fef3c7; color: #78350f; border-bottom: 1px solid #fcd34d; }
  #notice:empty { display: none; }
  #notice[data-state="offline"] { background: #fee2e2; color: #7f1d1d; border-color: #fca5a5; }
  #messages { flex: 1; overflow-y: auto; padding: 12px 16px; display: flex; flex-direction: column; gap: 10px; }
  .row { display: flex; flex-direction: column; max-width: 80%; gap: 2px; }
  .row.inbound { align-self: flex-end; align-items: flex-end; }
  .row.outbound, .row.greeting { align-self: flex-start; align-items: flex-start; }
  .sender { font-size: 12px; font-weight: 600; color: #374151; }
  .message { padding: 8px 12px; border-radius: 12px; white-space: pre-wrap; overflow-wrap: anywhere; text-align: start; }
  .message.inbound { background: #1d4ed8; color: #fff; }
  .message.inbound a { color: #fff; }
  .message.outbound, .message.greeting { background: #fff; border: 1px solid #d1d5db; }
  .message a { color: #1d4ed8; text-decoration: underline; }
  .meta { font-size: 12px; color: #4b5563; display: flex; gap: 6px; }
  .mark[data-state="read"] { color: #1e40af; }
  #typing { align-self: flex-start; margin: 0 16px 8px; padding: 8px 12px; background: #fff; border: 1px solid #d1d5db; border-radius: 12px; display: flex; gap: 4px; align-items: center; }
  #typing[hidden] { display: none; }
  .dot { width: 7px; height: 7px; border-radius: 50%; background: #4b5563; animation: blink 1.2s infinite ease-in-out; }
  .dot:nth-child(3) { animation-delay: 0.2s; }
  .dot:nth-child(4) { animation-delay: 0.4s; }
  @keyframes blink { 0%, 80%, 100% { opacity: 0.3; } 40% { opacity: 1; } }
  .sr { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
  #status { font-size: 13px; color: #4b5563; padding: 0 16px 8px; }
  #status:empty { display: none; }
  #prechat { padding: 12px 16px; background: #fff; border-top: 1px solid #d1d5db; display: flex; flex-direction: column; gap: 6px; }
  #prechat[hidden], #composer[hidden] { display: none; }
  #prechat p { margin: 0 0 4px; }
  #prechat label { font-size: 14px; font-weight: 600; }
  #prechat .hint { font-weight: 400; color: #4b5563; }
  #prechat-error { color: #b91c1c; font-size: 14px; margin: 0; }
  #prechat-error:empty { display: none; }
  #composer { display: flex; gap: 8px; padding: 12px 16px; background: #fff; border-top: 1px solid #d1d5db; }
  input { flex: 1; padding: 8px 10px; border: 1px solid #6b7280; border-radius: 8px; font: inherit; color: inherit; background: #fff; min-width: 0; }
  input::placeholder { color: #6b7280; }
  input[aria-invalid="true"] { border-color: #b91c1c; }
  button { padding: 8px 14px; border: 0; border-radius: 8px; background: #1d4ed8; color: #fff; font: inherit; cursor: pointer; }
  button:hover { background: #1e40af; }
  header button:hover { background: #374151; }
  :focus-visible { outline: 3px solid #1d4ed8; outline-offset: 2px; }
  header :focus-visible { outline-color: #fff; }
  .message.inbound a:focus-visible { outline-color: #fff; }
  @media (prefers-reduced-motion: reduce) {
    .dot { animation: none; opacity: 0.7; }
    * { scroll-behavior: auto !important; transition: none !important; }
  }
  @media (max-width: 480px) {
    body { font-size: 16px; }
    header { padding: 10px 12px; padding-top: max(10px, env(safe-area-inset-top)); }
    #messages { padding: 10px 12px; }
    .row { max-width: 88%; }
    #composer, #prechat { padding: 10px 12px; padding-bottom: max(10px, env(safe-area-inset-bottom)); }
    input, button { font-size: 16px; min-height: 44px; }
  }
`;
