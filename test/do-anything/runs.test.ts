/**
 * DoAnything end to end through HTTP: the real service, real Chromium, local fixture sites and a
 * scripted OpenAI-compatible model that answers with tool calls.
 */
import { Webhook } from "standardwebhooks"
import { createHmac } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { type ChatRequest, lastUserText, type ScriptedModel, startScriptedModel, toolResults } from "../fixtures/model/scripted-model.ts"
import { embeddedDatabaseClient, type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import { eventually, waitForRunStatus } from "../support/runs.ts"
import { checkWebhookDelivery } from "../support/webhook-receiver.ts"

let site: FixtureSites
let model: ScriptedModel
let service: Service

beforeAll(async () => {
  site = await startFixtureSites()
  model = await startScriptedModel(() => ({ text: "no script" }))
  service = await startService({
    env: scriptedAgentEnv(model.baseUrl, { WA_WEBHOOK_RETRY_BASE_MS: "100" })
  })
})
afterAll(async () => {
  await stopAndClean(service)
  await model.close()
  await site.close()
})

const base = () => `/v1/projects/${service.projectId}/do_anything`
const terminal = ["done", "failed", "canceled"]

const createSession = async (body: Record<string, unknown>) => {
  const response = await service.request("POST", `${base()}/sessions`, { body: { keep_alive: false, ...body } })
  expect(response.status, response.text).toBe(201)
  return { sid: response.json.id as string, rid: response.json.latest_run_id as string, session: response.json }
}

const getRun = async (sid: string, rid: string) => (await service.request("GET", `${base()}/sessions/${sid}/runs/${rid}`)).json

const waitForStatus = (sid: string, rid: string, statuses: ReadonlyArray<string>) =>
  waitForRunStatus(service, `${base()}/sessions/${sid}/runs/${rid}`, statuses)

const authHeaders = () => ({ authorization: `Bearer ${service.apiKey}` })

/** A script that blocks the model's answer until `release()` is called. */
const gate = () => {
  let open: () => void = () => {}
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { wait: () => opened, release: () => open() }
}

describe("runs", () => {
  it("the done tool's output parameter carries the run's output_schema as its JSON schema", async () => {
    const schema = { type: "object", properties: { title: { type: "string" } }, required: ["title"] }
    const seen: Array<unknown> = []
    model.setScript((request) => {
      seen.push(request.tools?.find((t) => t.function.name === "done")?.function.parameters)
      return { tool: "done", args: { output: { title: "ok" } } }
    })
    const { sid, rid } = await createSession({ instructions: "Say ok", output_schema: schema })
    const run = await waitForStatus(sid, rid, terminal)
    expect(run.status).toBe("done")
    // The run's view carries its output_schema (the repair loop itself is tested in-process).
    expect(run.output_schema).toEqual(schema)
    expect(seen[0]).toMatchObject({ properties: { output: { ...schema, description: expect.any(String) } }, required: ["output"] })

    // Without an output_schema the output is free-form.
    seen.length = 0
    const plain = await createSession({ instructions: "Say ok" })
    expect((await waitForStatus(plain.sid, plain.rid, terminal)).status).toBe("done")
    expect((seen[0] as { properties: { output: Record<string, unknown> } }).properties.output).not.toHaveProperty("properties")
  })

  it("a new run needs the previous one to be terminal", async () => {
    const hold = gate()
    model.setScript(async () => {
      await hold.wait()
      return { tool: "done", args: { output: "ok" } }
    })
    const { sid, rid } = await createSession({ instructions: "wait" })
    await waitForStatus(sid, rid, ["running"])
    const second = await service.request("POST", `${base()}/sessions/${sid}/runs`, { body: { instructions: "another" } })
    expect(second.status).toBe(409)
    expect(second.json.code).toBe("conflict")
    hold.release()
    await waitForStatus(sid, rid, terminal)
  })

  it("ask_human raises an input request, intervene answers it and the run resumes", async () => {
    model.setScript((request, turn) => {
      if (turn === 0) return { tool: "ask_human", args: { prompt: "What is the 2FA code?", schema: { type: "string" } } }
      const results = toolResults(request) as Array<{ answer?: unknown }>
      return { tool: "done", args: { output: { code: results[results.length - 1]?.answer } } }
    })
    const { sid, rid } = await createSession({ instructions: "Log in with 2FA" })
    await waitForStatus(sid, rid, ["awaiting_input"])
    const { events } = await readSse(`${service.url}${base()}/sessions/${sid}/runs/${rid}/events`, authHeaders(), {
      stopAfter: (seen) => seen.some((e) => e.event === "run.input_request")
    })
    const request = events.find((e) => e.event === "run.input_request")!.data.data
    expect(request).toMatchObject({ prompt: "What is the 2FA code?", schema: { type: "string" } })
    expect(request.input_request_id).toMatch(/^ir_/)
    expect(request.input_request_id.length).toBeLessThanOrEqual(64)

    const wrong = await service.request("POST", `${base()}/sessions/${sid}/runs/${rid}/intervene`, {
      body: { kind: "answer_input_request", input_request_id: "ir_unknown", response: "1" }
    })
    expect(wrong.status).toBe(409)
    const answered = await service.request("POST", `${base()}/sessions/${sid}/runs/${rid}/intervene`, {
      body: { kind: "answer_input_request", input_request_id: request.input_request_id, response: "424242" }
    })
    expect(answered.status).toBe(200)
    const run = await waitForStatus(sid, rid, terminal)
    expect(run.status).toBe("done")
    expect(run.output).toEqual({ code: "424242" })
    const again = await service.request("POST", `${base()}/sessions/${sid}/runs/${rid}/intervene`, {
      body: { input_request_id: request.input_request_id, response: "1" }
    })
    expect(again.status).toBe(409)
  })

  it("an unknown intervene kind is a 422; take-control kinds on an ended run are a 409 (test/do-anything/take-control.test.ts covers them)", async () => {
    model.setScript(() => ({ tool: "done", args: { output: 1 } }))
    const { sid, rid } = await createSession({ instructions: "x" })
    await waitForStatus(sid, rid, terminal)
    const unknown = await service.request("POST", `${base()}/sessions/${sid}/runs/${rid}/intervene`, { body: { kind: "pause_please" } })
    expect(unknown.status).toBe(422)
    const ended = await service.request("POST", `${base()}/sessions/${sid}/runs/${rid}/intervene`, { body: { kind: "take_control" } })
    expect(ended.status).toBe(409)
    expect(ended.json).toMatchObject({ code: "conflict", extra: { status: "done" } })
  })

  it("messages are queued and reach the model at the next step", async () => {
    const hold = gate()
    const inStep1 = gate()
    model.setScript(async (request, turn) => {
      if (turn === 0) {
        inStep1.release()
        await hold.wait()
        return { tool: "navigate", args: { url: `${site.url}/page/1` } }
      }
      const said = lastUserText(request).match(/Message from the user: (.*)/)?.[1]
      return { tool: "done", args: { output: { heard: said ?? null } } }
    })
    const { sid, rid } = await createSession({ instructions: "Listen" })
    // Step 1 has taken its messages and waits on the model: this one is for step 2.
    await inStep1.wait()
    const queued = await service.request("POST", `${base()}/sessions/${sid}/runs/${rid}/messages`, { body: { content: "use the blue one" } })
    expect(queued.status).toBe(202)
    hold.release()
    const run = await waitForStatus(sid, rid, terminal)
    expect(run.output).toEqual({ heard: "use the blue one" })
  })
})

describe("reading tools", () => {
  it("read_page returns the main content as Markdown and extract returns JSON by a schema", async () => {
    model.setScript((request, turn) => {
      // extract asks the model without tools: answer with the JSON it wants.
      if (request.tools === undefined) return { text: JSON.stringify({ heading: "Page 2" }) }
      if (turn === 0) return { tool: "navigate", args: { url: `${site.url}/page/2` } }
      const results = toolResults(request)
      const last = results[results.length - 1] as any
      if (last?.markdown === undefined && last?.heading === undefined) return { tool: "read_page" }
      if (last?.markdown !== undefined) {
        expect(last.markdown).toContain("page number 2")
        return { tool: "extract", args: { schema: { type: "object", properties: { heading: { type: "string" } } } } }
      }
      return { tool: "done", args: { output: last } }
    })
    const { sid, rid } = await createSession({ instructions: "Read page 2" })
    const run = await waitForStatus(sid, rid, terminal)
    expect(run.error).toBeNull()
    expect(run.output).toEqual({ heading: "Page 2" })
  })
})

describe("cancel", () => {
  it("cancels a running run, a run awaiting input, and refuses a terminal one with 409", async () => {
    const hold = gate()
    model.setScript(async () => {
      await hold.wait()
      return { tool: "done", args: { output: "late" } }
    })
    const running = await createSession({ instructions: "slow" })
    await waitForStatus(running.sid, running.rid, ["running"])
    const canceled = await service.request("POST", `${base()}/sessions/${running.sid}/runs/${running.rid}/cancel`, { body: { reason: "changed my mind" } })
    expect(canceled.status).toBe(200)
    expect(canceled.json.status).toBe("canceled")
    hold.release()
    await new Promise((r) => setTimeout(r, 300))
    expect((await getRun(running.sid, running.rid)).status).toBe("canceled")

    model.setScript(() => ({ tool: "ask_human", args: { prompt: "?" } }))
    const waiting = await createSession({ instructions: "ask" })
    await waitForStatus(waiting.sid, waiting.rid, ["awaiting_input"])
    expect((await service.request("POST", `${base()}/sessions/${waiting.sid}/runs/${waiting.rid}/cancel`, { body: {} })).json.status).toBe("canceled")

    const again = await service.request("POST", `${base()}/sessions/${waiting.sid}/runs/${waiting.rid}/cancel`, { body: {} })
    expect(again.status).toBe(409)
    expect(again.json.code).toBe("conflict")
  })

  it("cancels a run right after creation (pending or just started)", async () => {
    model.setScript(() => ({ tool: "done", args: { output: "should not finish" } }))
    const { sid, rid } = await createSession({ instructions: "quick" })
    const canceled = await service.request("POST", `${base()}/sessions/${sid}/runs/${rid}/cancel`, { body: { reason: "right away" } })
    const eventsUrl = `${service.url}${base()}/sessions/${sid}/runs/${rid}/events`
    // The stream ends after the terminal event, so these are all the events the run will have.
    const logged = async () => (await readSse(eventsUrl, authHeaders())).events.filter((e) => e.event !== "stream.heartbeat")
    const events = await logged()
    const changes = events.filter((e) => e.event === "run.status_changed").map((e) => e.data.data)
    const completed = events.filter((e) => e.event === "run.completed")
    expect(completed, "exactly one terminal event").toHaveLength(1)
    expect(events.at(-1)!.event).toBe("run.completed")
    if (canceled.status === 200) {
      // Canceled while pending or running: the answer, the run and its events all say canceled.
      expect(canceled.json).toMatchObject({ id: rid, status: "canceled", terminal_reason: "canceled" })
      expect(changes.at(-1)).toMatchObject({ from: expect.stringMatching(/^(pending|running)$/), status: "canceled", reason: "right away" })
      expect(completed[0]!.data.data).toMatchObject({ status: "canceled", terminal_reason: "canceled" })
      // The model's "done" may still reach the interrupted execution: it must not finish the run.
      // A whole second run to its end is the barrier (no sleep): by then that answer came long ago.
      const other = await createSession({ instructions: "barrier" })
      expect((await waitForStatus(other.sid, other.rid, terminal)).status).toBe("done")
      const run = await getRun(sid, rid)
      expect(run).toMatchObject({ status: "canceled", terminal_reason: "canceled", output: null })
      expect((await logged()).map((e) => e.id)).toEqual(events.map((e) => e.id))
    } else {
      // The run had already ended (the model answers at once): 409 names its status, and it is done.
      expect(canceled.status, canceled.text).toBe(409)
      expect(canceled.json).toMatchObject({ code: "conflict", extra: { status: "done" } })
      const run = await getRun(sid, rid)
      expect(run).toMatchObject({ status: "done", output: "should not finish" })
      expect(changes.at(-1)).toMatchObject({ from: "running", status: "done" })
      expect(changes.some((change) => change.status === "canceled")).toBe(false)
    }
  })
})

describe("allowed_actions", () => {
  it("offers only the allowed tools (and done) to the model", async () => {
    model.setScript(() => ({ tool: "done", args: { output: "ok" } }))
    const before = model.requests.length
    const { sid, rid } = await createSession({ instructions: "navigate only", allowed_actions: ["navigate"] })
    await waitForStatus(sid, rid, terminal)
    const offered = (model.requests[before] as ChatRequest).tools!.map((t) => t.function.name).sort()
    expect(offered).toEqual(["done", "navigate"])
    const run = await getRun(sid, rid)
    expect(run.allowed_actions).toEqual(["navigate"])
  })

  it("an unknown action name is a 422 naming the valid ones", async () => {
    const response = await service.request("POST", `${base()}/sessions`, { body: { instructions: "x", allowed_actions: ["teleport"] } })
    expect(response.status).toBe(422)
    expect(response.json.extra.errors[0].msg).toContain("navigate")
  })
})

describe("events", () => {
  it("streams every event with contiguous ids, replays after Last-Event-ID without gap or duplicate, and ends after the terminal event", async () => {
    model.setScript((_request, turn) =>
      turn === 0 ? { tool: "navigate", args: { url: `${site.url}/page/1` } } : { tool: "done", args: { output: "fin" } }
    )
    const { sid, rid } = await createSession({ instructions: "events" })
    const url = `${service.url}${base()}/sessions/${sid}/runs/${rid}/events`
    const all = await readSse(url, authHeaders())
    expect(all.status).toBe(200)
    expect(all.contentType).toContain("text/event-stream")
    const events = all.events.filter((e) => e.event !== "stream.heartbeat")
    const ids = events.map((e) => e.id)
    expect(ids).toEqual(ids.map((_, i) => i + 1))
    const types = events.map((e) => e.event)
    for (const type of ["run.status_changed", "run.action.started", "run.action.completed", "run.screenshot", "run.cost_update", "run.completed"]) {
      expect(types).toContain(type)
    }
    expect(types[types.length - 1]).toBe("run.completed")
    expect(events[events.length - 1]!.data.data.output).toBe("fin")
    const cost = events.find((e) => e.event === "run.cost_update")!.data.data
    expect(Object.keys(cost)).toEqual(expect.arrayContaining(["llm_cost_usd", "browser_cost_usd", "proxy_cost_usd", "total_cost_usd"]))

    const middle = Math.floor(ids.length / 2)
    const replay = await readSse(url, { ...authHeaders(), "last-event-id": String(middle) })
    expect(replay.events.filter((e) => e.event !== "stream.heartbeat").map((e) => e.id)).toEqual(ids.slice(middle))

    // Reconnecting after the terminal event ends at once: there is nothing more to send.
    const after = await readSse(url, { ...authHeaders(), "last-event-id": String(ids[ids.length - 1]) }, { timeoutMs: 10_000 })
    expect(after.status).toBe(200)
    expect(after.ended).toBe(true)
    expect(after.events.filter((e) => e.event !== "stream.heartbeat")).toEqual([])

    // The screenshot URL is signed, short-lived and needs no API key.
    const shot = events.find((e) => e.event === "run.screenshot")!.data.data.url as string
    const image = await service.fetch(`${service.url}${shot}`)
    expect(image.status).toBe(200)
    expect(image.headers.get("content-type")).toBe("image/jpeg")
    const forged = await service.fetch(`${service.url}${shot.replace(/signature=[^&]+/, "signature=forged")}`)
    expect(forged.status).toBe(403)
    expect((await forged.json()).code).toBe("invalid_signature")
  })

  it("a replay signs screenshot URLs afresh; the expired original answers 403 url_expired", async () => {
    model.setScript((_request, turn) =>
      turn === 0 ? { tool: "navigate", args: { url: `${site.url}/page/1` } } : { tool: "done", args: { output: "shots" } }
    )
    const { sid, rid } = await createSession({ instructions: "screenshots" })
    await waitForStatus(sid, rid, terminal)
    const url = `${service.url}${base()}/sessions/${sid}/runs/${rid}/events`
    const first = (await readSse(url, authHeaders())).events.filter((e) => e.event === "run.screenshot")
    expect(first.length).toBeGreaterThan(0)

    // Age the stored events by 16 minutes: their URLs as a replay an hour later would find them,
    // signed correctly (with the service's own secret) but past their expiry.
    const client = await embeddedDatabaseClient(service.dataDir)
    const aged: Array<string> = []
    try {
      const secret = (await client.query("SELECT value FROM service_secrets WHERE name = 'url_signing'")).rows[0].value as string
      const rows = (await client.query("SELECT id, data FROM run_events WHERE run_id = $1 AND type = 'run.screenshot'", [rid])).rows
      const expires = Math.floor(Date.now() / 1000) - 60
      for (const row of rows) {
        const id = /\/v1\/screenshots\/([^?]+)\?/.exec(row.data.url)![1]!
        const old = `/v1/screenshots/${id}?expires=${expires}&signature=${createHmac("sha256", secret).update(`screenshot:${id}:${expires}`).digest("base64url")}`
        aged.push(old)
        await client.query("UPDATE run_events SET data = $1 WHERE run_id = $2 AND id = $3", [{ ...row.data, url: old }, rid, row.id])
      }
    } finally {
      await client.end()
    }
    const expired = await service.fetch(`${service.url}${aged[0]}`)
    expect(expired.status).toBe(403)
    expect((await expired.json()).code).toBe("url_expired")

    const replayed = (await readSse(url, authHeaders())).events.filter((e) => e.event === "run.screenshot")
    expect(replayed.map((e) => e.id)).toEqual(first.map((e) => e.id))
    for (const [index, event] of replayed.entries()) {
      const fresh = event.data.data.url as string
      expect(fresh).not.toBe(aged[index])
      expect(Number(new URL(fresh, service.url).searchParams.get("expires"))).toBeGreaterThan(Date.now() / 1000 + 14 * 60)
      const image = await service.fetch(`${service.url}${fresh}`)
      expect(image.status).toBe(200)
      expect(image.headers.get("content-type")).toBe("image/jpeg")
    }
  })

  it("the session carries the four cost fields as decimal strings exact to the micro-dollar (at least two decimals)", async () => {
    model.setScript(() => ({ tool: "done", args: { output: 1 } }))
    const { sid, rid } = await createSession({ instructions: "cost" })
    await waitForStatus(sid, rid, terminal)
    const session = (await service.request("GET", `${base()}/sessions/${sid}`)).json
    for (const field of ["llm_cost_usd", "browser_cost_usd", "proxy_cost_usd", "total_cost_usd"]) expect(session[field]).toMatch(/^\d+\.\d{2,6}$/)
    expect(Number(session.total_cost_usd)).toBeGreaterThan(0)
    // Each step's model tokens are an event of their own (the scripted model reports 20,000 in, 500 out).
    const { events } = await readSse(`${service.url}${base()}/sessions/${sid}/runs/${rid}/events`, authHeaders(), {
      stopAfter: (seen) => seen.some((e) => e.event === "run.completed")
    })
    expect(events.filter((e) => e.event === "run.usage").map((e) => e.data.data)).toEqual([{ step: 1, input_tokens: 20_000, output_tokens: 500 }])
  })
})

describe("callbacks", () => {
  it("posts the terminal run to callback_url, signed the Standard Webhooks way", async () => {
    const received: Array<{ headers: Record<string, string>; body: string }> = []
    let attempts = 0
    const receiver = createServer((req, res) => {
      let body = ""
      req.on("data", (c) => (body += c))
      req.on("end", () => {
        attempts++
        // The first attempt fails, so delivery has to retry.
        if (attempts === 1) return res.writeHead(503).end()
        received.push({ headers: req.headers as Record<string, string>, body })
        res.writeHead(204).end()
      })
    })
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r))
    const callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
    model.setScript(() => ({ tool: "done", args: { output: { ok: true } } }))
    const { sid, rid } = await createSession({ instructions: "callback", callback_url: callbackUrl })
    await waitForStatus(sid, rid, terminal)
    await eventually("the callback delivered", () => received.length > 0 ? true : undefined, { timeoutMs: 10_000 })
    receiver.close()
    expect(received).toHaveLength(1)
    const secret = (await service.request("GET", `/v1/projects/${service.projectId}/webhook_secret`)).json.secret
    const payload = new Webhook(secret).verify(received[0]!.body, received[0]!.headers) as any
    // A do_anything.run.completed body of the document's webhooks section, with its headers.
    expect(checkWebhookDelivery(received[0]!.headers, received[0]!.body).problems).toEqual([])
    expect(payload.type).toBe("run.completed")
    expect(payload.data).toMatchObject({ id: rid, status: "done", output: { ok: true } })
    expect(() => new Webhook(secret).verify(received[0]!.body.replace("true", "false"), received[0]!.headers)).toThrow()
  })
})

