/**
 * The web console's figures, measured in Chromium against the real service (embedded PostgreSQL,
 * the scripted model):
 *
 * - JavaScript of the first load of /console: bytes of every script the page loads, and the same
 *   gzipped (what the service sends; goal ≤ 300 KB gzipped)
 * - interactive: navigation start → the app's first usable render (its `console-interactive`
 *   mark), cold cache, for the sign-in page and for the signed-in sessions page with its list
 *   loaded, signed in with an API key and with a console account (cookie session, which first
 *   asks GET /v1/auth/me); median and worst of `loads` (goal ≤ 1 s)
 * - event latency: an event written (its created_at, the database's clock) → the same event's row
 *   in the run page's event list (Date.now() in a MutationObserver); the page and the database
 *   share this machine's clock; p50, p95 and max over `events` run.message events (goal ≤ 250 ms),
 *   with an API key and with a console account
 *
 *   node bench/console.ts [loads=5] [events=40]
 */
import { spawn } from "node:child_process"
import * as path from "node:path"
import { type BrowserContext, chromium } from "playwright-core"
import { gzipSync } from "node:zlib"
import { isStale, buildConsole } from "../console/build.ts"
import { selectChromium } from "../src/browser/chromium-executable.ts"
import { startScriptedModel } from "../test/fixtures/model/scripted-model.ts"
import { scriptedAgentEnv, startService, stopAndClean } from "../test/support/service.ts"
import { waitForRunStatus } from "../test/support/runs.ts"

