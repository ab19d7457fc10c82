/**
 * The SDK (src/client) against the real service: typed calls, createAndWait over the event stream,
 * a stream whose TCP connection is cut mid-run (it reconnects from Last-Event-ID and loses no
 * event), retries of 503/429 with one Idempotency-Key, Retry-After honoured, and the error envelope.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { createClient, type StreamEvent, WebAgentError } from "../../src/client/index.ts"
import { type ChatRequest, type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type FaultProxy, startFaultProxy, startTcpProxy, type TcpProxy } from "../support/loopback-proxy.ts"
import { type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"

vi.setConfig({ testTimeout: 90_000 })

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

const client = (baseUrl = service.url, extra: Partial<Parameters<typeof createClient>[0]> = {}) =>
  createClient({ baseUrl, token: service.apiKey, projectId: service.projectId, ...extra })

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

    const unauthorized = await createClient({ baseUrl: service.url, token: "wa_" + "x".repeat(40), projectId: service.projectId })
      .runs.get("sess_missing", "run_missing").catch((e) => e)
    expect(unauthorized).toMatchObject({ status: 401, code: "unauthorized" })
  })
})