describe("convention B", () => {
  it("flat runs: 202 with the run envelope, succeeded as status and done as terminal_reason", async () => {
    model.setScript(() => ({ tool: "done", args: { output: "flat" } }))
    const created = await service.request("POST", `/api/v1/projects/${service.projectId}/do_anything/runs`, { body: { instructions: "flat", keep_alive: false } })
    expect(created.status).toBe(202)
    expect(created.json.run_id).toMatch(/^run_/)
    expect(created.json.session_id).toMatch(/^sess_/)
    const run = await waitForRunStatus(service, `/api/v1/projects/${service.projectId}/do_anything/runs/${created.json.run_id}`, ["succeeded", "failed", "canceled"])
    expect(run.status).toBe("succeeded")
    expect(run.terminal_reason).toBe("done")
    // The same record read through Convention A.
    expect((await getRun(created.json.session_id, created.json.run_id)).status).toBe("done")
  })

  it("404 for a run of another project or an unknown id", async () => {
    const response = await service.request("GET", `/api/v1/projects/${service.projectId}/do_anything/runs/run_unknown`)
    expect(response.status).toBe(404)
    expect(response.json.code).toBe("run_not_found")
  })
})

describe("validation", () => {
  it("enforces the run creation limits", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ instructions: "x".repeat(10_001) }, "instructions"],
      [{ instructions: "x", max_duration_minutes: 0 }, "max_duration_minutes"],
      [{ instructions: "x", max_duration_minutes: 10_081 }, "max_duration_minutes"],
      [{}, "instructions"]
    ]
    for (const [body, field] of cases) {
      const response = await service.request("POST", `${base()}/sessions`, { body })
      expect(response.status, field).toBe(422)
      expect(response.json.extra.errors[0].loc).toEqual(["body", field])
    }
    const feedback = await service.request("POST", `${base()}/sessions/sess_x/runs/run_x/feedback`, { body: { rating: 6 } })
    expect(feedback.status).toBe(422)
  })

  it("feedback is stored on the run", async () => {
    model.setScript(() => ({ tool: "done", args: { output: 1 } }))
    const { sid, rid } = await createSession({ instructions: "fb" })
    await waitForStatus(sid, rid, terminal)
    const response = await service.request("POST", `${base()}/sessions/${sid}/runs/${rid}/feedback`, { body: { rating: 5, thumbs: "up", feedback_text: "great" } })
    expect(response.status).toBe(200)
    const unknown = await service.request("POST", `${base()}/sessions/${sid}/runs/${rid}/feedback`, { body: { rating: 5, extra: 1 } })
    expect(unknown.status).toBe(422)
  })
})
