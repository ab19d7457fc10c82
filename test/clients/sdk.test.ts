/**
 * The SDK (src/client) against the real service: typed calls, createAndWait over the event stream,
 * a stream whose TCP connection is cut mid-run (it reconnects from Last-Event-ID and loses no
 * event), retries of 503/429 with one Idempotency-Key, Retry-After honoured, and the error envelope.
 */
import { execFile } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { chromium } from "playwright-core"
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest"
import { createClient, type StreamEvent, WebAgentError } from "../../src/client/index.ts"
import { type ChatRequest, type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type BrowserWatch, watchBrowser } from "../support/contract-browser.ts"
import { type ContractProxy, startContractProxy } from "../support/contract-proxy.ts"
import { type FaultProxy, startFaultProxy, startTcpProxy, type TcpProxy } from "../support/loopback-proxy.ts"
import { type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"

vi.setConfig({ testTimeout: 90_000 })

const root = path.resolve(import.meta.dirname, "../..")

let model: ScriptedModel
let service: Service
let tcp: TcpProxy
let faults: FaultProxy

beforeAll(async () => {
  model = await startScriptedModel(() => ({ tool: "done", args: { output: "no script" } }))
  service = await startService({ env: scriptedAgentEnv(model.baseUrl, { WA_SSE_HEARTBEAT_SECONDS: "1" }) })
  tcp = await startTcpProxy(service.url)
  faults = await startFaultProxy(service.url)
})
afterAll(async () => {
  await tcp?.close()
  await faults?.close()
  await stopAndClean(service)
  await model?.close()
})

/** The SDK on the service (or a proxy in front of it); the service's answers go through the contract hook (service.fetch). */
const client = (baseUrl = service.url, extra: Partial<Parameters<typeof createClient>[0]> = {}) =>
  createClient({ baseUrl, token: service.apiKey, projectId: service.projectId, fetch: service.fetch, ...extra })

/** The steps the run has taken so far (tool results in its conversation). */
const stepsTaken = (request: ChatRequest) => request.messages.filter((m) => m.role === "tool").length

/** `steps` wait_for calls, then done with `output`. */
const stepsThenDone = (steps: number, output: unknown) => (request: ChatRequest) =>
  stepsTaken(request) < steps ? { tool: "wait_for", args: { timeout_ms: 1 } } : { tool: "done", args: { output } }

const gate = () => {
  let open: () => void = () => {}
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { wait: () => opened, release: () => open() }
}

describe("SDK", () => {
  it("createAndWait follows the run's events to its end and returns the finished run", async () => {
    model.setScript(stepsThenDone(2, { answer: 42 }))
    const events: Array<StreamEvent> = []
    const { session, run } = await client().runs.createAndWait(
      { instructions: "List the files twice, then answer", keep_alive: false },
      { onEvent: (event) => void events.push(event) }
    )
    expect(session.id).toMatch(/^sess_/)
    expect(run.error).toBeNull()
    expect(run).toMatchObject({ id: session.latest_run_id, status: "done", output: { answer: 42 } })
    const types = events.map((e) => e.type)
    expect(events.filter((e) => e.type === "run.action.started").map((e) => e.data.action)).toEqual(["wait_for", "wait_for", "done"])
    expect(types.at(-1)).toBe("run.completed")
    expect(types).not.toContain("stream.heartbeat")
    const ids = events.map((e) => e.id!)
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
    expect(new Set(ids).size).toBe(ids.length)
  })

  it("a stream whose connection is cut mid-run reconnects from Last-Event-ID and loses no event", async () => {
    const hold = gate()
    model.setScript(async (request) => {
      const turn = stepsTaken(request)
      if (turn === 2) await hold.wait()
      return turn < 4 ? { tool: "wait_for", args: { timeout_ms: 1 } } : { tool: "done", args: { output: "after the drop" } }
    })
    const viaProxy = client(tcp.url)
    const session = await client().runs.create({ instructions: "List files, wait, list again", keep_alive: false })
    const rid = session.latest_run_id!
    const reconnects: Array<{ lastEventId: number | undefined; reason: string }> = []
    const seen: Array<StreamEvent> = []
    let dropped = false
    for await (const event of viaProxy.runs.events(session.id, rid, { onReconnect: (info) => void reconnects.push(info) })) {
      seen.push(event)
      // The run is parked at the model's third turn: two steps are done and more are to come.
      if (!dropped && event.type === "run.action.completed" && seen.filter((e) => e.type === "run.action.completed").length === 2) {
        // Heartbeats flow while the run is parked (WA_SSE_HEARTBEAT_SECONDS=1); one more stream that
        // asks for them sees one, this one must not yield any.
        for await (const beat of viaProxy.runs.events(session.id, rid, { lastEventId: event.id, includeHeartbeats: true })) {
          if (beat.type === "stream.heartbeat") break
        }
        dropped = true
        expect(tcp.dropAll()).toBeGreaterThan(0)
        hold.release()
      }
    }
    expect(dropped).toBe(true)
    expect(reconnects.length).toBeGreaterThanOrEqual(1)
    expect(reconnects[0]!.reason).toMatch(/^error/)
    expect(seen.map((e) => e.type)).not.toContain("stream.heartbeat")
    expect(seen.at(-1)?.type).toBe("run.completed")

    // Every event the run wrote, read again from the start in one go: the same ids, in order, once each.
    const all = await readSse(`${service.url}/v1/projects/${service.projectId}/do_anything/sessions/${session.id}/runs/${rid}/events`, {
      authorization: `Bearer ${service.apiKey}`
    })
    const stored = all.events.filter((e) => e.event !== "stream.heartbeat").map((e) => e.id)
    expect(seen.map((e) => e.id)).toEqual(stored)
    expect(await client().runs.get(session.id, rid)).toMatchObject({ status: "done", output: "after the drop" })
  })

  it("a stream that goes silent (no event, no heartbeat) is reconnected after stallMs and loses no event", async () => {
    const hold = gate()
    model.setScript(async (request) => {
      const turn = stepsTaken(request)
      if (turn === 1) await hold.wait()
      return turn < 3 ? { tool: "wait_for", args: { timeout_ms: 1 } } : { tool: "done", args: { output: "after the stall" } }
    })
    const session = await client().runs.create({ instructions: "Step, wait, step", keep_alive: false })
    const rid = session.latest_run_id!
    const reasons: Array<string> = []
    const seen: Array<StreamEvent> = []
    let frozen = false
    // Heartbeats come every second (WA_SSE_HEARTBEAT_SECONDS=1): 3 s of silence is a stall.
    for await (const event of client(tcp.url).runs.events(session.id, rid, { stallMs: 3000, onReconnect: (info) => void reasons.push(info.reason) })) {
      seen.push(event)
      if (!frozen && event.type === "run.action.completed") {
        frozen = true
        expect(tcp.freezeAll()).toBeGreaterThan(0)
        hold.release()
      }
    }
    expect(reasons[0]).toBe("stalled")
    const all = await readSse(`${service.url}/v1/projects/${service.projectId}/do_anything/sessions/${session.id}/runs/${rid}/events`, {
      authorization: `Bearer ${service.apiKey}`
    })
    expect(seen.map((e) => e.id)).toEqual(all.events.filter((e) => e.event !== "stream.heartbeat").map((e) => e.id))
    expect(seen.at(-1)?.data).toMatchObject({ status: "done", output: "after the stall" })
    tcp.dropAll()
  })

  it("monitors: create, pause, list, cancel; the monitor's stream ends with its cancel", async () => {
    const sdk = client()
    const created = await sdk.monitors.create({
      intent: "Watch the health page",
      notify_channel: { kind: "console_inbox" },
      target_urls: [`${service.url}/healthz`],
      schedule: { kind: "interval", interval_seconds: 3600 }
    })
    expect(created).toMatchObject({ status: "active", notify_secret: expect.any(String) })
    expect((await sdk.monitors.patch(created.id, { action: "pause" })).status).toBe("paused")
    expect((await sdk.monitors.list()).items.map((m) => m.id)).toContain(created.id)
    const bad = await sdk.monitors.patch(created.id, { action: "refine" }).catch((e) => e)
    expect(bad).toMatchObject({ status: 422, code: "validation_error" })
    const types: Array<string> = []
    const following = (async () => {
      for await (const event of sdk.monitors.events(created.id)) types.push(event.type)
    })()
    expect((await sdk.monitors.patch(created.id, { action: "cancel", reason: "done watching" })).status).toBe("canceled")
    await following
    expect(types[0]).toBe("monitor.created")
    expect(types.at(-1)).toBe("monitor.status_changed")
  })

  it("retries a 503 and a 429 with one Idempotency-Key, waiting what Retry-After says; the write happens once", async () => {
    model.setScript(stepsThenDone(0, "once"))
    const retries: Array<{ status: number | undefined; delayMs: number }> = []
    const sdk = client(faults.url, { onRetry: (info) => void retries.push({ status: info.status, delayMs: info.delayMs }) })
    let creates = 0
    faults.setFault(({ method, path }) => {
      if (method !== "POST" || !path.endsWith("/do_anything/sessions")) return undefined
      creates++
      if (creates === 1) return { status: 503 }
      if (creates === 2) return { status: 429, headers: { "retry-after": "1" } }
      return undefined
    })
    const before = (await service.request("GET", `/v1/projects/${service.projectId}/do_anything/sessions?limit=100`)).json.items.length
    const session = await sdk.runs.create({ instructions: "Say once", keep_alive: false })
    faults.setFault(undefined)
    expect(session.id).toMatch(/^sess_/)
    const posts = faults.seen.filter((r) => r.method === "POST" && r.path.endsWith("/do_anything/sessions"))
    expect(posts.map((r) => r.injected)).toEqual([503, 429, undefined])
    const keys = new Set(posts.map((r) => r.headers["idempotency-key"]))
    expect(keys.size).toBe(1)
    expect([...keys][0]).toMatch(/^[0-9a-f-]{36}$/)
    expect(posts.every((r) => r.headers.authorization === `Bearer ${service.apiKey}`)).toBe(true)
    expect(retries).toEqual([
      { status: 503, delayMs: expect.any(Number) },
      { status: 429, delayMs: 1000 }
    ])
    // The spec's first backoff: 0.5 s plus at most 0.25 s of jitter.
    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(500)
    expect(retries[0]!.delayMs).toBeLessThan(750)
    const after = (await service.request("GET", `/v1/projects/${service.projectId}/do_anything/sessions?limit=100`)).json.items.length
    expect(after).toBe(before + 1)
    // A second logical write gets a new key.
    const again = await sdk.runs.create({ instructions: "Say once more", keep_alive: false })
    expect(again.id).not.toBe(session.id)
    const lastPost = faults.seen.filter((r) => r.method === "POST").at(-1)!
    expect(keys.has(lastPost.headers["idempotency-key"])).toBe(false)
  })

  it("gives up after 4 attempts and throws the envelope; refusals are not retried", async () => {
    const retries: Array<number | undefined> = []
    const sdk = client(faults.url, { onRetry: (info) => void retries.push(info.status), retry: { baseMs: 1, jitterMs: 1 } })
    faults.setFault(({ path }) => path.includes("/runs/run_missing") ? { status: 500 } : undefined)
    const failure = await sdk.runs.get("sess_missing", "run_missing").catch((e) => e)
    faults.setFault(undefined)
    expect(failure).toBeInstanceOf(WebAgentError)
    expect(failure).toMatchObject({ status: 500, code: "internal_error" })
    expect(retries).toEqual([500, 500, 500])

    retries.length = 0
    const notFound = await sdk.runs.get("sess_missing", "run_missing").catch((e) => e)
    expect(notFound).toBeInstanceOf(WebAgentError)
    expect(notFound.status).toBe(404)
    expect(notFound.code).toMatch(/not_found$/)
    expect(retries).toEqual([])

    const invalid = await sdk.runs.create({ instructions: "x".repeat(10_001) }).catch((e) => e)
    expect(invalid).toMatchObject({ status: 422, code: "validation_error" })
    expect(invalid.extra.errors.length).toBeGreaterThan(0)

    const unauthorized = await createClient({ baseUrl: service.url, token: "wa_" + "x".repeat(40), projectId: service.projectId, fetch: service.fetch })
      .runs.get("sess_missing", "run_missing").catch((e) => e)
    expect(unauthorized).toMatchObject({ status: 401, code: "unauthorized" })
  })
})

describe("the package export web-agent-service/client", () => {
  let dir: string
  // The built SDK's answers go through the contract hook: the Node child calls the service through
  // a checking proxy (contract-proxy.ts), the browser pages are watched (contract-browser.ts; the
  // page and bundle under /__sdk__/ are the test's own, fulfilled by page.route). A mismatch fails the test that caused it.
  let proxy: ContractProxy | undefined
  let browserWatch: BrowserWatch | undefined
  const sdkPage = async () => {
    const bundle = readFileSync(path.join(dir, "node_modules/web-agent-service/dist/client/browser.js"), "utf8")
    const browser = await chromium.launch({ executablePath: process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium" })
    try {
      const context = await browser.newContext()
      browserWatch ??= watchBrowser(service.url, { fulfilledByTest: (url) => url.pathname.startsWith("/__sdk__/") })
      browserWatch.watch(context)
      const page = await context.newPage()
      // The page is served from the service's origin (the SDK then calls its own origin).
      await page.route(`${service.url}/__sdk__/**`, (route) =>
        route.request().url().endsWith(".js")
          ? route.fulfill({ contentType: "text/javascript", body: bundle })
          : route.fulfill({ contentType: "text/html", body: "<!doctype html><title>sdk</title>" }))
      await page.goto(`${service.url}/__sdk__/index.html`)
      return { browser, page }
    } catch (error) {
      await browser.close()
      throw error
    }
  }
  afterEach(async () => {
    expect(proxy?.takeMismatches() ?? []).toEqual([])
    expect(await browserWatch?.takeMismatches() ?? []).toEqual([])
  })
  beforeAll(async () => {
    // Build the way `npm install` (prepare) does, into a consumer's node_modules.
    dir = mkdtempSync(path.join(tmpdir(), "wa-sdk-consumer-"))
    const pkg = path.join(dir, "node_modules", "web-agent-service")
    mkdirSync(pkg, { recursive: true })
    cpSync(path.join(root, "package.json"), path.join(pkg, "package.json"))
    symlinkSync(path.join(root, "node_modules", "effect"), path.join(dir, "node_modules", "effect"))
    const run = promisify(execFile)
    await run(process.execPath, [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.client.json", "--outDir", path.join(pkg, "dist")], { cwd: root })
    await run(process.execPath, [path.join(root, "node_modules/vite/bin/vite.js"), "build", "-c", "vite.client.config.ts", "--outDir", path.join(pkg, "dist/client")], { cwd: root })
  }, 180_000)
  afterAll(async () => {
    await proxy?.close()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("Node imports the built JavaScript from node_modules and runs a task with it", async () => {
    model.setScript(stepsThenDone(0, "from node_modules"))
    const script = `
      import { createClient, WebAgentError } from "web-agent-service/client"
      const client = createClient({ baseUrl: process.env.URL, token: process.env.KEY, projectId: process.env.PID })
      const { run } = await client.runs.createAndWait({ instructions: "Say it", keep_alive: false })
      const missing = await client.runs.get("sess_none", "run_none").catch((e) => e)
      console.log(JSON.stringify({ status: run.status, output: run.output, missing: missing instanceof WebAgentError ? missing.status : String(missing) }))
    `
    proxy ??= await startContractProxy(service.url)
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], {
      cwd: dir,
      env: { ...process.env, URL: proxy.url, KEY: service.apiKey, PID: service.projectId }
    })
    expect(JSON.parse(stdout)).toEqual({ status: "done", output: "from node_modules", missing: 404 })
  })

  it("the browser build runs in Chromium: a page starts a task and watches its events", async () => {
    model.setScript(stepsThenDone(1, "from the browser"))
    const { browser, page } = await sdkPage()
    try {
      // A module script of the page (a string: the test runner must not rewrite its import).
      const result = await page.evaluate(`(async () => {
        const sdk = await import(location.origin + "/__sdk__/browser.js")
        const client = sdk.createClient({ baseUrl: location.origin, token: ${JSON.stringify(service.apiKey)}, projectId: ${JSON.stringify(service.projectId)} })
        const types = []
        const { run } = await client.runs.createAndWait({ instructions: "Step once", keep_alive: false }, { onEvent: (e) => void types.push(e.type) })
        return { status: run.status, output: run.output, types }
      })()`) as { status: string; output: unknown; types: Array<string> }
      expect(result).toMatchObject({ status: "done", output: "from the browser" })
      expect(result.types).toContain("run.action.completed")
      expect(result.types.at(-1)).toBe("run.completed")
    } finally {
      await browser.close()
    }
  })

  it("the browser build checks a schedule's and a rule's shape, and leaves cron expressions, zones and rules to the server", async () => {
    const { browser, page } = await sdkPage()
    try {
      const refusals = await page.evaluate(`(async () => {
        const sdk = await import(location.origin + "/__sdk__/browser.js")
        const client = sdk.createClient({ baseUrl: location.origin, token: ${JSON.stringify(service.apiKey)}, projectId: ${JSON.stringify(service.projectId)} })
        const base = { intent: "watch the price of the page", notify_channel: { kind: "console_inbox" }, target_urls: ["https://example.com/"] }
        const refusal = (body) => client.monitors.create({ ...base, ...body }).then(
          () => "created",
          (e) => ({ status: e.status, code: e.code, clientSide: e.extra?.client_side === true, locs: (e.extra?.errors ?? []).map((x) => x.loc.join(".")) }))
        return {
          cron: await refusal({ schedule: { kind: "cron", expr: "not a cron" } }),
          zone: await refusal({ schedule: { kind: "cron", expr: "0 9 * * *", tz: "Mars/Olympus" } }),
          rule: await refusal({ trigger_dsl: { field: "price", op: "about", value: 1 } }),
          shape: await refusal({ schedule: { kind: "interval", interval_seconds: 0 } })
        }
      })()`) as Record<string, { status: number; code: string; clientSide: boolean; locs: Array<string> }>
      // The server decides what the bundle leaves out: its 422 names the field.
      expect(refusals["cron"]).toMatchObject({ status: 422, code: "validation_error", clientSide: false, locs: ["body.schedule.expr"] })
      expect(refusals["zone"]).toMatchObject({ status: 422, code: "validation_error", clientSide: false, locs: ["body.schedule.tz"] })
      expect(refusals["rule"]).toMatchObject({ status: 422, code: "validation_error", clientSide: false, locs: ["body.trigger_dsl.op"] })
      // A bound of the shape is checked before any request.
      expect(refusals["shape"]).toMatchObject({ status: 422, code: "validation_error", clientSide: true })
    } finally {
      await browser.close()
    }
  })
})
