/**
 * Fair sharing between tenants: tenant A (one key) fires a burst of parallel WebSearch creates
 * while tenant B (another project, its own key) reads a run of its own in a loop (a cheap GET)
 * and runs its own WebSearch now and then. Prints B's GET p50/p99 and WebSearch p50, quiet and
 * during A's burst, and what A's creates answered. Targets (issue 25, item 7): during the burst
 * B's GET p99 ≤ 100 ms and B's WebSearch p50 ≤ 2× its quiet value.
 *
 * The engines are the fake engines on loopback (test/fixtures/engines), each answering after
 * `latencyMs`; every run searches 5 queries on 3 engines. A's runs end when every create has
 * answered and every accepted run has ended (polled at 1 s).
 *
 *   node bench/tenant-fairness.ts [burst=200] [latencyMs=200] [wait=true|false]
 */
import { startFakeEngines } from "../test/fixtures/engines/fake-engines.ts"
import { TERMINAL } from "../test/support/runs.ts"
import { startService, stopAndClean } from "../test/support/service.ts"

const burst = Number(process.argv[2] ?? 200)
const latencyMs = Number(process.argv[3] ?? 200)
const wait = (process.argv[4] ?? "true") === "true"
const engines = ["brave", "google", "tavily"] as const
const queries = (tag: string) => Array.from({ length: 5 }, (_, i) => `${tag} query ${i + 1}`)

const fake = await startFakeEngines({
  results: (engine, query) =>
    Array.from({ length: 10 }, (_, i) => ({
      url: `https://example${i % 7}.com/${engine}/${encodeURIComponent(query)}/${i}`,
      title: `${engine} result ${i} for ${query}`,
      snippet: `A snippet for ${query} from ${engine}, position ${i + 1}.`
    }))
})
for (const engine of engines) fake.setBehavior(engine, { latencyMs })

const service = await startService({
  env: {
    WA_BRAVE_API_KEY: "brave-test-key",
    WA_BRAVE_BASE_URL: fake.url,
    WA_GOOGLE_API_KEY: "google-test-key",
    WA_GOOGLE_CX: "test-cx",
    WA_GOOGLE_BASE_URL: fake.url,
    WA_TAVILY_API_KEY: "tvly-test-key",
    WA_TAVILY_BASE_URL: fake.url,
    WA_ALLOW_PRIVATE_NETWORKS: "true",
    // The probe is about run work, not the request rate limiter.
    WA_RATE_LIMIT_REQUESTS: "1000000",
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith("WA_BENCH_")).map(([name, value]) => [name.slice("WA_BENCH_".length), value!]))
  }
})

const projectB = JSON.parse((await service.cli("projects", "create", "--name", "tenant-b")).stdout) as { project_id: string }
const keyB = JSON.parse((await service.cli("keys", "create", "--project", projectB.project_id, "--name", "tenant-b")).stdout) as { secret_token: string }
const pathA = `/v1/projects/${service.projectId}/web_search/runs`
const pathB = `/v1/projects/${projectB.project_id}/web_search/runs`

const percentile = (values: ReadonlyArray<number>, p: number) => {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}
const ms = (value: number) => `${value.toFixed(1)} ms`
const pause = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

let searchesPastWait = 0
let searchesRefused = 0
/** One WebSearch of tenant B (wait=true), timed; one still running at the wait limit (202) counts as its wait. */
const searchB = async (tag: string) => {
  const started = performance.now()
  const response = await service.request("POST", pathB, { key: keyB.secret_token, body: { queries: queries(tag), engines: [...engines] } })
  const elapsed = performance.now() - started
  if (response.status === 429) {
    searchesRefused++
    return undefined
  }
  if (response.status === 202) searchesPastWait++
  else if (response.status !== 200) throw new Error(`tenant B's search answered ${response.status}: ${response.text.slice(0, 300)}`)
  return elapsed
}

// Warm up, and make the run B reads in its GET loop.
const readRun = (await service.request("POST", pathB, { key: keyB.secret_token, body: { queries: queries("warm"), engines: [...engines] } })).json.run_id as string
for (let i = 0; i < 3; i++) await searchB(`warm ${i}`)
const readPath = `${pathB}/${readRun}`

