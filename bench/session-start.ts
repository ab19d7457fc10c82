/**
 * Session start: from `POST /sessions` to the first browser action of its run (the moment the
 * local page server receives the agent's navigation), with a scripted model that answers at once,
 * against a bare Playwright `newContext` + `newPage` + `goto` of the same page on a warm browser,
 * measured the same way in the same run. Target: median ratio <= 1.5.
 * Then a burst: `burst` sessions created at once (default 20), each time to its first navigation;
 * target p95 <= 2 s on a 2-core machine (issue 28). The service keeps `warm` contexts opened ahead
 * (WA_BROWSER_WARM_CONTEXTS; default: as many as the burst, the setting for a deployment that
 * expects bursts of that size) and the burst starts once they are open (/metrics
 * wa_browser_contexts_warm). The same burst with bare Playwright (a context, a page and a goto
 * each, on its own browser) is printed beside it: the floor the machine sets without warm contexts.
 *
 * The service's browser runs with its CPU weight (WA_BROWSER_CPU_WEIGHT, default 25 against the
 * service's 100, through a cgroup where the machine allows; src/browser/cpu-weight.ts): the
 * output's `browser_cpu_weight` says what was applied.
 *
 *   npx node bench/session-start.ts [iterations=20] [burst=20] [warm=burst] [--cpu-prof=DIR] [--cpu-weight=N|off]
 *
 * --cpu-prof=DIR writes the service's V8 CPU profile into DIR when it stops.
 * --cpu-weight=N sets WA_BROWSER_CPU_WEIGHT for the service (`off` compares without it).
 */
import { chromium } from "playwright-core"
import { startScriptedModel } from "../test/fixtures/model/scripted-model.ts"
import { startService, stopAndClean } from "../test/support/service.ts"
import { startTaggedPages } from "./tagged-pages.ts"

const positional = process.argv.slice(2).filter((a) => !a.startsWith("--"))
const profileDir = process.argv.find((a) => a.startsWith("--cpu-prof="))?.slice("--cpu-prof=".length)
const cpuWeight = process.argv.find((a) => a.startsWith("--cpu-weight="))?.slice("--cpu-weight=".length)
const iterations = Number(positional[0] ?? 20)
const burst = Number(positional[1] ?? 20)
const warm = Number(positional[2] ?? burst)
const median = (values: Array<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const p95 = (values: Array<number>) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(values.length * 0.95) - 1)]!

const pages = await startTaggedPages()
const pageUrl = pages.url
const arrival = pages.firstArrival

// The model navigates at once to the page named in the task, then finishes. When each run first
// asked it is kept, for the burst's breakdown.
const firstAsked = new Map<string, number>()
const model = await startScriptedModel((request) => {
  const task = JSON.stringify(request.messages)
  const tag = task.match(/tag=(\w+)/)?.[1] ?? "none"
  const navigated = task.includes("observed") // a later step of the same run
  if (!navigated && !firstAsked.has(tag)) firstAsked.set(tag, performance.now())
  return navigated ? { tool: "done", args: { output: "ok" } } : { tool: "navigate", args: { url: `${pageUrl}?tag=${tag}` } }
})

const service = await startService({
  env: {
    WA_MODEL_BASE_URL: model.baseUrl,
    WA_MODEL: "scripted",
    WA_ALLOW_PRIVATE_NETWORKS: "true",
    WA_MAX_CONCURRENT_SESSIONS: "1000",
    WA_RATE_LIMIT_REQUESTS: "100000",
    WA_BROWSER_WARM_CONTEXTS: String(warm),
    ...(cpuWeight === undefined ? {} : { WA_BROWSER_CPU_WEIGHT: cpuWeight })
  },
  ...(profileDir === undefined ? {} : { nodeFlags: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] })
})

/** Where a session's start went: the create's answer, its run's first model request, the navigation. */
interface Stages {
  readonly created: number
  readonly modelAsked: number
  readonly navigated: number
}
const stages = new Map<string, Stages>()

