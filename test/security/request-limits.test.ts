/**
 * Hostile and careless input at the edge of the service: oversized bodies, NUL bytes and lone
 * surrogates, deep JSON, malformed percent-encoding, slow clients, key guessing, SSE clients that
 * never read, and the per-key session cap under 50 parallel creates. Each must be refused with the
 * envelope, change nothing, and leave the service up.
 */
import { request as httpRequest } from "node:http"
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { checkExchange, checkRawHttp } from "../support/contract-hook.ts"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"
import { TERMINAL, waitForRunStatus } from "../support/runs.ts"

let model: ScriptedModel
let service: Service

const sessions = () => `/v1/projects/${service.projectId}/do_anything/sessions`
const sessionCount = async () => {
  const db = await embeddedDatabaseClient(service.dataDir)
  try {
    return Number((await db.query("SELECT count(*) AS n FROM sessions")).rows[0].n)
  } finally {
    await db.end()
  }
}
const expectEnvelope = (body: any, code: string) => {
  expect(body).toMatchObject({ code, detail: expect.any(String), extra: expect.any(Object) })
}

beforeAll(async () => {
  // The agent finishes at once with a large output, so the run's event log is big to replay.
  const bigOutput = "x".repeat(4 * 1024 * 1024)
  model = await startScriptedModel(() => ({ tool: "done", args: { output: bigOutput } }))
  service = await startService({
    env: {
      WA_MODEL_BASE_URL: model.baseUrl,
      WA_MODEL: "scripted",
      WA_HEADERS_TIMEOUT_SECONDS: "1",
      WA_REQUEST_BODY_IDLE_SECONDS: "2",
      WA_SSE_STALL_SECONDS: "1",
      WA_AUTH_FAILURES_PER_MINUTE: "5",
      WA_MAX_CONCURRENT_SESSIONS: "5",
      WA_STEP_SCREENSHOTS: "false",
      WA_DRAIN_SECONDS: "1"
    }
  })
}, 120_000)
afterAll(async () => {
  await stopAndClean(service)
  await model?.close()
})

describe("request bodies", () => {
  it("a body over the limit is refused with 413 from its Content-Length, before it is read", async () => {
    const before = await sessionCount()
    const response = await service.request("POST", sessions(), { rawBody: `{"instructions":"${"a".repeat(2 * 1024 * 1024)}"}` })
    expect(response.status).toBe(413)
    expectEnvelope(response.json, "payload_too_large")
    expect(await sessionCount()).toBe(before)
  })

  it("a body of a type the operation does not take is refused with 415 in the JSON envelope, and nothing is created", async () => {
    const before = await sessionCount()
    const response = await service.fetch(service.url + sessions(), {
      method: "POST",
      headers: { authorization: `Bearer ${service.apiKey}`, "content-type": "text/plain" },
      body: "open example.com"
    })
    expect(response.status).toBe(415)
    expect(response.headers.get("content-type")).toContain("application/json")
    expectEnvelope(await response.json(), "unsupported_media_type")
    expect(await sessionCount()).toBe(before)
  })

  it("a chunked body is refused with 413 once it passes the limit", async () => {
    const url = new URL(service.url + sessions())
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest({
        host: url.hostname, port: url.port, path: url.pathname, method: "POST",
        headers: { authorization: `Bearer ${service.apiKey}`, "content-type": "application/json", "transfer-encoding": "chunked" }
      }, (res) => {
        let text = ""
        res.on("data", (c) => (text += c))
        res.on("end", () => {
          const headers = new Headers(Object.entries(res.headers).flatMap(([name, value]) => value === undefined ? [] : [[name, String(value)] as [string, string]]))
          checkExchange(service.url, { method: "POST", pathname: url.pathname, status: res.statusCode ?? 0, headers, text })
            .then(() => resolve({ status: res.statusCode ?? 0, body: text }), reject)
        })
      })
      req.on("error", reject)
      const chunk = "a".repeat(64 * 1024)
      // Up to 4 MB, stopping once the server has answered.
      let sent = 0
      const pump = () => {
        while (sent < 64 && req.write(chunk)) sent++
        if (sent < 64) req.once("drain", () => { sent++; pump() })
        else req.end()
      }
      req.write("{\"instructions\":\"")
      pump()
    })
    expect(status).toBe(413)
    expectEnvelope(JSON.parse(body), "payload_too_large")
  })

  it.each([
    ["NUL", String.raw`{"instructions":"a\u0000b"}`],
    ["a lone high surrogate", String.raw`{"instructions":"a\ud800b"}`],
    ["a lone low surrogate", String.raw`{"instructions":"a\udc00b"}`],
    ["NUL in a key", String.raw`{"instructions":"ok","output_schema":{"a\u0000":1}}`],
    ["NUL deep in output_schema", String.raw`{"instructions":"ok","output_schema":{"type":"object","properties":{"x":{"description":"\u0000"}}}}`]
  ])("%s in a JSON string is a 422 naming the field, and nothing is created", async (_, rawBody) => {
    const before = await sessionCount()
    const response = await service.request("POST", sessions(), { rawBody })
    expect(response.status).toBe(422)
    expectEnvelope(response.json, "validation_error")
    expect(response.json.extra.errors[0].loc[0]).toBe("body")
    expect(response.json.extra.errors[0].type).toBe("invalid_character")
    expect(await sessionCount()).toBe(before)
  })

  it("a valid surrogate pair (an emoji) is accepted", async () => {
    const response = await service.request("POST", sessions(), {
      rawBody: String.raw`{"instructions":"say \ud83d\ude00","keep_alive":false}`
    })
    expect(response.status).toBe(201)
  })

  it("an output_schema over 64 KiB is a 422 naming it", async () => {
    const before = await sessionCount()
    const big = { type: "object", description: "d".repeat(70 * 1024) }
    const response = await service.request("POST", sessions(), { body: { instructions: "x", output_schema: big } })
    expect(response.status).toBe(422)
    expect(response.json.extra.errors[0].loc).toEqual(["body", "output_schema"])
    expect(await sessionCount()).toBe(before)
  })

  it.each([5_000, 100])("JSON nested %i deep in output_schema is a 422 (the limit is 64)", async (depth) => {
    const before = await sessionCount()
    const nested = `${"{\"a\":".repeat(depth)}1${"}".repeat(depth)}`
    const response = await service.request("POST", sessions(), { rawBody: `{"instructions":"x","output_schema":${nested}}` })
    expect(response.status).toBe(422)
    expect(response.json.extra.errors[0].type).toBe("too_deep")
    expect(await sessionCount()).toBe(before)
    // The session list still renders (a stored deep schema used to break every client's list).
    expect((await service.request("GET", sessions())).status).toBe(200)
  })
})

