/**
 * Convention B's status names everywhere under /api/v1 (issue 27 §3): a run's event stream, the
 * 409 envelopes' `extra.status` and the callback of a run created through /api/v1 say `succeeded`
 * (with terminal_reason `done`); the same run read through /v1 says `done`, and a run created
 * through /v1 gets a Convention A callback. And `POST /v1/.../do_anything/sessions` with
 * `session_id` adds a follow-up run to that session (404 unknown, 409 busy or closed), as
 * Convention B's flat create does. Real service, real Chromium, the scripted model, a loopback
 * callback receiver and the fake search engines on loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { FAKE_KEYS, type FakeEngines, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { readSse, type SseEvent } from "../support/sse.ts"
import { eventually, TERMINAL, waitForRunStatus } from "../support/runs.ts"
import { startWebhookReceiver, verifiedDelivery, type WebhookReceiver } from "../support/webhook-receiver.ts"

let model: ScriptedModel
let engines: FakeEngines
let receiver: WebhookReceiver
let service: Service

beforeAll(async () => {
  model = await startScriptedModel(() => ({ tool: "done", args: { output: "ok" } }))
  engines = await startFakeEngines({ results: () => [{ title: "A page", url: "https://page.example/", snippet: "a page" }] })
  receiver = await startWebhookReceiver()
  service = await startService({
    env: scriptedAgentEnv(model.baseUrl, {
      WA_WEBHOOK_RETRY_BASE_MS: "100",
      WA_SEARXNG_URL: engines.url,
      WA_BRAVE_API_KEY: FAKE_KEYS.brave,
      WA_BRAVE_BASE_URL: engines.url,
      WA_WEB_SEARCH_WAIT_SECONDS: "5"
    })
  })
})
afterAll(async () => {
  await stopAndClean(service)
  await receiver?.close()
  await engines?.close()
  await model?.close()
})

const flatRuns = () => `/api/v1/projects/${service.projectId}/do_anything/runs`
const sessions = () => `/v1/projects/${service.projectId}/do_anything/sessions`
const auth = () => ({ authorization: `Bearer ${service.apiKey}` })
const waitFlat = (rid: string) => waitForRunStatus(service, `${flatRuns()}/${rid}`, TERMINAL, { timeoutMs: 60_000 })
const waitA = (sid: string, rid: string) => waitForRunStatus(service, `${sessions()}/${sid}/runs/${rid}`, TERMINAL, { timeoutMs: 60_000 })

/** The `data` of each event of a stream (frames are `{type, data, created_at}`). */
const dataOf = (event: SseEvent) => event.data?.data as Record<string, unknown>
const ofType = (events: ReadonlyArray<SseEvent>, type: string) => events.filter((event) => event.event === type).map(dataOf)

/** The callback delivered to `path` of the receiver, verified with the project's secret. */
const callbackAt = async (path: string) => {
  const secret = (await service.request("GET", `/v1/projects/${service.projectId}/webhook_secret`)).json.secret as string
  return eventually(`a callback for ${path}`, () => {
    for (const received of receiver.received) {
      const payload = verifiedDelivery(secret, received)
      if (payload.data?.callback_url === `${receiver.url}${path}`) return payload
    }
    return undefined
  }, { timeoutMs: 15_000 })
}

/** A model script that holds its answer until `release()`. */
const gate = () => {
  let open: () => void = () => {}
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { wait: () => opened, release: () => open() }
}

