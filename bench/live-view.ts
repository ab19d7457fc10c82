/**
 * Live view of take control: the real service (embedded PostgreSQL, its Chromium), a run held on
 * a local bench page, a take_control, and a WebSocket client on the control page's socket (what
 * the control page itself opens). Figures:
 *
 * - frame latency: the page changes (its key handler repaints a large block and notes
 *   Date.now()) → the first frame after it received by the client; p50 and p95 (goal p50 ≤ 150 ms)
 * - input round trip: a key sent on the socket → the character handled by the agent's page
 *   (the page's Date.now() in its keydown handler); p50 (goal ≤ 100 ms)
 * - frames per second received while the client scrolls a long page with wheel events
 *
 * Page and bench share the machine's clock, so the two timestamps compare directly.
 *
 *   node bench/live-view.ts [iterations=40]
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { startScriptedModel } from "../test/fixtures/model/scripted-model.ts"
import { startService, stopAndClean } from "../test/support/service.ts"

const iterations = Number(process.argv[2] ?? 40)
const quantile = (values: ReadonlyArray<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// The bench page: a block repainted on each key (its time sent to /mark), over a tall striped page.
const marks: Array<{ key: string; at: number }> = []
const page = `<!doctype html><html><head><meta charset="utf-8"><title>Live view bench</title>
<style>body{margin:0;font:20px sans-serif}#block{height:300px;display:flex;align-items:center;justify-content:center;font-size:64px}
.stripe{height:120px;border-bottom:1px solid #888}.stripe:nth-child(odd){background:#dde}</style></head>
<body><div id="block">ready</div><div id="stripes"></div>
<script>
const stripes = document.getElementById("stripes");
for (let i = 0; i < 400; i++) { const d = document.createElement("div"); d.className = "stripe"; d.textContent = "Row " + i; stripes.appendChild(d); }
let n = 0;
document.addEventListener("keydown", (event) => {
  const at = Date.now();
  n += 1;
  const block = document.getElementById("block");
  block.textContent = event.key + " " + n;
  block.style.background = n % 2 ? "#222" : "#fc0";
  block.style.color = n % 2 ? "#fff" : "#000";
  fetch("/mark?key=" + encodeURIComponent(event.key) + "&at=" + at).catch(() => {});
});
</script></body></html>`
const server = createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://bench")
  if (url.pathname === "/mark") {
    marks.push({ key: url.searchParams.get("key") ?? "", at: Number(url.searchParams.get("at")) })
    res.writeHead(204).end()
    return
  }
  res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(page)
})
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
const pageUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`

// The agent opens the page, then holds its next step until the bench is over.
let release: () => void = () => {}
const held = new Promise<void>((resolve) => (release = resolve))
let turns = 0
const model = await startScriptedModel(async () => {
  const turn = turns++
  if (turn === 0) return { tool: "navigate", args: { url: pageUrl } }
  await held
  return { tool: "done", args: { output: "bench over" } }
})
const service = await startService({
  env: { WA_MODEL_BASE_URL: model.baseUrl, WA_MODEL: "scripted", WA_ALLOW_PRIVATE_NETWORKS: "true", WA_STEP_SCREENSHOTS: "false" }
})

try {
  const base = `/v1/projects/${service.projectId}/do_anything`
  const created = await service.request("POST", `${base}/sessions`, { body: { instructions: "bench", keep_alive: false } })
  const sid = created.json.id as string
  const rid = created.json.latest_run_id as string
  while (turns < 2) await pause(50)
  const taken = await service.request("POST", `${base}/sessions/${sid}/runs/${rid}/intervene`, { body: { kind: "take_control", reason: "bench" } })
  if (taken.status !== 200) throw new Error(`take_control answered ${taken.status}: ${taken.text}`)

  const socketUrl = new URL(String(taken.json.standalone_control_url))
  socketUrl.protocol = "ws:"
  socketUrl.pathname += "/ws"
  const socket = new WebSocket(socketUrl)
  socket.binaryType = "arraybuffer"
  const frameTimes: Array<number> = []
  socket.addEventListener("message", (event) => {
    if (typeof event.data !== "string") frameTimes.push(Date.now())
  })
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve())
    socket.addEventListener("error", () => reject(new Error("the control socket did not open")))
  })
  const send = (input: Record<string, unknown>) => socket.send(JSON.stringify({ type: "input", input }))
  while (frameTimes.length === 0) await pause(20)
  await pause(500)

  // Key → page, and page change → frame.
  const inputRoundTrip: Array<number> = []
  const frameLatency: Array<number> = []
  const keys = "abcdefghijklmnopqrstuvwxyz"
  for (let i = 0; i < iterations; i++) {
    const key = keys[i % keys.length]!
    const markCount = marks.length
    const sent = Date.now()
    send({ kind: "key", action: "down", key, code: `Key${key.toUpperCase()}` })
    send({ kind: "key", action: "up", key, code: `Key${key.toUpperCase()}` })
    const deadline = sent + 3000
    while (marks.length === markCount && Date.now() < deadline) await pause(2)
    const mark = marks[markCount]
    if (mark === undefined) continue
    inputRoundTrip.push(mark.at - sent)
    while (!frameTimes.some((t) => t >= mark.at) && Date.now() < deadline) await pause(2)
    const frame = frameTimes.find((t) => t >= mark.at)
    if (frame !== undefined) frameLatency.push(frame - mark.at)
    await pause(150)
  }

  // Scrolling: wheel events every 16 ms for 3 s.
  const scrollMs = 3000
  const scrollStart = Date.now()
  while (Date.now() - scrollStart < scrollMs) {
    send({ kind: "wheel", x: 640, y: 400, delta_x: 0, delta_y: 60 })
    await pause(16)
  }
  const framesWhileScrolling = frameTimes.filter((t) => t >= scrollStart && t <= scrollStart + scrollMs).length

  socket.send(JSON.stringify({ type: "release" }))
  release()

  console.log(JSON.stringify({
    bench: "live-view",
    iterations,
    frame_latency_ms: { p50: quantile(frameLatency, 0.5), p95: quantile(frameLatency, 0.95), samples: frameLatency.length, goal_p50: 150 },
    input_round_trip_ms: { p50: quantile(inputRoundTrip, 0.5), p95: quantile(inputRoundTrip, 0.95), samples: inputRoundTrip.length, goal_p50: 100 },
    frames_per_second_scrolling: Math.round((framesWhileScrolling / (scrollMs / 1000)) * 10) / 10
  }, null, 2))
  socket.close()
} finally {
  release()
  await stopAndClean(service)
  await model.close()
  server.close()
}