describe("request targets", () => {
  it.each([
    ["NUL in a path id", () => `${sessions()}/%00`],
    ["NUL in a cursor", () => `${sessions()}?cursor=%00`],
    ["a lone surrogate in a path id", () => `${sessions()}/%ED%A0%80`],
    ["malformed percent-encoding", () => `${sessions()}/%E0%A4%A`],
    ["a truncated escape", () => `${sessions()}/abc%`]
  ])("%s is a 400 in the envelope", async (_, path) => {
    const response = await service.request("GET", path())
    expect(response.status).toBe(400)
    expectEnvelope(response.json, "bad_request")
  })
})

describe("slow and hostile clients", () => {
  it("a client that never finishes its headers gets a 408 in the envelope", async () => {
    const url = new URL(service.url)
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(Number(url.port), url.hostname, () => socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n"))
      let text = ""
      socket.on("data", (c) => (text += c))
      socket.on("close", () => resolve(text))
    }).then(async (text) => (await checkRawHttp(service.url, "GET", "/healthz", text, "malformed-framing"), text))
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
    expectEnvelope(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)), "request_timeout")
  })

  /**
   * Sends a request whose body (Content-Length) comes a byte every `everyMs`; after `stopAfter`
   * bytes the client sends nothing more. Resolves with what the server sent before it closed.
   */
  const dribble = (body: string, everyMs: number, stopAfter = body.length) => {
    const url = new URL(service.url)
    return new Promise<string>((resolve) => {
      let answer = ""
      let sent = 0
      let timer: NodeJS.Timeout | undefined
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(
          `POST /v1/projects/${service.projectId}/api_keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${service.apiKey}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`
        )
        timer = setInterval(() => {
          if (sent < stopAfter && answer === "") socket.write(body[sent++]!)
        }, everyMs)
      })
      socket.on("data", (chunk) => (answer += chunk))
      socket.on("error", () => {})
      socket.on("close", () => {
        clearInterval(timer)
        resolve(answer)
      })
    }).then(async (answer) => {
      // A body that stops short of its Content-Length is not a well-framed request.
      await checkRawHttp(service.url, "POST", `/v1/projects/${service.projectId}/api_keys`, answer, stopAfter < body.length ? "malformed-framing" : undefined)
      return answer
    })
  }
  const keyNamed = async (name: string) => {
    const listed = await service.request("GET", `/v1/projects/${service.projectId}/api_keys?limit=100`)
    return listed.json.items.find((key: { name: string | null }) => key.name === name)
  }

  it("a body still arriving is never cut: a byte every 250 ms for 4 times the idle bound (2 s) is answered", async () => {
    // 36 bytes, one each 250 ms: about 9 s in all, with no gap near the bound.
    const body = `{"name":"slow-but-steady"${" ".repeat(10)}}`
    const answer = await dribble(body, 250)
    expect(answer).toMatch(/^HTTP\/1\.1 201 /)
    expect(await keyNamed("slow-but-steady")).toBeDefined()
  }, 60_000)

  it("a body that stops arriving is answered 408 in the envelope after the idle bound, and nothing is created", async () => {
    const body = `{"name":"stalled-body"}`
    const answer = await dribble(body, 100, 10)
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
    expect(answer.toLowerCase()).toContain("connection: close")
    const envelope = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))
    expectEnvelope(envelope, "request_timeout")
    expect(envelope.extra).toEqual({ idle_seconds: 2 })
    expect(await keyNamed("stalled-body")).toBeUndefined()
    // The service is fine afterwards.
    expect((await service.request("GET", `/v1/projects/${service.projectId}/api_keys?limit=1`)).status).toBe(200)
  }, 60_000)

  it("an address guessing keys is answered 429 without a lookup; a valid key still works", async () => {
    const project = `/v1/projects/${service.projectId}/do_anything/sessions`
    const statuses: Array<number> = []
    for (let i = 0; i < 8; i++) {
      statuses.push((await service.request("GET", project, { key: `wa_${"x".repeat(28)}${i}` })).status)
    }
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401])
    expect(statuses.slice(5)).toEqual([429, 429, 429])
    const limited = await service.request("GET", project, { key: null })
    expect(limited.status).toBe(429)
    expectEnvelope(limited.json, "rate_limit_exceeded")
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0)
    expect((await service.request("GET", project)).status).toBe(200)
  })
})