describe("statuses under /api/v1", () => {
  it("a run created through /api/v1: its stream there says succeeded (+ terminal_reason done), through /v1 done; its callback says succeeded", async () => {
    model.setScript(() => ({ tool: "done", args: { output: "flat" } }))
    const created = await service.request("POST", flatRuns(), {
      body: { instructions: "Say flat", keep_alive: false, callback_url: `${receiver.url}/flat` }
    })
    expect(created.status, created.text).toBe(202)
    const { run_id: rid, session_id: sid } = created.json
    const run = await waitFlat(rid)
    expect(run).toMatchObject({ status: "succeeded", terminal_reason: "done" })

    const flat = await readSse(`${service.url}${flatRuns()}/${rid}/events`, auth())
    expect(flat.status).toBe(200)
    expect(flat.ended).toBe(true)
    // No event of the stream names the stored `done` as a status.
    for (const data of flat.events.map(dataOf)) {
      expect(data?.["status"], JSON.stringify(data)).not.toBe("done")
      expect(data?.["from"], JSON.stringify(data)).not.toBe("done")
    }
    expect(ofType(flat.events, "run.status_changed").at(-1)).toMatchObject({ status: "succeeded", from: "running", terminal_reason: "done" })
    expect(ofType(flat.events, "run.completed")).toEqual([expect.objectContaining({ status: "succeeded", terminal_reason: "done", output: "flat" })])

    // The same stored events through Convention A: done.
    const plain = await readSse(`${service.url}${sessions()}/${sid}/runs/${rid}/events`, auth())
    expect(plain.events.map((event) => event.id)).toEqual(flat.events.map((event) => event.id))
    expect(ofType(plain.events, "run.status_changed").at(-1)).toMatchObject({ status: "done", from: "running" })
    expect(ofType(plain.events, "run.completed")).toEqual([expect.objectContaining({ status: "done", output: "flat" })])

    // Resuming with Last-Event-ID keeps the convention.
    const tail = await readSse(`${service.url}${flatRuns()}/${rid}/events`, { ...auth(), "last-event-id": String(flat.events.at(-2)!.id) })
    expect(ofType(tail.events, "run.completed")).toEqual([expect.objectContaining({ status: "succeeded", terminal_reason: "done" })])

    // The callback of a run created through /api/v1 is the flat run, as its GET shows it.
    const callback = await callbackAt("/flat")
    expect(callback.type).toBe("run.completed")
    expect(callback.data).toMatchObject({ id: rid, run_id: rid, status: "succeeded", terminal_reason: "done", output: "flat" })
  })

  it("a run created through /v1 gets a Convention A callback (done); its stream under /api/v1 still says succeeded", async () => {
    model.setScript(() => ({ tool: "done", args: { output: "plain" } }))
    const created = await service.request("POST", sessions(), {
      body: { instructions: "Say plain", keep_alive: false, callback_url: `${receiver.url}/plain` }
    })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id as string
    const rid = created.json.latest_run_id as string
    expect((await waitA(sid, rid)).status).toBe("done")

    const callback = await callbackAt("/plain")
    expect(callback.data).toMatchObject({ id: rid, status: "done", output: "plain" })
    expect(callback.data).not.toHaveProperty("run_id")

    const flat = await readSse(`${service.url}${flatRuns()}/${rid}/events`, auth())
    expect(ofType(flat.events, "run.completed")).toEqual([expect.objectContaining({ status: "succeeded", terminal_reason: "done" })])
  })

  it("409 envelopes under /api/v1 name the run's status succeeded; under /v1 done", async () => {
    const webSearch = (convention: "A" | "B") =>
      convention === "A" ? `/v1/projects/${service.projectId}/web_search/runs` : `/api/v1/projects/${service.projectId}/web_search/runs`
    for (const [convention, name] of [["B", "succeeded"], ["A", "done"]] as const) {
      const created = await service.request("POST", webSearch(convention), { body: { queries: [`ended ${convention}`], engines: ["searxng"] } })
      expect(created.status, created.text).toBe(200)
      expect(created.json.status).toBe(name)
      const refused = await service.request("POST", `${webSearch(convention)}/${created.json.run_id}/cancel`, { body: {} })
      expect(refused.status, refused.text).toBe(409)
      expect(refused.json.code).toBe("conflict")
      expect(refused.json.extra.status).toBe(name)
      expect(refused.json.detail).toContain(`the run is ${name}`)
    }
  })
})