const loads = Number(process.argv[2] ?? 5)
const eventCount = Number(process.argv[3] ?? 40)
const quantile = (values: ReadonlyArray<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

if (isStale()) await buildConsole()
let release: () => void = () => {}
const held = new Promise<void>((resolve) => (release = resolve))
const model = await startScriptedModel(() => held.then(() => ({ tool: "done", args: { output: "ok" } })))
const service = await startService({ env: scriptedAgentEnv(model.baseUrl, { WA_STEP_SCREENSHOTS: "false" }) })
const local = await selectChromium({ explicitPath: process.env["CHROMIUM_PATH"], dataDir: service.dataDir })
const prepared = await local.prepare()
const browser = await chromium.launch({ executablePath: prepared.executablePath, env: { ...process.env, ...prepared.env }, args: ["--no-sandbox"] })
const credentials = JSON.stringify({ kind: "api_key", token: service.apiKey, projectId: service.projectId })

// A console account in the default tenant (which holds the first-start project), signed in once;
// each measured context gets its cookies and the picked project (what the console keeps).
const email = "bench@example.test"
const password = "bench-password-1"
await new Promise<void>((resolve, reject) => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith("WA_") && name !== "DATABASE_URL") env[name] = value
  }
  const root = path.resolve(import.meta.dirname, "..")
  const child = spawn(process.execPath, [path.join(root, "src/main.ts"), "users", "create", "--email", email, "--password-stdin", "--tenant", "ten_default", "--role", "admin"],
    { cwd: root, env: { ...env, WA_DATA_DIR: service.dataDir, WA_LOG_LEVEL: "Warn" }, stdio: ["pipe", "ignore", "inherit"] })
  child.on("exit", (code) => code === 0 ? resolve() : reject(new Error(`wa users create exited ${code}`)))
  child.stdin.end(password + "\n")
})
const login = await fetch(`${service.url}/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password }) })
const loginBody = await login.json() as { user_id: string }
const cookies = login.headers.getSetCookie().map((c) => c.split(";")[0]!.split("=")).map(([name, ...value]) => ({ name: name!, value: value.join("="), url: service.url }))
const accountCredentials = JSON.stringify({ kind: "session", projectId: service.projectId, tenantId: "ten_default", tenantName: "default", role: "admin", userId: loginBody.user_id, email })
type SignedIn = "none" | "key" | "account"
const signIn = async (context: BrowserContext, as: SignedIn) => {
  if (as === "none") return
  if (as === "account") await context.addCookies(cookies)
  await context.addInitScript((value) => sessionStorage.setItem("wa.console.credentials", value), as === "key" ? credentials : accountCredentials)
}

try {
  // A few sessions so the signed-in page has a list to load (one stays running for the event figure).
  const base = `/v1/projects/${service.projectId}/do_anything/sessions`
  const created = await service.request("POST", base, { body: { instructions: "Hold" } })
  const sid = created.json.id as string
  const rid = created.json.latest_run_id as string
  await waitForRunStatus(service, `${base}/${sid}/runs/${rid}`, ["running"])

  // 1. JavaScript of the first load.
  {
    const context = await browser.newContext()
    const page = await context.newPage()
    const scripts: Array<{ url: string; bytes: number; gzipped: number; transferred: number }> = []
    page.on("response", async (response) => {
      if (response.request().resourceType() !== "script") return
      const body = await response.body()
      const sizes = await response.request().sizes()
      scripts.push({ url: response.url(), bytes: body.length, gzipped: gzipSync(body, { level: 9 }).length, transferred: sizes.responseBodySize })
    })
    await page.goto(`${service.url}/console`, { waitUntil: "networkidle" })
    const total = scripts.reduce((sum, s) => sum + s.bytes, 0)
    const gzipped = scripts.reduce((sum, s) => sum + s.gzipped, 0)
    const transferred = scripts.reduce((sum, s) => sum + s.transferred, 0)
    console.log(`first load JavaScript: ${scripts.length} script(s), ${(total / 1024).toFixed(1)} KB, ${(gzipped / 1024).toFixed(1)} KB gzipped (${(transferred / 1024).toFixed(1)} KB on the wire) (goal ≤ 300 KB gzipped)`)
    await context.close()
  }

  // 2. Interactive, cold cache each time.
  const interactive = async (signedIn: SignedIn): Promise<number> => {
    const context = await browser.newContext()
    await signIn(context, signedIn)
    const page = await context.newPage()
    await page.goto(`${service.url}/console`)
    if (signedIn !== "none") {
      // The list is loaded: its first row is there. The time is read in the page when it appears.
      await page.waitForFunction(() => document.querySelector("table.list tbody tr") !== null, undefined, { polling: "raf" })
      const at = await page.evaluate(() => performance.now())
      await context.close()
      return at
    }
    await page.waitForFunction(() => performance.getEntriesByName("console-interactive").length > 0, undefined, { polling: "raf" })
    const at = await page.evaluate(() => performance.getEntriesByName("console-interactive")[0]!.startTime)
    await context.close()
    return at
  }
  for (const signedIn of ["none", "key", "account"] as const) {
    const times: Array<number> = []
    for (let i = 0; i < loads; i++) times.push(await interactive(signedIn))
    const label = signedIn === "none" ? "sign-in page" : `signed in with ${signedIn === "key" ? "an API key" : "a console account"}, sessions list loaded`
    console.log(`interactive (${label}): median ${quantile(times, 0.5).toFixed(0)} ms, worst ${Math.max(...times).toFixed(0)} ms over ${loads} cold loads (goal ≤ 1000 ms)`)
  }

  // 3. Event latency: messages written one by one while the run page follows the run.
  for (const as of ["key", "account"] as const) {
    const context = await browser.newContext()
    await signIn(context, as)
    const page = await context.newPage()
    await page.goto(`${service.url}/console/sessions/${sid}/runs/${rid}`)
    await page.waitForSelector('[data-stream-state="live"]')
    await page.evaluate(() => {
      const seen: Array<{ type: string; created: string; at: number; text: string }> = []
      ;(window as unknown as { __seen: typeof seen }).__seen = seen
      new MutationObserver((records) => {
        const at = Date.now()
        for (const record of records) {
          for (const node of record.addedNodes) {
            if (node instanceof HTMLElement && node.dataset["eventId"] !== undefined) {
              seen.push({ type: node.dataset["eventType"] ?? "", created: node.dataset["createdAt"] ?? "", at, text: node.textContent ?? "" })
            }
          }
        }
      }).observe(document.querySelector(".event-list")!, { childList: true })
    })
    for (let i = 0; i < eventCount; i++) {
      await service.request("POST", `${base}/${sid}/runs/${rid}/messages`, { body: { content: `bench ${as} message ${i}` } })
      await pause(100)
    }
    // (The run page of the second pass replays the first pass's messages at once: only this pass's count.)
    const mine = (s: { type: string; text: string }, pass: string) => s.type === "run.message" && s.text.includes(`bench ${pass} message`)
    await page.waitForFunction(([n, pass]) => (window as unknown as { __seen: Array<{ type: string; text: string }> }).__seen
      .filter((s) => s.type === "run.message" && s.text.includes(`bench ${pass} message`)).length >= Number(n), [eventCount, as] as const)
    const seen = await page.evaluate(() => (window as unknown as { __seen: Array<{ type: string; created: string; at: number; text: string }> }).__seen)
    const latencies = seen.filter((s) => mine(s, as)).map((s) => s.at - Date.parse(s.created))
    console.log(`event latency (${as === "key" ? "API key" : "console account"}; written → shown in the console): p50 ${quantile(latencies, 0.5)} ms, p95 ${quantile(latencies, 0.95)} ms, max ${Math.max(...latencies)} ms over ${latencies.length} events (goal ≤ 250 ms)`)
    await context.close()
  }
} finally {
  release()
  await browser.close()
  await stopAndClean(service)
  await model.close()
}
