/**
 * cache_script: a 10-step task (navigate, seven fields typed, submit, done) run once by a model
 * that answers in `modelMs` (default 1000 ms), then replayed from its script `replays` times.
 * Prints the model-driven run's time, the replays' median, the ratio (target >= 10x), the model
 * requests and tokens of the replays (target 0) and what each run cost.
 *
 *   npx node bench/cache-replay.ts [modelMs=1000] [replays=5]
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { lastUserText, refOfElement as refFor, startScriptedModel } from "../test/fixtures/model/scripted-model.ts"
import { readSse } from "../test/support/sse.ts"
import { TERMINAL, waitForRunStatus } from "../test/support/runs.ts"
import { startService, stopAndClean } from "../test/support/service.ts"

const modelMs = Number(process.argv[2] ?? 1000)
const replays = Number(process.argv[3] ?? 5)
const FIELDS = ["First name", "Last name", "Street", "City", "Postcode", "Country", "Phone"]

const site = createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://x")
  res.setHeader("content-type", "text/html; charset=utf-8")
  if (url.pathname === "/address") {
    res.end(`<!doctype html><title>Address</title><h1>Delivery address</h1><form action="/address/saved">` +
      FIELDS.map((field, i) => `<label>${field} <input name="f${i}"></label>`).join("") + `<button>Save address</button></form>`)
  } else {
    res.end(`<!doctype html><title>Saved</title><h1>Address saved</h1><p>Saved for ${url.searchParams.get("f0")} ${url.searchParams.get("f1")}</p>`)
  }
})
await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve))
const siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`

const model = await startScriptedModel(async (request) => {
  await new Promise((resolve) => setTimeout(resolve, modelMs))
  const text = lastUserText(request)
  if (text.includes("Address saved")) return { tool: "done", args: { output: { saved: true, name: text.match(/Saved for (\w+ \w+)/)?.[1] } } }
  if (text.includes("Delivery address")) {
    const empty = FIELDS.findIndex((field) => !new RegExp(`textbox ${JSON.stringify(field)} \\[\\w+\\] =`).test(text))
    if (empty === -1) return { tool: "click", args: { ref: refFor(text, "button", "Save address") } }
    return { tool: "type", args: { ref: refFor(text, "textbox", FIELDS[empty]!), text: `value${empty}` } }
  }
  return { tool: "navigate", args: { url: `${siteUrl}/address` } }
})

const service = await startService({
  env: { WA_MODEL_BASE_URL: model.baseUrl, WA_MODEL: "scripted", WA_ALLOW_PRIVATE_NETWORKS: "true", WA_RATE_LIMIT_REQUESTS: "100000" }
})

const run = async () => {
  const requestsBefore = model.requests.length
  const started = performance.now()
  const created = await service.request("POST", `/v1/projects/${service.projectId}/do_anything/sessions`, {
    body: { instructions: "Fill in the delivery address form and save it.", keep_alive: false, cache_script: true }
  })
  if (created.status !== 201) throw new Error(`create: ${created.status} ${created.text}`)
  const path = `/v1/projects/${service.projectId}/do_anything/sessions/${created.json.id}/runs/${created.json.latest_run_id}`
  // Waited for as a client would without polling: the run's event stream ends with the run.
  const { events } = await readSse(`${service.url}${path}/events`, { authorization: `Bearer ${service.apiKey}` }, { timeoutMs: 120_000 })
  const ms = performance.now() - started
  const ended = await waitForRunStatus(service, path, TERMINAL, { timeoutMs: 10_000, everyMs: 20 })
  if (ended.status !== "done") throw new Error(`run ${ended.status}: ${JSON.stringify(ended.error)}`)
  const tokens = events.filter((event) => event.event === "run.usage")
    .reduce((sum, event) => sum + Number(event.data.data.input_tokens) + Number(event.data.data.output_tokens), 0)
  if (process.env.TIMELINE) {
    const t0 = new Date(events[0]!.data.created_at ?? events[0]!.data.timestamp ?? 0).getTime()
    for (const event of events) console.log(`  +${new Date(event.data.created_at ?? event.data.timestamp ?? 0).getTime() - t0} ms ${event.event} ${event.data.data?.action ?? ""}`)
  }
  return { ms, steps: ended.step_count as number, modelRequests: model.requests.length - requestsBefore, tokens, cost: ended.llm_cost_usd ?? null, hit: events.some((event) => event.event === "run.cache.hit") }
}

try {
  const first = await run()
  console.log(`model-driven run: ${first.ms.toFixed(0)} ms, ${first.steps} steps, ${first.modelRequests} model requests, ${first.tokens} tokens, llm cost ${JSON.stringify(first.cost)} USD`)
  const times: Array<number> = []
  for (let i = 0; i < replays; i++) {
    const replay = await run()
    if (!replay.hit) throw new Error("the replay did not use the script")
    times.push(replay.ms)
    console.log(`replay ${i + 1}: ${replay.ms.toFixed(0)} ms, ${replay.steps} steps, ${replay.modelRequests} model requests, ${replay.tokens} tokens, llm cost ${JSON.stringify(replay.cost)} USD`)
  }
  const median = [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)]!
  console.log(`replay median ${median.toFixed(0)} ms; model-driven / replay = ${(first.ms / median).toFixed(1)}x (model answering in ${modelMs} ms)`)
} finally {
  await stopAndClean(service)
  await model.close()
  site.close()
}