describe("POST /v1/.../do_anything/sessions with session_id", () => {
  it("adds a follow-up run to that session (instructions optional) instead of making a new session", async () => {
    model.setScript(() => ({ tool: "done", args: { output: "first" } }))
    const first = await service.request("POST", sessions(), { body: { instructions: "First" } })
    expect(first.status, first.text).toBe(201)
    const sid = first.json.id as string
    expect((await waitA(sid, first.json.latest_run_id)).status).toBe("done")
    const before = (await service.request("GET", `${sessions()}?limit=100`)).json.items.length

    model.setScript(() => ({ tool: "done", args: { output: "second" } }))
    const second = await service.request("POST", sessions(), { body: { session_id: sid, instructions: "Second" } })
    expect(second.status, second.text).toBe(201)
    expect(second.json.id).toBe(sid)
    expect(second.json.runs.map((run: any) => run.id)).toEqual([first.json.latest_run_id, second.json.latest_run_id])
    expect(second.json.latest_run_id).not.toBe(first.json.latest_run_id)
    const secondRun = await waitA(sid, second.json.latest_run_id)
    expect(secondRun).toMatchObject({ status: "done", session_id: sid, instructions: "Second", output: "second" })

    // Without instructions the follow-up observes the page (as Convention B's create does).
    model.setScript(() => ({ tool: "done", args: { output: "observed" } }))
    const observe = await service.request("POST", sessions(), { body: { session_id: sid } })
    expect(observe.status, observe.text).toBe(201)
    expect(observe.json.id).toBe(sid)
    const observing = observe.json.runs.find((run: any) => run.id === observe.json.latest_run_id)
    expect(observing.instructions).toMatch(/Report the current state/)
    expect((await waitA(sid, observe.json.latest_run_id)).output).toBe("observed")

    // No session was made.
    expect((await service.request("GET", `${sessions()}?limit=100`)).json.items.length).toBe(before)
  })

  it("404 for an unknown session; 409 while its run is busy and once it is closed (both conventions)", async () => {
    const unknown = await service.request("POST", sessions(), { body: { session_id: "sess_nonexistent", instructions: "x" } })
    expect(unknown.status, unknown.text).toBe(404)
    expect(unknown.json.code).toBe("session_not_found")

    const hold = gate()
    model.setScript(async () => {
      await hold.wait()
      return { tool: "done", args: { output: "held" } }
    })
    const busy = await service.request("POST", sessions(), { body: { instructions: "Hold" } })
    expect(busy.status, busy.text).toBe(201)
    const sid = busy.json.id as string
    const rid = busy.json.latest_run_id as string
    await waitForRunStatus(service, `${sessions()}/${sid}/runs/${rid}`, ["running"])
    try {
      const refusedA = await service.request("POST", sessions(), { body: { session_id: sid, instructions: "Again" } })
      expect(refusedA.status, refusedA.text).toBe(409)
      expect(refusedA.json).toMatchObject({ code: "conflict", extra: { run_id: rid, status: "running" } })
      const refusedB = await service.request("POST", flatRuns(), { body: { session_id: sid, instructions: "Again" } })
      expect(refusedB.status, refusedB.text).toBe(409)
      expect(refusedB.json).toMatchObject({ code: "conflict", extra: { run_id: rid, status: "running" } })
    } finally {
      hold.release()
    }
    expect((await waitA(sid, rid)).status).toBe("done")
    expect((await service.request("GET", `${sessions()}/${sid}`)).json.runs).toHaveLength(1)

    const closed = await service.request("POST", `${sessions()}/${sid}/close`)
    expect(closed.status, closed.text).toBe(200)
    model.setScript(() => ({ tool: "done", args: { output: "late" } }))
    const late = await service.request("POST", sessions(), { body: { session_id: sid, instructions: "Late" } })
    expect(late.status, late.text).toBe(409)
    expect(late.json).toMatchObject({ code: "conflict", extra: { session_id: sid } })
  })
})
