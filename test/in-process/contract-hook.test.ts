/**
 * The contract hook itself (test/support/contract-hook.ts) against a small document: it must catch
 * a body that breaks its schema, a status the operation does not declare, a path the document
 * does not have, a content type not declared, a missing required header and a header sent but not
 * declared, and pass what agrees,
 * so it cannot silently pass everything. The process-level suites run it on every response; the
 * ways they get one (`contractFetch` under `service.fetch`, the SDK and readSse, `checkRawHttp`
 * for raw sockets) are tried here against a real HTTP server serving the small document.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "vitest"
import { checkRawHttp, ContractDocument, contractFetch, mismatchOf } from "../support/contract-hook.ts"
import { startContractProxy } from "../support/contract-proxy.ts"

const envelope = { $ref: "#/components/schemas/Envelope" }
const doc = {
  openapi: "3.1.0",
  info: { title: "small", version: "1" },
  paths: {
    "/v1/things/{id}": {
      get: {
        responses: {
          "200": {
            description: "ok",
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  properties: {
                    id: { type: "string" },
                    status: { type: "string", enum: ["queued", "done"] },
                    created_at: { type: "string", format: "date-time" }
                  },
                  required: ["id", "status"],
                  additionalProperties: false
                }
              }
            }
          },
          "404": { description: "not found", content: { "application/json": { schema: envelope } } },
          "429": {
            description: "slow down",
            content: { "application/json": { schema: envelope } },
            headers: {
              "Retry-After": { required: true, schema: { type: "integer", minimum: 0 } },
              "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" }
            }
          }
        }
      }
    },
    "/v1/delegations/{grant_id}": {
      delete: { responses: { "204": { description: "revoked" } } }
    },
    "/v1/things/special": {
      get: { responses: { "204": { description: "nothing" } } }
    },
    "/v1/things/{id}/events": {
      get: { responses: { "200": { description: "stream", content: { "text/event-stream": { schema: { type: "string" } } } } } }
    }
  },
  components: {
    headers: { "X-Request-Id": { required: true, schema: { type: "string", minLength: 1 } } },
    schemas: {
      Envelope: {
        type: "object",
        properties: { code: { type: "string" }, detail: { type: "string" }, extra: { type: "object" } },
        required: ["code", "detail", "extra"],
        additionalProperties: false
      }
    }
  }
}

const contract = new ContractDocument(doc)
const json = (value: unknown) => JSON.stringify(value)
const headers = (entries: Record<string, string> = {}) => new Headers({ "content-type": "application/json", ...entries })
const problemsOf = (method: string, pathname: string, status: number, text: string, h = headers()) =>
  mismatchOf(contract, { method, pathname, status, headers: h, text })?.problems ?? []

describe("contract hook", () => {
  it("passes responses the document allows", () => {
    expect(problemsOf("GET", "/v1/things/t1?x=1", 200, json({ id: "t1", status: "done", created_at: "2026-01-01T00:00:00Z" }))).toEqual([])
    expect(problemsOf("GET", "/v1/things/t1", 404, json({ code: "not_found", detail: "no", extra: {} }))).toEqual([])
    expect(problemsOf("GET", "/v1/things/t1", 429, json({ code: "rate_limit_exceeded", detail: "no", extra: {} }), headers({ "retry-after": "3", "x-request-id": "r1" }))).toEqual([])
    expect(problemsOf("GET", "/v1/things/t1/events", 200, "event: x\ndata: {}\n\n", new Headers({ "content-type": "text/event-stream" }))).toEqual([])
    // A literal segment wins over a parameter: /special is its own operation (204, no body).
    expect(problemsOf("GET", "/v1/things/special", 204, "", new Headers())).toEqual([])
    // No such route: the server's own 404 in the envelope; the document's pages that are not the API.
    expect(problemsOf("GET", "/v1/nothing/here", 404, json({ code: "not_found", detail: "no route", extra: {} }))).toEqual([])
    expect(problemsOf("GET", "/console/assets/app.js", 200, "x", new Headers({ "content-type": "text/javascript" }))).toEqual([])
    // A page wins over a template it would fall under (the consent page is HTML, not /v1/delegations/{grant_id}).
    expect(problemsOf("GET", "/v1/delegations/consent?grant_id=g1", 200, "<html>", new Headers({ "content-type": "text/html" }))).toEqual([])
    expect(problemsOf("DELETE", "/v1/things/t1", 405, json({ code: "method_not_allowed", detail: "no", extra: {} }))).toEqual([])
  })

  it("catches a body that breaks the schema: a field not declared, an enum value, a format, a required field", () => {
    const extra = problemsOf("GET", "/v1/things/t1", 200, json({ id: "t1", status: "done", bogus: 1 }))
    expect(extra.join("\n")).toMatch(/additional properties \(bogus\)/)
    expect(problemsOf("GET", "/v1/things/t1", 200, json({ id: "t1", status: "succeeded" })).join("\n")).toMatch(/\/status must be equal to one of the allowed values/)
    expect(problemsOf("GET", "/v1/things/t1", 200, json({ id: "t1", status: "done", created_at: "yesterday" })).join("\n")).toMatch(/\/created_at must match format "date-time"/)
    expect(problemsOf("GET", "/v1/things/t1", 200, json({ status: "done" })).join("\n")).toMatch(/must have required property 'id'/)
    // Refs into components resolve: an error body that is not the envelope.
    expect(problemsOf("GET", "/v1/things/t1", 404, json({ error: "nope" })).join("\n")).toMatch(/must have required property 'code'/)
    expect(problemsOf("GET", "/v1/things/t1", 200, "not json").join("\n")).toMatch(/not JSON/)
  })

  it("catches a status the operation does not declare", () => {
    expect(problemsOf("GET", "/v1/things/t1", 409, json({ code: "conflict", detail: "no", extra: {} }))).toEqual([
      expect.stringMatching(/^status 409 is not declared \(declared: 200, 404, 429\)/)
    ])
    expect(problemsOf("GET", "/v1/things/t1", 500, json({ code: "internal_error", detail: "no", extra: {} }))[0]).toMatch(/status 500 is not declared/)
  })

  it("catches a path or method the document does not have", () => {
    expect(problemsOf("GET", "/v1/undocumented", 200, json({ ok: true }))).toEqual(["the path is not in the document (answered 200)"])
    expect(problemsOf("POST", "/v1/things/t1", 201, json({ id: "t1" }))).toEqual(["the method is not in the document for this path (answered 201)"])
    // A 404 for an unknown path must still be the envelope.
    expect(problemsOf("GET", "/v1/undocumented", 404, "Not Found", new Headers({ "content-type": "text/plain" }))[0]).toMatch(/not the error envelope/)
  })

  it("catches a content type or a body not declared, and a required header missing or invalid", () => {
    expect(problemsOf("GET", "/v1/things/t1/events", 200, json({}))[0]).toMatch(/content type application\/json is not declared \(declared: text\/event-stream\)/)
    expect(problemsOf("GET", "/v1/things/special", 204, json({ id: "x" }))[0]).toMatch(/a body is sent .* where the document declares none/)
    const limited = json({ code: "rate_limit_exceeded", detail: "no", extra: {} })
    expect(problemsOf("GET", "/v1/things/t1", 429, limited, headers({ "x-request-id": "r1" }))).toEqual(["the required header Retry-After is missing"])
    expect(problemsOf("GET", "/v1/things/t1", 429, limited, headers({ "retry-after": "soon", "x-request-id": "r1" }))[0]).toMatch(/the header Retry-After: "soon" does not validate/)
    // A header declared through #/components/headers: required, and its schema holds.
    expect(problemsOf("GET", "/v1/things/t1", 429, limited, headers({ "retry-after": "3" }))).toEqual(["the required header X-Request-Id is missing"])
    expect(problemsOf("GET", "/v1/things/t1", 429, limited, headers({ "retry-after": "3", "x-request-id": "" }))[0]).toMatch(/the header X-Request-Id: "" does not validate/)
  })

  it("catches a header sent that is neither declared nor plain HTTP", () => {
    const thing = json({ id: "t1", status: "done" })
    expect(problemsOf("GET", "/v1/things/t1", 200, thing, headers({ "x-bogus": "1", "cache-control": "no-store" }))).toEqual(["the header x-bogus is sent but not declared"])
  })

  it("checks an event stream whose body was not read by its status, content type and headers", () => {
    const stream = new Headers({ "content-type": "text/event-stream" })
    expect(mismatchOf(contract, { method: "GET", pathname: "/v1/things/t1/events", status: 200, headers: stream, text: undefined })).toBeUndefined()
    expect(mismatchOf(contract, { method: "GET", pathname: "/v1/things/t1", status: 200, headers: stream, text: undefined })?.problems[0])
      .toMatch(/content type text\/event-stream is not declared/)
    expect(mismatchOf(contract, { method: "GET", pathname: "/v1/things/t1/events", status: 201, headers: stream, text: undefined })?.problems[0])
      .toMatch(/status 201 is not declared/)
  })

  it("matches a path with repeated slashes as the router does, and holds refusals before routing to the envelope", () => {
    expect(problemsOf("GET", "//v1/things//t1", 200, json({ id: "t1", status: "done" }))).toEqual([])
    expect(problemsOf("GET", "/v1/nothing/%E0%A4%A", 400, json({ code: "bad_request", detail: "bad", extra: {} }))).toEqual([])
    expect(problemsOf("GET", "/v1/nothing/x", 414, json({ code: "uri_too_long", detail: "long", extra: {} }))).toEqual([])
    expect(problemsOf("GET", "/v1/nothing/x", 414, json({ code: "not_found", detail: "long", extra: {} }))[0]).toMatch(/code is "not_found", not uri_too_long/)
    expect(problemsOf("GET", "/v1/nothing/x", 400, "bad", new Headers({ "content-type": "text/plain" }))[0]).toMatch(/not the error envelope/)
  })

  it("contractFetch and checkRawHttp hold a real server's answers to its document, and fail on a mismatch", async () => {
    const answers: Record<string, { status: number; type: string; body: string }> = {
      "/openapi.json": { status: 200, type: "application/json", body: json(doc) },
      "/v1/things/good": { status: 200, type: "application/json", body: json({ id: "good", status: "done" }) },
      "/v1/things/bad": { status: 200, type: "application/json", body: json({ id: "bad", status: "succeeded" }) },
      "/v1/things/good/events": { status: 200, type: "text/event-stream", body: "event: x\ndata: {}\n\n" },
      "/v1/things/bad/events": { status: 200, type: "application/json", body: json({}) }
    }
    const server = createServer((request, response) => {
      const answer = answers[request.url ?? ""] ?? { status: 404, type: "application/json", body: json({ code: "not_found", detail: "no", extra: {} }) }
      response.writeHead(answer.status, { "content-type": answer.type })
      response.end(answer.body)
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      const checked = contractFetch(base)
      const good = await checked("/v1/things/good")
      // The caller still reads the body (the hook read a clone).
      expect(await good.json()).toEqual({ id: "good", status: "done" })
      await expect(checked(`${base}/v1/things/bad`)).rejects.toThrow(/contract hook: GET \/v1\/things\/bad answered 200.*\n.*\/status must be equal to one of the allowed values/)
      const stream = await checked("/v1/things/good/events")
      expect(await stream.text()).toContain("event: x")
      await expect(checked("/v1/things/bad/events")).rejects.toThrow(/content type application\/json is not declared/)
      // Another origin (a fixture site, a proxy) is not the service: not checked.
      await expect(contractFetch("http://127.0.0.1:1")(`${base}/v1/things/bad`)).resolves.toHaveProperty("status", 200)

      const raw = (body: string) => `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`
      await expect(checkRawHttp(base, "GET", "/v1/things/good", raw(json({ id: "good", status: "done" })))).resolves.toBeUndefined()
      await expect(checkRawHttp(base, "GET", "/v1/things/bad", raw(json({ id: "bad", status: "succeeded" })))).rejects.toThrow(/allowed values/)
      // Only a named exemption lets it pass.
      await expect(checkRawHttp(base, "GET", "/v1/things/bad", raw(json({ id: "bad", status: "succeeded" })), "malformed-framing")).resolves.toBeUndefined()

      // The proxy for subprocess clients passes answers through unchanged and keeps the mismatches.
      const proxy = await startContractProxy(base)
      try {
        expect(await (await fetch(`${proxy.url}/v1/things/good`)).json()).toEqual({ id: "good", status: "done" })
        expect(await (await fetch(`${proxy.url}/v1/things/good/events`)).text()).toContain("event: x")
        expect(proxy.takeMismatches()).toEqual([])
        expect((await (await fetch(`${proxy.url}/v1/things/bad`)).json()).status).toBe("succeeded")
        expect(proxy.takeMismatches()).toEqual([expect.stringMatching(/GET \/v1\/things\/bad answered 200/)])
        expect(proxy.takeMismatches()).toEqual([])
      } finally {
        await proxy.close()
      }
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
