/**
 * The replay page of a recording, served by the service itself: an HTML page that loads rrweb's
 * replayer (from the installed package, served under /v1/recording_assets/) and the recording's
 * events (same signed query), then plays them with play/pause, restart, speed and a seek bar.
 *
 * Every URL in the page is relative, so it works behind a proxy that mounts the API under a
 * prefix. The page's scripts are only the service's own files (CSP `script-src 'self'`); the
 * recorded DOM is rebuilt by rrweb in an iframe sandboxed to `allow-same-origin` (no scripts), and
 * it may load the recorded site's images, styles and fonts (recorded by URL below quality `high`).
 */
import { rrwebAssets } from "./rrweb-assets.ts"

/** The page's Content-Security-Policy beyond `default-src 'none'`, `base-uri 'none'`, `form-action 'none'` (src/http/page-security.ts); framed by the service's own pages only. */
export const REPLAY_PAGE_DIRECTIVES = [
  "script-src 'self'",
  "connect-src 'self'",
  "style-src 'self' 'unsafe-inline' * data: blob:",
  "img-src * data: blob:",
  "font-src * data:",
  "media-src * data: blob:",
  "frame-src 'self' about: blob: data:"
]

const escapeAttribute = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** The page; `eventsQuery` is the signed query string (without `?`) the events are fetched with. */
export const replayHtml = (artifactId: string, runId: string, eventsQuery: string): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Replay of ${escapeAttribute(runId)}</title>
<link rel="stylesheet" href="../../recording_assets/rrweb.css">
<link rel="stylesheet" href="../../recording_assets/replay.css">
</head>
<body data-events="events?${escapeAttribute(eventsQuery)}" data-artifact="${escapeAttribute(artifactId)}">
<header>
<strong>Run ${escapeAttribute(runId)}</strong>
<button id="play" type="button" disabled>Pause</button>
<button id="restart" type="button" disabled>Restart</button>
<label>Speed <select id="speed"><option value="1">1×</option><option value="2">2×</option><option value="4">4×</option><option value="8">8×</option></select></label>
<input id="seek" type="range" min="0" max="0" value="0" step="100" aria-label="Position" disabled>
<span id="time">0:00 / 0:00</span>
<span id="status" role="status">Loading the recording…</span>
</header>
<main id="player"></main>
<script src="../../recording_assets/rrweb.js"></script>
<script src="../../recording_assets/replay.js"></script>
</body>
</html>
`

const replayCss = `
body { margin: 0; font: 14px system-ui, sans-serif; background: #f4f4f5; color: #18181b; }
header { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; padding: 8px 12px; background: #fff; border-bottom: 1px solid #e4e4e7; }
#seek { flex: 1; min-width: 160px; }
#status { color: #52525b; }
#player { padding: 12px; overflow: auto; }
.replayer-wrapper { position: relative; transform-origin: top left; background: #fff; box-shadow: 0 1px 4px rgba(0,0,0,.15); }
.replayer-wrapper iframe { border: 0; display: block; }
`

const replayJs = `"use strict";
(function () {
  var body = document.body;
  var status = document.getElementById("status");
  var play = document.getElementById("play");
  var restart = document.getElementById("restart");
  var speed = document.getElementById("speed");
  var seek = document.getElementById("seek");
  var time = document.getElementById("time");
  var root = document.getElementById("player");
  var clock = function (ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  };
  fetch(body.dataset.events, { credentials: "omit" }).then(function (response) {
    if (!response.ok) {
      return response.json().catch(function () { return {}; }).then(function (error) {
        throw new Error(error.detail || ("HTTP " + response.status));
      });
    }
    return response.json();
  }).then(function (recording) {
    var events = recording.events || [];
    if (events.length < 2) {
      status.textContent = "The recording holds no page.";
      return;
    }
    var replayer = new rrweb.Replayer(events, { root: root, skipInactive: true, showWarning: false, mouseTail: false });
    window.waReplayer = replayer;
    var total = replayer.getMetaData().totalTime;
    var playing = true;
    var fit = function (width) {
      var wrapper = root.querySelector(".replayer-wrapper");
      if (!wrapper || !width) return;
      var scale = Math.min(1, (root.clientWidth - 24) / width);
      wrapper.style.transform = "scale(" + scale + ")";
    };
    replayer.on("resize", function (size) { fit(size.width); });
    window.addEventListener("resize", function () { fit(replayer.iframe.offsetWidth); });
    seek.max = String(total);
    var show = function () {
      var now = Math.min(total, replayer.getCurrentTime());
      seek.value = String(now);
      time.textContent = clock(now) + " / " + clock(total);
    };
    var setPlaying = function (on) {
      playing = on;
      play.textContent = on ? "Pause" : "Play";
    };
    play.addEventListener("click", function () {
      if (playing) { replayer.pause(); setPlaying(false); }
      else { var at = replayer.getCurrentTime(); replayer.play(at >= total ? 0 : at); setPlaying(true); status.textContent = "Playing."; }
    });
    restart.addEventListener("click", function () { replayer.play(0); setPlaying(true); status.textContent = "Playing."; });
    speed.addEventListener("change", function () { replayer.setConfig({ speed: Number(speed.value) }); });
    seek.addEventListener("input", function () {
      var to = Number(seek.value);
      if (playing) replayer.play(to); else replayer.pause(to);
      show();
    });
    replayer.on("finish", function () { setPlaying(false); status.textContent = "Finished."; show(); });
    [play, restart, seek].forEach(function (control) { control.disabled = false; });
    status.textContent = recording.truncated ? "Playing (the recording was cut at its size limit)." : "Playing.";
    body.dataset.state = "playing";
    replayer.play();
    setInterval(show, 250);
  }).catch(function (error) {
    status.textContent = "Could not load the recording: " + error.message;
    body.dataset.state = "error";
  });
})();
`

/** The files under /v1/recording_assets/. */
export const replayAsset = (file: string): { readonly body: string; readonly contentType: string } | undefined => {
  switch (file) {
    case "rrweb.js":
      return { body: rrwebAssets().script, contentType: "text/javascript; charset=utf-8" }
    case "rrweb.css":
      return { body: rrwebAssets().css, contentType: "text/css; charset=utf-8" }
    case "replay.js":
      return { body: replayJs, contentType: "text/javascript; charset=utf-8" }
    case "replay.css":
      return { body: replayCss, contentType: "text/css; charset=utf-8" }
    default:
      return undefined
  }
}

export { replayAssetNames } from "../domain/recording.ts"