describe("event streams", () => {
  it("a client that stops reading is disconnected; one that reads gets every event", async () => {
    const created = await service.request("POST", sessions(), { body: { instructions: "big output", keep_alive: false } })
    expect(created.status).toBe(201)
    const eventsPath = `${sessions()}/${created.json.id}/runs/${created.json.latest_run_id}/events`
    // Wait for the run to end, so the whole (large) log is there to replay.
    const run = await waitForRunStatus(service, `${sessions()}/${created.json.id}/runs/${created.json.latest_run_id}`, TERMINAL, { timeoutMs: 30_000 })
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    const reader = await service.fetch(service.url + eventsPath, { headers: { authorization: `Bearer ${service.apiKey}` } })
    const full = await reader.text()
    expect(full).toContain("event: run.completed")
    expect(full.length).toBeGreaterThan(4 * 1024 * 1024)
    // This client reads nothing for three seconds (the bound is one), then reads what is left.
    const url = new URL(service.url)
    const received = await new Promise<string>((resolve) => {
      let text = ""
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(`GET ${eventsPath} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${service.apiKey}\r\n\r\n`)
        socket.pause()
        setTimeout(() => socket.resume(), 3_000)
      })
      socket.on("data", (chunk) => (text += chunk))
      socket.on("close", () => resolve(text))
    }).then(async (text) => (await checkRawHttp(service.url, "GET", eventsPath, text), text))
    // The server dropped it: what was still queued for it never came, nor the end of the stream.
    expect(received.length).toBeLessThan(full.length)
    expect(received).not.toMatch(/\r\n0\r\n\r\n$/)
  }, 60_000)
})

describe("per-key session cap", () => {
  it("50 parallel creates against a cap of 5 open exactly 5 sessions", async () => {
    const db = await embeddedDatabaseClient(service.dataDir)
    await db.query("UPDATE sessions SET status = 'closed'")
    await db.end()
    // Runs wait for a person, so their sessions stay open.
    model.setScript(() => ({ tool: "ask_human", args: { prompt: "hold" } }))
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) =>
      service.request("POST", sessions(), { body: { instructions: `parallel ${i}` } })))
    const statuses = responses.map((r) => r.status)
    expect(statuses.filter((s) => s === 201)).toHaveLength(5)
    expect(statuses.filter((s) => s === 429)).toHaveLength(45)
    for (const refused of responses.filter((r) => r.status === 429)) {
      expect(refused.json.code).toBe("too_many_concurrent_sessions")
      expect(refused.json.extra).toMatchObject({ limit: 5 })
    }
    const open = (await service.request("GET", `${sessions()}?limit=100`)).json.items.filter((s: { status: string }) => s.status !== "closed")
    expect(open).toHaveLength(5)
  }, 60_000)
})
