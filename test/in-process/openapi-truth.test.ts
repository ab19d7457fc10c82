/**
 * The OpenAPI document tells the truth about what the server enforces (issue 27).
 *
 * The document is the one the server serves at /openapi.json (`OpenApi.fromApi(WebAgentApi)`),
 * and the enforcement is the endpoint's own schema, the one the router decodes every request with
 * before a handler runs: for every bound the document declares on a request field (body, query or
 * path: minLength/maxLength, minimum/maximum, minItems/maxItems), the value just outside is refused
 * at that field and the bound itself is not refused there. Strings are counted in code points, as
 * JSON Schema counts them (a string of emoji at the documented maximum passes).
 */
import { describe, expect, it } from "vitest"
import { Context, Exit, Schema } from "effect"
import { HttpApi, OpenApi } from "effect/http-api"
import type * as SchemaIssue from "effect/SchemaIssue"
import { WebAgentApi } from "../../src/http/api/api.ts"
import { fieldErrors } from "../../src/http/middleware/request-context.ts"

type Json = any
const doc: Json = OpenApi.fromApi(WebAgentApi)

const resolve = (schema: Json): Json => {
  if (schema?.$ref !== undefined) {
    const name = String(schema.$ref).replace("#/components/schemas/", "")
    return resolve(doc.components.schemas[name])
  }
  return schema
}

/** The branches of a field's schema that carry bounds (a nullable field is anyOf [T, null]). */
const branches = (schema: Json): Array<Json> => {
  const s = resolve(schema)
  if (s === undefined) return []
  if (Array.isArray(s.anyOf)) return s.anyOf.flatMap(branches)
  if (Array.isArray(s.oneOf)) return s.oneOf.flatMap(branches)
  if (Array.isArray(s.allOf)) return [Object.assign({}, ...s.allOf.map(resolve))]
  return [s]
}

interface Probe {
  readonly field: string
  readonly bound: string
  readonly refused: unknown
  readonly accepted: ReadonlyArray<unknown>
}

/** The values just outside and at each documented bound of one field. */
const probes = (field: string, schema: Json, asQuery: boolean): Array<Probe> => {
  const out: Array<Probe> = []
  const text = (n: number, unit = "a") => unit.repeat(n)
  const num = (n: number) => (asQuery ? String(n) : n)
  for (const s of branches(schema)) {
    if (s.type === "string" && s.enum === undefined && s.pattern === undefined && s.format === undefined) {
      if (typeof s.minLength === "number" && s.minLength > 0) {
        out.push({ field, bound: `minLength ${s.minLength}`, refused: text(s.minLength - 1), accepted: [text(s.minLength)] })
      }
      if (typeof s.maxLength === "number") {
        out.push({ field, bound: `maxLength ${s.maxLength}`, refused: text(s.maxLength + 1), accepted: [text(s.maxLength), text(s.maxLength, "😀")] })
      }
    }
    if ((s.type === "integer" || s.type === "number") && s.enum === undefined) {
      if (typeof s.minimum === "number") out.push({ field, bound: `minimum ${s.minimum}`, refused: num(s.minimum - 1), accepted: [num(s.minimum)] })
      if (typeof s.maximum === "number") out.push({ field, bound: `maximum ${s.maximum}`, refused: num(s.maximum + 1), accepted: [num(s.maximum)] })
    }
    if (s.type === "array" && !asQuery) {
      const item = resolve(s.items)
      // A valid item, so the array's own bound is what decides (an item's failure hides it).
      const sample = item?.type !== "string" || item.enum !== undefined || item.pattern !== undefined
        ? undefined
        : item.format === "uri" || /url/i.test(field)
        ? "https://example.com/"
        : "a".repeat(Math.max(1, item.minLength ?? 1))
      if (sample !== undefined) {
        if (typeof s.minItems === "number" && s.minItems > 0) {
          out.push({ field, bound: `minItems ${s.minItems}`, refused: Array(s.minItems - 1).fill(sample), accepted: [Array(s.minItems).fill(sample)] })
        }
        if (typeof s.maxItems === "number") {
          out.push({ field, bound: `maxItems ${s.maxItems}`, refused: Array(s.maxItems + 1).fill(sample), accepted: [Array(s.maxItems).fill(sample)] })
        }
      }
    }
  }
  return out
}

interface Case {
  readonly operation: string
  readonly kind: "Payload" | "Query" | "Params"
  readonly schema: Schema.Top
  readonly probe: Probe
}

const cases: Array<Case> = []
HttpApi.reflect(WebAgentApi, {
  onGroup: () => {},
  onEndpoint: ({ endpoint }) => {
    const path = endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}")
    const method = endpoint.method.toLowerCase()
    const operation = doc.paths[path]?.[method]
    if (operation === undefined) return
    const name = `${endpoint.method} ${path}`
    const json = resolve(operation.requestBody?.content?.["application/json"]?.schema)
    const payload = [...endpoint.payload.values()].find((entry) => entry.encoding._tag === "Json")
    if (json?.type === "object" && payload !== undefined && json.properties !== undefined) {
      for (const [field, schema] of Object.entries(json.properties)) {
        for (const probe of probes(field, schema, false)) cases.push({ operation: name, kind: "Payload", schema: payload.schemas[0], probe })
      }
    }
    for (const parameter of operation.parameters ?? []) {
      const schema = parameter.in === "query" ? endpoint.query : parameter.in === "path" ? endpoint.params : undefined
      if (schema === undefined) continue
      for (const probe of probes(parameter.name, parameter.schema, true)) {
        cases.push({ operation: name, kind: parameter.in === "query" ? "Query" : "Params", schema, probe })
      }
    }
  }
})

