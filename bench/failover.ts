/**
 * Failover: two `wa serve` nodes (socket runners) on a fresh database of TEST_DATABASE_URL (Redis at
 * TEST_REDIS_URL). A run steps forever (the scripted model navigates to a local page each step);
 * the runner executing it is SIGKILLed mid-run. Measured from the SIGKILL:
 *   - resumed: the survivor took the shard, the Execute message was delivered again and the run
 *     announced `run.resumed` (rebuilt from its last checkpoint);
 *   - next step: the interrupted run's next navigation arrives at the page server, from the survivor.
 * Target: next step within the configured lock expiry + 5 s. The run is then canceled and the
 * killed node restarted between iterations.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test TEST_REDIS_URL=redis://127.0.0.1:6379 \
 *     node bench/failover.ts [iterations=4] [health-check-seconds=2] [lock-expiration-seconds=15]
 */
import { startScriptedModel } from "../test/fixtures/model/scripted-model.ts"
import { clusterNodeEnv, eventually, scrape } from "../test/scale-out/nodes.ts"
import { readSse } from "../test/support/sse.ts"
import { externalDatabase, type Service, startService, stopAndClean } from "../test/support/service.ts"
import { startTaggedPages } from "./tagged-pages.ts"

const iterations = Number(process.argv[2] ?? 4)
const healthCheckSeconds = process.argv[3] ?? "2"
const lockExpirationSeconds = process.argv[4] ?? "15"
const databaseUrl = process.env["TEST_DATABASE_URL"]
const redisUrl = process.env["TEST_REDIS_URL"]
if (!databaseUrl || !redisUrl) {
  console.error("set TEST_DATABASE_URL and TEST_REDIS_URL")
  process.exit(2)
}

const pages = await startTaggedPages()
const pageUrl = pages.url
const arrivals = pages.arrivals

// `loop tag=X` navigates forever; `once tag=X` navigates once and finishes.
const model = await startScriptedModel((request) => {
  const task = JSON.stringify(request.messages)
  const tag = task.match(/tag=(\w+)/)?.[1] ?? "none"
  if (task.includes("once tag=") && task.includes("observed")) return { tool: "done", args: { output: "ok" } }
  return { tool: "navigate", args: { url: `${pageUrl}?tag=${tag}&t=${Date.now()}` } }
})

const database = (await externalDatabase())!
const env = clusterNodeEnv(database.url, redisUrl, model.baseUrl, {
  WA_MAX_CONCURRENT_SESSIONS: "1000",
  WA_RATE_LIMIT_REQUESTS: "1000000",
  WA_MAX_STEPS: "100000",
  WA_CLUSTER_HEALTH_CHECK_SECONDS: healthCheckSeconds,
  WA_CLUSTER_LOCK_EXPIRATION_SECONDS: lockExpirationSeconds
})
const first = await startService({ env })
const credentials = { projectId: first.projectId, apiKey: first.apiKey }
const nodes: Array<Service> = [first, await startService({ env, credentials })]
const base = `/v1/projects/${first.projectId}/do_anything`

const runStatus = async (node: Service, sid: string, rid: string) => (await node.request("GET", `${base}/sessions/${sid}/runs/${rid}`)).json
const waitFor = async (what: string, check: () => Promise<boolean>) => {
  while (!(await check())) await new Promise((r) => setTimeout(r, 20))
  return performance.now()
}

const results: Array<{ ended: number; next: number; code: string }> = []
try {
  for (let i = 0; i < iterations; i++) {
    await eventually("shards on both runners", async () => {
      const held = await Promise.all(nodes.map(async (node) => (await scrape(node.url)).get("effect_cluster_shards") ?? 0))
      return held.every((n) => n > 0) && held.reduce((x, y) => x + y, 0) === 300 ? true : undefined
    })
    const tag = `loop${i}`
    const created = await nodes[0]!.request("POST", `${base}/sessions`, { body: { instructions: `loop tag=${tag}`, keep_alive: true, max_steps: 100000 } })
    if (created.status !== 201) throw new Error(`${created.status} ${created.text}`)
    const sid = created.json.id as string
    const rid = created.json.latest_run_id as string
    await waitFor("three steps", async () => (arrivals.get(tag)?.length ?? 0) >= 3)
    const inFlight = await Promise.all(nodes.map(async (node) => (await scrape(node.url)).get("wa_runs_in_flight") ?? 0))
    const ownerIndex = inFlight.findIndex((n) => n > 0)
    const owner = nodes[ownerIndex]!
    const survivor = nodes[1 - ownerIndex]!
    const killedAt = performance.now()
    owner.process.kill("SIGKILL")
    const stepsBefore = arrivals.get(tag)!.length
    let status: any
    const resumedAt = await waitFor("run resumed", async () => {
      const { events } = await readSse(`${survivor.url}${base}/sessions/${sid}/runs/${rid}/events`, { authorization: `Bearer ${survivor.apiKey}` }, {
        timeoutMs: 2000,
        stopAfter: (seen) => seen.some((event) => event.event === "run.resumed")
      })
      status = await runStatus(survivor, sid, rid)
      return events.some((event) => event.event === "run.resumed") || ["done", "failed", "canceled"].includes(status.status)
    })
    if (status.status !== "running") throw new Error(`the run did not resume: ${JSON.stringify(status.error)}`)
    const nextAt = await waitFor("next step", async () => (arrivals.get(tag)?.length ?? 0) > stepsBefore)
    results.push({ ended: resumedAt - killedAt, next: arrivals.get(tag)![stepsBefore]! - killedAt, code: "resumed" })
    console.log(`iteration ${i + 1}: killed runner ${ownerIndex + 1}; run resumed after ${(resumedAt - killedAt).toFixed(0)} ms; its next step after ${(nextAt - killedAt).toFixed(0)} ms`)
    await survivor.request("POST", `${base}/sessions/${sid}/runs/${rid}/cancel`, { body: {} })
    await stopAndClean(owner).catch(() => undefined)
    nodes[ownerIndex] = await startService({ env, credentials })
  }
} finally {
  await Promise.all(nodes.map((node) => stopAndClean(node)))
  await database.drop()
  await model.close()
  await pages.close()
}
const median = (values: Array<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
console.log(`failover with WA_CLUSTER_HEALTH_CHECK_SECONDS=${healthCheckSeconds} WA_CLUSTER_LOCK_EXPIRATION_SECONDS=${lockExpirationSeconds} over ${results.length} kills: ` +
  `run resumed median ${median(results.map((r) => r.ended)).toFixed(0)} ms, its next step median ${median(results.map((r) => r.next)).toFixed(0)} ms ` +
  `(target <= lock expiry + 5 s = ${Number(lockExpirationSeconds) + 5} s)`)
