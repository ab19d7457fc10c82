/**
 * Events no other suite reads off a stream, read off the real service's streams (issue 27 §2):
 * readSse (test/support/sse.ts) holds each to its type's schema (src/domain/events.ts), so these
 * payloads are checked on the wire too, not only by the emitters' types.
 *
 * - DoAnything: `run.message` from the agent (text beside its tool call) and from the user
 *   (POST .../messages), on /v1 and on /api/v1.
 * - Track: `monitor.tick.failed` (a page answering 500), `alignment.message` and
 *   `alignment.abandoned` (a monitor aligning, then abandoned; its stream ends with the cancel).
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { lastUserText, promptText, type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { waitForRunStatus, eventually } from "../support/runs.ts"
import { embeddedDatabaseClient, type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"

let service: Service
let model: ScriptedModel
let pages: Server
let pagesUrl: string

/** The agent's first model call waits until the test has sent its message. */
let messageSent: () => void = () => {}
let sent = new Promise<void>((resolve) => (messageSent = resolve))
/** The test sends its message only once that first call has been made, so the message cannot be in its prompt. */
let modelAsked: () => void = () => {}
let asked = new Promise<void>((resolve) => (modelAsked = resolve))

beforeAll(async () => {
  pages = createServer((_request, response) => {
    response.writeHead(500, { "content-type": "text/plain" })
    response.end("down")
  })
  await new Promise<void>((resolve) => pages.listen(0, "127.0.0.1", resolve))
  pagesUrl = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`
  model = await startScriptedModel(async (request) => {
    if (promptText(request).includes("You set up a web monitor")) return { text: JSON.stringify({ ask: "Which page should I watch?" }) }
    const heard = lastUserText(request).match(/Message from the user: (.*)/)?.[1]
    if (heard !== undefined) return { tool: "done", args: { output: { heard } } }
    modelAsked()
    await sent
    // Text and no tool call: the agent's run.message; the next step hears the user's message.
    return { text: "Let me think about this first." }
  })
  service = await startService({
    env: scriptedAgentEnv(model.baseUrl, { WA_TRACK_MAX_CONSECUTIVE_FAILURES: "5", WA_RATE_LIMIT_REQUESTS: "100000" })
  })
})

afterAll(async () => {
  await stopAndClean(service)
  await model?.close()
  await new Promise((resolve) => pages?.close(resolve))
})

const auth = () => ({ authorization: `Bearer ${service.apiKey}` })

describe("run.message on the wire", () => {
  it("carries the agent's text and the user's message, in both conventions", async () => {
    sent = new Promise<void>((resolve) => (messageSent = resolve))
    asked = new Promise<void>((resolve) => (modelAsked = resolve))
    const base = `/v1/projects/${service.projectId}/do_anything`
    const created = await service.request("POST", `${base}/sessions`, { body: { instructions: "Listen, then answer", keep_alive: false } })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id as string
    const rid = created.json.latest_run_id as string
    const runPath = `${base}/sessions/${sid}/runs/${rid}`
    await waitForRunStatus(service, runPath, ["running"])
    await asked
    const queued = await service.request("POST", `${runPath}/messages`, { body: { content: "use the blue one" } })
    expect(queued.status).toBe(202)
    messageSent()
    const run = await waitForRunStatus(service, runPath, ["done", "failed", "canceled"])
    expect(run.status).toBe("done")
    expect(run.output).toEqual({ heard: "use the blue one" })
    for (const url of [`${service.url}${runPath}/events`, `${service.url}/api/v1/projects/${service.projectId}/do_anything/runs/${rid}/events`]) {
      const stream = await readSse(url, auth(), { timeoutMs: 15_000 })
      expect(stream.status).toBe(200)
      expect(stream.ended).toBe(true)
      const messages = stream.events.filter((event) => event.event === "run.message").map((event) => event.data.data)
      expect(messages).toEqual(expect.arrayContaining([
        { role: "user", content: "use the blue one" },
        { role: "agent", content: "Let me think about this first." }
      ]))
      expect(stream.events.at(-1)!.event).toBe("run.completed")
    }

    // An event stored after run.completed (none of ours is, but a stream must not rely on that) is
    // not sent: the replay reads the run's events in one batch, and the stream ends at run.completed.
    const db = await embeddedDatabaseClient(service.dataDir)
    try {
      await db.query(
        `INSERT INTO run_events (run_id, id, type, data) SELECT $1, max(id) + 1, 'run.message', '{"role":"agent","content":"after the end"}' FROM run_events WHERE run_id = $1`,
        [rid]
      )
    } finally {
      await db.end()
    }
    const replay = await readSse(`${service.url}${runPath}/events`, auth(), { timeoutMs: 15_000 })
    expect(replay.ended).toBe(true)
    expect(replay.events.at(-1)!.event).toBe("run.completed")
    expect(replay.events.map((event) => event.data.data)).not.toContainEqual({ role: "agent", content: "after the end" })
  })
})

describe("monitor events on the wire", () => {
  const monitors = () => `/v1/projects/${service.projectId}/track/monitors`

  it("monitor.tick.failed: a tick whose page answers 500", async () => {
    const created = await service.request("POST", monitors(), {
      body: {
        intent: "Tell me when the status page changes",
        notify_channel: { kind: "console_inbox" },
        schedule: { kind: "interval", interval_seconds: 3600 },
        target_urls: [`${pagesUrl}/status`]
      }
    })
    expect(created.status, created.text).toBe(201)
    const id = created.json.id as string
    const stream = await readSse(`${service.url}${monitors()}/${id}/events`, auth(), {
      timeoutMs: 30_000,
      stopAfter: (events) => events.some((event) => event.event === "monitor.tick.failed")
    })
    const failed = stream.events.find((event) => event.event === "monitor.tick.failed")
    expect(failed?.data.data).toMatchObject({ n: 1, error: { code: "fetch_failed" }, consecutive_failures: 1 })
    // The same under /api/v1 (Convention B's path for monitors).
    const flat = await readSse(`${service.url}/api/v1/projects/${service.projectId}/track/tracks/${id}/events`, auth(), {
      timeoutMs: 15_000,
      stopAfter: (events) => events.some((event) => event.event === "monitor.tick.failed")
    })
    expect(flat.events.map((event) => event.event)).toContain("monitor.tick.failed")
    expect((await service.request("DELETE", `${monitors()}/${id}`)).status).toBeLessThan(300)
  })

  it("alignment.message and alignment.abandoned; the stream ends with the cancel", async () => {
    const created = await service.request("POST", monitors(), { body: { intent: "Something vague to watch", notify_channel: { kind: "console_inbox" } } })
    expect(created.status, created.text).toBe(201)
    expect(created.json.status).toBe("pending_clarification")
    const id = created.json.id as string
    const asked = await eventually("the supervisor's question", async () =>
      (await service.request("GET", `${monitors()}/${id}`)).json.pending_input_request ?? undefined)
    const said = await service.request("POST", `${monitors()}/${id}/messages`, { body: { content: "prices, mostly", kind: "user_clarification" } })
    expect(said.status, said.text).toBeLessThan(300)
    // The message makes the supervisor ask again: abandon the newest question.
    const question = await eventually("a new question", async () => {
      const pending = (await service.request("GET", `${monitors()}/${id}`)).json.pending_input_request
      return pending !== null && pending !== undefined && pending.request_id !== asked.request_id ? pending : undefined
    })
    const abandoned = await service.request("POST", `${monitors()}/${id}/intervene`, { body: { request_id: question.request_id, kind: "abandon" } })
    expect(abandoned.status, abandoned.text).toBe(200)
    const stream = await readSse(`${service.url}${monitors()}/${id}/events`, auth(), { timeoutMs: 15_000 })
    expect(stream.ended).toBe(true)
    const types = stream.events.map((event) => event.event)
    expect(types).toEqual(expect.arrayContaining(["monitor.created", "alignment.input_request", "alignment.message", "alignment.abandoned"]))
    expect(stream.events.find((event) => event.event === "alignment.message")!.data.data).toEqual({
      role: "user",
      kind: "user_clarification",
      content: "prices, mostly"
    })
    const last = stream.events.filter((event) => event.event !== "stream.heartbeat").at(-1)!
    expect(last.event).toBe("monitor.status_changed")
    expect(last.data.data).toMatchObject({ to: "canceled", reason: "user_abandoned_alignment" })
  })
})