const startSession = async (tag: string) => {
  const started = performance.now()
  const response = await service.request("POST", `/v1/projects/${service.projectId}/do_anything/sessions`, {
    body: { instructions: `Open the page with tag=${tag}`, keep_alive: false }
  })
  const created = performance.now() - started
  if (response.status !== 201) throw new Error(`session create failed: ${response.status} ${response.text}`)
  const navigated = (await arrival(tag)) - started
  stages.set(tag, { created, modelAsked: (firstAsked.get(tag) ?? Number.NaN) - started, navigated })
  return navigated
}

const browser = await chromium.launch({
  executablePath: process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"]
})
const bare = async (tag: string) => {
  const started = performance.now()
  const context = await browser.newContext()
  const page = await context.newPage()
  const arrived = arrival(tag)
  await page.goto(`${pageUrl}?tag=${tag}`)
  const at = await arrived
  await context.close()
  return at - started
}

// Warm-up: the service's browser is launched by its first session, like Playwright's above.
await startSession("warm1")
await bare("warm2")

const service_ms: Array<number> = []
const bare_ms: Array<number> = []
for (let i = 0; i < iterations; i++) {
  // Alternate, so both see the same machine load.
  bare_ms.push(await bare(`b${i}`))
  service_ms.push(await startSession(`s${i}`))
  await new Promise((r) => setTimeout(r, 200))
}

// The burst: all sessions created at once, each measured to its own first navigation, once the
// warm contexts are open (the pool opens them one at a time after its first lease).
const warmOpen = async () => {
  const text = (await service.request("GET", "/metrics")).text
  return Number(/^wa_browser_contexts_warm(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0)
}
for (const started = Date.now(); (await warmOpen()) < warm && Date.now() - started < 120_000;) await new Promise((r) => setTimeout(r, 250))
const warmAtBurst = await warmOpen()
await new Promise((r) => setTimeout(r, 1000))
const burst_ms = await Promise.all(Array.from({ length: burst }, (_, i) => startSession(`burst${i}`)))
// The same burst with bare Playwright on its own browser (new context + page + goto each): the
// floor this machine sets, since every context is at least one new renderer process.
await new Promise((r) => setTimeout(r, 1000))
const bare_burst_ms = await Promise.all(Array.from({ length: burst }, (_, i) => bare(`bareburst${i}`)))

const ratio = median(service_ms) / median(bare_ms)
// The burst's sessions, stage by stage (ms from each one's POST): median and p95 of each.
const burstStages = Array.from({ length: burst }, (_, i) => stages.get(`burst${i}`)!)
const stage = (pick: (s: Stages) => number) => {
  const values = burstStages.map(pick)
  return { median: Math.round(median(values)), p95: Math.round(p95(values)) }
}
console.log(JSON.stringify({
  bench: "session-start",
  iterations,
  service_median_ms: Math.round(median(service_ms) * 10) / 10,
  bare_playwright_median_ms: Math.round(median(bare_ms) * 10) / 10,
  ratio: Math.round(ratio * 100) / 100,
  target_ratio: 1.5,
  burst,
  warm_contexts: warm,
  warm_contexts_open_at_burst: warmAtBurst,
  burst_first_navigation_median_ms: Math.round(median(burst_ms)),
  burst_first_navigation_p95_ms: Math.round(p95(burst_ms)),
  burst_target_p95_ms: 2000,
  bare_burst_first_navigation_median_ms: Math.round(median(bare_burst_ms)),
  bare_burst_first_navigation_p95_ms: Math.round(p95(bare_burst_ms)),
  burst_stages_ms: {
    create_answered: stage((s) => s.created),
    create_to_first_model_request: stage((s) => s.modelAsked - s.created),
    first_model_request_to_navigation: stage((s) => s.navigated - s.modelAsked)
  },
  browser_cpu_weight: (() => {
    const line = service.logs.find((l) => /^browser CPU weight/.test(String(l.message)))
    return line === undefined ? null : { applied: line.message === "browser CPU weight applied", ...line.annotations }
  })(),
  burst_p95_ratio_to_bare: Math.round((p95(burst_ms) / p95(bare_burst_ms)) * 100) / 100,
  burst_ms: burst_ms.map((v) => Math.round(v)).sort((a, b) => a - b),
  service_ms: service_ms.map((v) => Math.round(v)),
  bare_ms: bare_ms.map((v) => Math.round(v))
}, null, 2))

await browser.close()
await stopAndClean(service)
await model.close()
await pages.close()
process.exit(0)