/** The `extra.errors[].loc` the server would answer for `value` at `field` (decoding as the router does). */
const refusalsAt = (c: Case, value: unknown): Array<string> => {
  const input = { [c.probe.field]: value }
  const exit = Schema.decodeUnknownExit(c.schema as Schema.Codec<unknown, unknown, never, never>)(input, { errors: "all" })
  if (Exit.isSuccess(exit)) return []
  const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  if (failure === undefined) throw new Error(`${c.operation}: decoding died`)
  const issue = (failure as unknown as { error: { issue: SchemaIssue.Issue } }).error.issue
  return fieldErrors(c.kind, issue)
    // At the field itself (an array's items have rules of their own the probe does not satisfy).
    .filter((error) => error.loc.length === 2 && error.loc[1] === c.probe.field && error.type !== "missing")
    .map((error) => `${error.loc.join(".")}: ${error.msg}`)
}

describe("every bound in /openapi.json is the one the server enforces", () => {
  it("finds the bounds of the document (and the ones issue 27 named among them)", () => {
    expect(cases.length).toBeGreaterThan(100)
    const named = (operation: string, field: string) => cases.filter((c) => c.operation === operation && c.probe.field === field).map((c) => c.probe.bound)
    expect(named("POST /v1/projects/{pid}/track/monitors", "intent")).toContain("minLength 4")
    expect(named("POST /v1/auth/login", "email")).toContain("minLength 3")
    expect(named("POST /v1/auth/password", "new_password")).toContain("minLength 8")
    expect(named("POST /v1/auth/password/reset", "new_password")).toContain("minLength 8")
    expect(named("POST /v1/invitations/accept", "token")).toContain("minLength 8")
  })

  it("refuses the value just outside each documented bound and accepts the bound itself", () => {
    const wrong: Array<string> = []
    for (const c of cases) {
      if (refusalsAt(c, c.probe.refused).length === 0) wrong.push(`${c.operation} ${c.probe.field} (${c.probe.bound}): the value outside is accepted`)
      for (const value of c.probe.accepted) {
        const refusals = refusalsAt(c, value)
        if (refusals.length > 0) wrong.push(`${c.operation} ${c.probe.field} (${c.probe.bound}): the bound is refused: ${refusals.join("; ")}`)
      }
    }
    expect(wrong).toEqual([])
  })
})

describe("every enum query parameter is enforced: a value outside its list is refused (422 validation_error), each listed value accepted", () => {
  it("status, kind, ... filters of every list: the router refuses bogus_value at query.<name> and takes each documented value", () => {
    const wrong: Array<string> = []
    const checked: Array<string> = []
    HttpApi.reflect(WebAgentApi, {
      onGroup: () => {},
      onEndpoint: ({ endpoint }) => {
        const path = endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}")
        const operation = doc.paths[path]?.[endpoint.method.toLowerCase()]
        if (operation === undefined || endpoint.query === undefined) return
        for (const parameter of operation.parameters ?? []) {
          const values = parameter.in === "query" ? branches(parameter.schema).flatMap((b) => b.enum ?? []) : []
          if (values.length === 0) continue
          const name = `${endpoint.method} ${path} ?${parameter.name}`
          checked.push(name)
          const c: Case = {
            operation: name,
            kind: "Query",
            schema: endpoint.query,
            probe: { field: parameter.name, bound: "enum", refused: "bogus_value", accepted: values }
          }
          if (refusalsAt(c, "bogus_value").length === 0) wrong.push(`${name}: bogus_value is accepted`)
          for (const value of values) {
            const refusals = refusalsAt(c, String(value))
            if (refusals.length > 0) wrong.push(`${name}: ${value} is refused: ${refusals.join("; ")}`)
          }
        }
      }
    })
    expect(wrong).toEqual([])
    // Among them the filters issue 27 named: DeepResearch's ?status on its three lists, the ledger's ?kind.
    expect(checked).toEqual(expect.arrayContaining([
      "GET /v1/projects/{pid}/deep_research/runs ?status",
      "GET /api/v1/projects/{pid}/deep_research/runs ?status",
      "GET /v1/deep_research ?status",
      "GET /v1/projects/{pid}/billing/usage ?kind"
    ]))
  })
})

