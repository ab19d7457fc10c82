/**
 * The control page a person opens from a take-control URL: the agent's page drawn live on a
 * canvas (JPEG frames over the page's WebSocket, `<this path>/ws` with the same query), the person's mouse, wheel and
 * keyboard sent back, and a release button. Self-contained: no script, style or font from
 * anywhere else (the Content-Security-Policy of the response allows nothing else).
 *
 * WebSocket protocol (JSON text messages unless said otherwise):
 *   server → page: {type:"hello", run_id, reason, idle_seconds}; {type:"viewport", width, height}
 *     (CSS pixels of the agent's page, before the frames it applies to); binary messages are
 *     JPEG frames; {type:"ended", reason} before the server closes the socket.
 *   page → server: {type:"input", input: LiveInput} (src/browser/live-view.ts: mouse, wheel, key,
 *     text); {type:"release"}.
 */
import type { PagePolicy } from "../page-security.ts"

/** The page's inline script and style run by the response's nonce; nothing else inline runs. */
export const controlPagePolicy = (nonce: string): PagePolicy => ({
  directives: [`script-src 'nonce-${nonce}'`, `style-src 'nonce-${nonce}'`, "img-src blob: data:", "connect-src 'self'"]
})

export const controlPageHtml = (options: { readonly runId: string; readonly reason: string | null; readonly nonce: string }) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Take control of run ${escapeHtml(options.runId)}</title>
<style nonce="${options.nonce}">
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, sans-serif; background: #1e1f22; color: #e8e8e8; }
  header { display: flex; gap: 12px; align-items: center; padding: 8px 12px; background: #2b2d31; }
  header .status { flex: 1; }
  #release { font: inherit; padding: 6px 14px; border: 0; border-radius: 4px; background: #3c8d40; color: #fff; cursor: pointer; }
  #release:disabled { background: #555; cursor: default; }
  main { padding: 8px; text-align: center; }
  #screen { max-width: 100%; background: #000; outline: none; cursor: default; }
  #screen:focus { box-shadow: 0 0 0 2px #4a90e2; }
  body[data-state="ended"] #screen { opacity: 0.4; }
</style>
</head>
<body data-state="connecting">
<header>
  <strong>Take control</strong>
  <span class="status" id="status">Connecting to the agent's browser…</span>
  <button id="release" type="button" disabled>Release control to the agent</button>
</header>
<main><canvas id="screen" tabindex="0" width="1280" height="800" data-frames="0"></canvas></main>
<script nonce="${options.nonce}">
(() => {
  "use strict";
  const reason = ${JSON.stringify(options.reason ?? "").replace(/</g, "\\u003c")};
  const canvas = document.getElementById("screen");
  const context = canvas.getContext("2d");
  const status = document.getElementById("status");
  const release = document.getElementById("release");
  const wsUrl = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + location.pathname.replace(/\\/$/, "") + "/ws" + location.search;
  const ws = new WebSocket(wsUrl);
  ws.binaryType = "arraybuffer";
  let viewport = { width: 1280, height: 800 };
  let frames = 0;
  let ended = false;

  const say = (text) => { status.textContent = text; };
  const send = (message) => { if (ws.readyState === WebSocket.OPEN && !ended) ws.send(JSON.stringify(message)); };
  const sendInput = (input) => send({ type: "input", input });

  // Newest frame wins: while one decodes, only the latest waiting frame is kept.
  let drawing = false;
  let waiting = null;
  const draw = (bytes) => {
    if (drawing) { waiting = bytes; return; }
    drawing = true;
    createImageBitmap(new Blob([bytes], { type: "image/jpeg" })).then((bitmap) => {
      if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
        canvas.width = bitmap.width;
        canvas.height = bitmap.height;
      }
      context.drawImage(bitmap, 0, 0);
      bitmap.close();
      frames += 1;
      canvas.dataset.frames = String(frames);
    }).catch(() => {}).finally(() => {
      drawing = false;
      if (waiting !== null) { const next = waiting; waiting = null; draw(next); }
    });
  };

  const end = (why) => {
    if (ended) return;
    ended = true;
    document.body.dataset.state = "ended";
    release.disabled = true;
    say(why);
  };

  ws.onopen = () => {
    document.body.dataset.state = "connected";
    release.disabled = false;
    say("You control the browser; the agent waits. " + (reason ? "Reason: " + reason + ". " : "") + "Click the page to type into it.");
    canvas.focus();
  };
  ws.onmessage = (event) => {
    if (typeof event.data !== "string") { draw(event.data); return; }
    const message = JSON.parse(event.data);
    if (message.type === "viewport") viewport = { width: message.width, height: message.height };
    else if (message.type === "hello" && message.idle_seconds) {
      say(status.textContent + " Control returns to the agent after " + message.idle_seconds + " s without input.");
    } else if (message.type === "ended") end("Control has ended: " + message.reason + ". You can close this page.");
  };
  ws.onclose = () => end(ended ? status.textContent : "The connection closed. Reload the page to reconnect while the URL is valid.");

  release.addEventListener("click", () => { send({ type: "release" }); say("Giving control back to the agent…"); });

  // Canvas coordinates to the agent's page (CSS pixels of its viewport).
  const point = (event) => {
    const box = canvas.getBoundingClientRect();
    return {
      x: Math.round(((event.clientX - box.left) / box.width) * viewport.width),
      y: Math.round(((event.clientY - box.top) / box.height) * viewport.height)
    };
  };
  const modifiers = (event) => (event.altKey ? 1 : 0) | (event.ctrlKey ? 2 : 0) | (event.metaKey ? 4 : 0) | (event.shiftKey ? 8 : 0);
  const buttonName = (button) => ["left", "middle", "right"][button] || "none";

  canvas.addEventListener("mousedown", (event) => {
    canvas.focus();
    event.preventDefault();
    sendInput({ kind: "mouse", action: "down", ...point(event), button: buttonName(event.button), buttons: event.buttons, click_count: Math.min(3, event.detail || 1), modifiers: modifiers(event) });
  });
  canvas.addEventListener("mouseup", (event) => {
    event.preventDefault();
    sendInput({ kind: "mouse", action: "up", ...point(event), button: buttonName(event.button), buttons: event.buttons, click_count: Math.min(3, event.detail || 1), modifiers: modifiers(event) });
  });
  // Moves are sent at most once per animation frame.
  let move = null;
  canvas.addEventListener("mousemove", (event) => {
    const first = move === null;
    move = { kind: "mouse", action: "move", ...point(event), button: "none", buttons: event.buttons, modifiers: modifiers(event) };
    if (first) requestAnimationFrame(() => { if (move !== null) sendInput(move); move = null; });
  });
  canvas.addEventListener("wheel", (event) => {
    event.preventDefault();
    const scale = event.deltaMode === 1 ? 40 : event.deltaMode === 2 ? viewport.height : 1;
    sendInput({ kind: "wheel", ...point(event), delta_x: event.deltaX * scale, delta_y: event.deltaY * scale, modifiers: modifiers(event) });
  }, { passive: false });
  canvas.addEventListener("contextmenu", (event) => event.preventDefault());

  const isPaste = (event) => (event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "v";
  canvas.addEventListener("keydown", (event) => {
    if (isPaste(event)) return; // the paste event below sends the text
    event.preventDefault();
    sendInput({ kind: "key", action: "down", key: event.key, code: event.code, modifiers: modifiers(event) });
  });
  canvas.addEventListener("keyup", (event) => {
    if (isPaste(event)) return;
    event.preventDefault();
    sendInput({ kind: "key", action: "up", key: event.key, code: event.code, modifiers: modifiers(event) });
  });
  document.addEventListener("paste", (event) => {
    const text = event.clipboardData ? event.clipboardData.getData("text/plain") : "";
    if (text) { event.preventDefault(); sendInput({ kind: "text", text }); }
  });
})();
</script>
</body>
</html>
`

/** Text made safe inside HTML text and quoted attribute values. */
export const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[char]!)