/**
 * B's probes until `stop` resolves: a GET every 20 ms (one at a time) and a WebSearch started
 * every second (each timed to its answer, so one stuck search does not hide the others).
 */
const probeB = async (stop: Promise<unknown>) => {
  let stopped = false
  void stop.then(() => (stopped = true))
  const gets: Array<number> = []
  const searches: Array<number> = []
  const getLoop = async () => {
    while (!stopped) {
      const started = performance.now()
      const response = await service.request("GET", readPath, { key: keyB.secret_token })
      if (response.status !== 200) throw new Error(`tenant B's GET answered ${response.status}`)
      gets.push(performance.now() - started)
      await pause(20)
    }
  }
  const searchLoop = async () => {
    const started: Array<Promise<void>> = []
    for (let i = 0; !stopped; i++) {
      started.push(searchB(`probe ${i}`).then((elapsed) => void (elapsed !== undefined && searches.push(elapsed))))
      await pause(1000)
    }
    await Promise.all(started)
  }
  await Promise.all([getLoop(), searchLoop()])
  return { gets, searches }
}

const quiet = await probeB(pause(8_000))

const burstStarted = performance.now()
const statuses = new Map<number, number>()
const codes = new Map<string, number>()
let retryAfter: string | null = null
const burstA = (async () => {
  const responses = await Promise.all(Array.from({ length: burst }, (_, i) =>
    service.request("POST", pathA, { body: { queries: queries(`burst ${i}`), engines: [...engines], wait } })))
  const pending: Array<string> = []
  for (const response of responses) {
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
    if (response.status >= 400) {
      codes.set(response.json?.code, (codes.get(response.json?.code) ?? 0) + 1)
      retryAfter ??= response.headers.get("retry-after")
    } else if (!TERMINAL.includes(response.json.status)) pending.push(response.json.run_id)
  }
  const createsAnswered = performance.now() - burstStarted
  while (pending.length > 0) {
    await pause(1000)
    const polled = await Promise.all(pending.map((id) => service.request("GET", `${pathA}/${id}`)))
    for (let i = polled.length - 1; i >= 0; i--) if (TERMINAL.includes(polled[i]!.json.status)) pending.splice(i, 1)
  }
  return { createsAnswered, ended: performance.now() - burstStarted }
})()
const during = await probeB(burstA)
const { createsAnswered, ended } = await burstA

const quietSearchP50 = percentile(quiet.searches, 50)
const burstSearchP50 = percentile(during.searches, 50)
const burstGetP99 = percentile(during.gets, 99)
console.log(`tenant fairness: tenant A fires ${burst} parallel WebSearch creates (wait=${wait}), 5 queries x 3 engines each, engines answer in ${latencyMs} ms`)
console.log(`  A's creates: ${[...statuses].map(([s, n]) => `${n} x ${s}`).join(", ")}${codes.size > 0 ? ` (${[...codes].map(([c, n]) => `${n} ${c}`).join(", ")}; Retry-After ${retryAfter})` : ""}`)
console.log(`  A's creates answered in ${ms(createsAnswered)}; its runs ended after ${ms(ended)}`)
console.log(`  B's GET of its run     quiet: p50 ${ms(percentile(quiet.gets, 50))} p99 ${ms(percentile(quiet.gets, 99))} (${quiet.gets.length})   burst: p50 ${ms(percentile(during.gets, 50))} p99 ${ms(burstGetP99)} max ${ms(Math.max(...during.gets))} (${during.gets.length})`)
console.log(`  B's WebSearch (wait)   quiet: p50 ${ms(quietSearchP50)} (${quiet.searches.length})   burst: p50 ${ms(burstSearchP50)} max ${ms(Math.max(...during.searches))} (${during.searches.length}, ${searchesPastWait} still running at the wait limit, ${searchesRefused} refused)`)
console.log(`  target: B's GET p99 <= 100 ms during the burst   ${burstGetP99 <= 100 ? "MET" : "NOT MET"}`)
console.log(`  target: B's WebSearch p50 <= 2 x quiet (${ms(2 * quietSearchP50)})   ${burstSearchP50 <= 2 * quietSearchP50 ? "MET" : "NOT MET"}`)

await stopAndClean(service)
await fake.close()