describe("unknown body fields: one policy, the same in the document and on the wire", () => {
  it("every JSON body is documented closed (additionalProperties: false) and the router refuses {bogus: 1} at body.bogus", () => {
    const wrong: Array<string> = []
    let bodies = 0
    HttpApi.reflect(WebAgentApi, {
      onGroup: () => {},
      onEndpoint: ({ endpoint, mergedAnnotations }) => {
        const payload = [...endpoint.payload.values()].find((entry) => entry.encoding._tag === "Json")
        if (payload === undefined) return
        const path = endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}")
        const name = `${endpoint.method} ${path}`
        const json = resolve(doc.paths[path]?.[endpoint.method.toLowerCase()]?.requestBody?.content?.["application/json"]?.schema)
        if (json === undefined) return
        bodies++
        const closed = (branches(json).length > 0 ? branches(json) : [json]).every((b) => b.type !== "object" || b.additionalProperties === false)
        if (!closed) wrong.push(`${name}: the document leaves the body open`)
        // The options the router decodes this body with (HttpApi.PayloadParseOptions of the endpoint, its group, the API).
        const options = Context.getOrUndefined(mergedAnnotations, HttpApi.PayloadParseOptions)
        const exit = Schema.decodeUnknownExit(payload.schemas[0] as Schema.Codec<unknown, unknown, never, never>)({ bogus: 1 }, options)
        const issue = Exit.isFailure(exit)
          ? (exit.cause.reasons.find((reason) => reason._tag === "Fail") as unknown as { error: { issue: SchemaIssue.Issue } } | undefined)?.error.issue
          : undefined
        const refused = issue !== undefined && fieldErrors("Payload", issue).some((e) => e.loc.join(".") === "body.bogus" && e.type === "extra_forbidden")
        if (!refused) wrong.push(`${name}: {bogus: 1} is not refused at body.bogus`)
      }
    })
    expect(bodies).toBeGreaterThan(50)
    expect(wrong).toEqual([])
  })
})

describe("transport headers in the document", () => {
  const operations = Object.entries<Record<string, Json>>(doc.paths).flatMap(([path, ops]) =>
    Object.entries<Json>(ops).filter(([, op]) => op?.responses !== undefined).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, method, op })))
  const declares = (op: Json, header: string) => (op.parameters ?? []).some((p: Json) => p.in === "header" && p.name === header)

  it("Idempotency-Key is declared on every write the Idempotency middleware serves, and only on writes", () => {
    const served = new Set<string>()
    HttpApi.reflect(WebAgentApi, {
      onGroup: () => {},
      onEndpoint: ({ endpoint, middleware }) => {
        if (["POST", "PUT", "PATCH", "DELETE"].includes(endpoint.method) && [...middleware].some((m) => (m as { key?: string }).key === "wa/http/Idempotency")) {
          served.add(`${endpoint.method} ${endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}")}`)
        }
      }
    })
    expect(served.size).toBeGreaterThan(60)
    const writes = operations.filter((o) => ["post", "put", "patch", "delete"].includes(o.method))
    expect(writes.filter((o) => served.has(o.name) && !declares(o.op, "Idempotency-Key")).map((o) => o.name)).toEqual([])
    expect(operations.filter((o) => !served.has(o.name) && declares(o.op, "Idempotency-Key")).map((o) => o.name)).toEqual([])
    // The writes without it, each for a reason (README): PUTs are idempotent by themselves, the
    // Stripe webhook is deduplicated by Stripe's event id, the sign-in and delegation-consent steps
    // have no caller to keep a key for.
    expect(writes.filter((o) => !served.has(o.name)).map((o) => o.name).sort()).toEqual([
      "POST /api/v3/eak/delegations",
      "POST /api/v3/eak/delegations/complete",
      "POST /v1/auth/email/verification",
      "POST /v1/auth/email/verify",
      "POST /v1/auth/login",
      "POST /v1/auth/logout",
      "POST /v1/auth/password",
      "POST /v1/auth/password/forgot",
      "POST /v1/auth/password/reset",
      "POST /v1/billing/stripe/webhook",
      "POST /v1/invitations/accept",
      "PUT /v1/projects/{pid}/billing/budget",
      "PUT /v1/projects/{pid}/workspaces/{wid}/files/{name}"
    ])
  })

  it("every event stream declares Last-Event-ID (a reconnect resumes after it)", () => {
    const streams = operations.filter((o) => o.op.responses["200"]?.content?.["text/event-stream"] !== undefined)
    expect(streams.length).toBeGreaterThan(8)
    expect(streams.filter((o) => !declares(o.op, "last-event-id") && !declares(o.op, "Last-Event-ID")).map((o) => o.name)).toEqual([])
  })

  it("every 429 declares Retry-After (required) and the RateLimit headers", () => {
    const limited = operations.filter((o) => o.op.responses["429"] !== undefined)
    expect(limited.length).toBeGreaterThan(100)
    for (const { name, op } of limited) {
      const headers = op.responses["429"].headers ?? {}
      expect({ name, retryAfter: headers["Retry-After"]?.required, type: headers["Retry-After"]?.schema?.type }).toEqual({ name, retryAfter: true, type: "integer" })
      expect(Object.keys(headers)).toEqual(expect.arrayContaining(["RateLimit", "RateLimit-Policy"]))
    }
  })
})
