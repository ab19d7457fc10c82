/**
 * Coordination cost and gain of scale-out: a burst of N sessions (scripted model that navigates to
 * a local page, then finishes) against one `wa serve` and against two `wa serve` nodes (socket
 * runners, requests alternated between them) on the same machine, each on a fresh database of
 * TEST_DATABASE_URL with Redis at TEST_REDIS_URL. Prints, per topology: the wall time of the whole
 * burst (first POST to last terminal run), the median and p90 time from POST to the run's first
 * navigation, and how the sessions spread over the runners.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test TEST_REDIS_URL=redis://127.0.0.1:6379 \
 *     node bench/coordination.ts [sessions=40] [rounds=3]
 *
 * The one-runner and two-runner bursts alternate over `rounds` rounds (a burst of 40 browser
 * sessions on two cores varies by 10-20% from one run to the next); the figure is the median of
 * the per-round ratios two/one (target <= 1.1).
 */
import { startScriptedModel } from "../test/fixtures/model/scripted-model.ts"
import { clusterNodeEnv, eventually, scrape } from "../test/scale-out/nodes.ts"
import { externalDatabase, type Service, startService, stopAndClean } from "../test/support/service.ts"
import { startTaggedPages } from "./tagged-pages.ts"

const sessions = Number(process.argv[2] ?? 40)
const rounds = Number(process.argv[3] ?? 3)
const TARGET_RATIO = 1.1
const databaseUrl = process.env["TEST_DATABASE_URL"]
const redisUrl = process.env["TEST_REDIS_URL"]
if (!databaseUrl || !redisUrl) {
  console.error("set TEST_DATABASE_URL and TEST_REDIS_URL")
  process.exit(2)
}
const quantile = (values: Array<number>, q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))]!

const pages = await startTaggedPages()
const pageUrl = pages.url

const model = await startScriptedModel((request) => {
  const task = JSON.stringify(request.messages)
  const tag = task.match(/tag=(\w+)/)?.[1] ?? "none"
  return task.includes("observed") ? { tool: "done", args: { output: "ok" } } : { tool: "navigate", args: { url: `${pageUrl}?tag=${tag}` } }
})

const burst = async (label: string, nodeCount: number, extraEnv: Record<string, string> = {}, round = 0) => {
  // Page arrivals are keyed by tag: unique per round, so a round never reads an earlier one's.
  const prefix = `${label}${round}n`
  const database = (await externalDatabase())!
  const env = clusterNodeEnv(database.url, redisUrl, model.baseUrl, {
    WA_MAX_CONCURRENT_SESSIONS: "10000",
    WA_RATE_LIMIT_REQUESTS: "1000000",
    ...extraEnv
  })
  const nodes: Array<Service> = []
  try {
    nodes.push(await startService({ env }))
    const credentials = { projectId: nodes[0]!.projectId, apiKey: nodes[0]!.apiKey }
    while (nodes.length < nodeCount) nodes.push(await startService({ env, credentials }))
    await eventually("shards spread", async () => {
      const held = await Promise.all(nodes.map(async (node) => (await scrape(node.url)).get("effect_cluster_shards") ?? 0))
      return held.every((n) => n > 0) && held.reduce((x, y) => x + y, 0) === 300 ? true : undefined
    })
    // Warm the browsers (8 sessions spread over the runners) so the burst does not time Chromium launches.
    await Promise.all(Array.from({ length: 8 }, async (_, i) => {
      const node = nodes[i % nodes.length]!
      const r = await node.request("POST", `/v1/projects/${node.projectId}/do_anything/sessions`, { body: { instructions: `warm tag=warm${prefix}${i}`, keep_alive: false } })
      await waitTerminal(node, r.json.id, r.json.latest_run_id)
    }))
    const before = await Promise.all(nodes.map(async (node) => (await scrape(node.url)).get("wa_browser_contexts_leased_total") ?? 0))

    const started = performance.now()
    const posted = new Map<string, number>()
    const created = await Promise.all(Array.from({ length: sessions }, async (_, i) => {
      const node = nodes[i % nodes.length]!
      const tag = `${prefix}${i}`
      posted.set(tag, performance.now())
      const r = await node.request("POST", `/v1/projects/${node.projectId}/do_anything/sessions`, { body: { instructions: `Open tag=${tag}`, keep_alive: false } })
      if (r.status !== 201) throw new Error(`${r.status} ${r.text}`)
      return { node, sid: r.json.id as string, rid: r.json.latest_run_id as string, tag }
    }))
    const resident = await Promise.all(nodes.map(async (node) => (await scrape(node.url)).get("wa_runs_in_flight") ?? 0))
    await Promise.all(created.map(({ node, sid, rid }) => waitTerminal(node, sid, rid)))
    const wall = performance.now() - started
    const toFirstStep = created.map(({ tag }) => (pages.arrivals.get(tag)?.[0] ?? Number.NaN) - posted.get(tag)!)
    const after = await Promise.all(nodes.map(async (node) => (await scrape(node.url)).get("wa_browser_contexts_leased_total") ?? 0))
    const ran = after.map((n, i) => n - before[i]!)
    console.log(`${label.padEnd(10)} ${String(nodeCount).padStart(7)}  ${wall.toFixed(0).padStart(8)} ms  ${quantile(toFirstStep, 0.5).toFixed(0).padStart(8)} ms  ${quantile(toFirstStep, 0.9).toFixed(0).padStart(8)} ms   contexts leased per runner: ${ran.join(" / ")} (runs in flight right after the POSTs: ${resident.join(" / ")})`)
    return wall
  } finally {
    await Promise.all(nodes.map((node) => stopAndClean(node)))
    await database.drop()
  }
}

const waitTerminal = async (node: Service, sid: string, rid: string) => {
  for (let i = 0; i < 3000; i++) {
    const run = (await node.request("GET", `/v1/projects/${node.projectId}/do_anything/sessions/${sid}/runs/${rid}`)).json
    if (["done", "failed", "canceled"].includes(run?.status)) return run
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`run ${rid} did not end`)
}

console.log(`burst of ${sessions} sessions (navigate to a local page, then done), same machine`)
console.log(`topology   runners      wall   median 1st step   p90 1st step`)
await burst("single", 1, { WA_CLUSTER: "single" })
const ratios: Array<number> = []
const walls = { one: [] as Array<number>, two: [] as Array<number> }
for (let round = 1; round <= rounds; round++) {
  const one = await burst("one", 1, {}, round)
  const two = await burst("two", 2, {}, round)
  walls.one.push(one)
  walls.two.push(two)
  ratios.push(two / one)
  console.log(`round ${round}: two/one ${(two / one).toFixed(2)}`)
}
const median = (values: Array<number>) => quantile(values, 0.5)
console.log(
  `wall median: one runner ${median(walls.one).toFixed(0)} ms, two runners ${median(walls.two).toFixed(0)} ms; ` +
    `ratio two/one: median ${median(ratios).toFixed(2)} (rounds: ${ratios.map((r) => r.toFixed(2)).join(", ")}); ` +
    `target <= ${TARGET_RATIO}: ${median(ratios) <= TARGET_RATIO ? "met" : "NOT met"}`
)
await model.close()
await pages.close()
