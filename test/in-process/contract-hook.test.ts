/**
 * The contract hook itself (test/support/contract-hook.ts) against a small document: it must catch
 * a body that breaks its schema, a status the operation does not declare, a path the document
 * does not have, a content type not declared, a missing required header and a header sent but not
 * declared, and pass what agrees,
 * so it cannot silently pass everything. The process-level suites run it on every response.
 */
import { describe, expect, it } from "vitest"
import { ContractDocument, mismatchOf } from "../support/contract-hook.ts"

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
})
