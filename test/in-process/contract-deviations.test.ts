/**
 * Small deviations of the contract (issue 27), each against the view or schema the server uses
 * and the document it serves (`OpenApi.fromApi(WebAgentApi)`, the /openapi.json body).
 */
import { describe, expect, it } from "vitest"
import { Schema } from "effect"
import { HttpApi, OpenApi } from "effect/http-api"
import { WebAgentApi } from "../../src/http/api/api.ts"
import { MonitorResponse } from "../../src/domain/wire/track.ts"
import { Monitor } from "../../src/domain/monitor.ts"
import { monitorView } from "../../src/http/views/monitor-view.ts"
import { flatStatus, FlatRunStatuses, RunStatuses, TerminalReasons } from "../../src/domain/run-state.ts"
import { Phases } from "../../src/domain/research.ts"
import { Depth } from "../../src/domain/run.ts"
import { ProfileStates } from "../../src/domain/profile.ts"
import { LedgerKinds } from "../../src/domain/billing.ts"
import { DeliveryEventTypes, InboxNotificationTypes } from "../../src/domain/delivery.ts"
import { BugReportStatuses } from "../../src/domain/bug-report.ts"
import { WebhookTypes } from "../../src/domain/wire/webhook-payloads.ts"

type Json = any
const doc: Json = OpenApi.fromApi(WebAgentApi)
const resolve = (schema: Json): Json =>
  schema?.$ref !== undefined ? resolve(doc.components.schemas[String(schema.$ref).replace("#/components/schemas/", "")]) : schema
const responseSchema = (path: string, method: string, status: string) =>
  resolve(doc.paths[path][method].responses[status].content["application/json"].schema)

const monitor = (overrides: Partial<Monitor> = {}) => new Monitor({
  id: "mon_1" as Monitor["id"],
  project_id: "prj_1" as Monitor["project_id"],
  created_by_key_id: null,
  status: "active",
  status_reason: null,
  intent_text: "watch the price",
  notify_channel: { kind: "callback_url", url: "https://example.com/hook", webhook_id: null },
  notify_secret: "s",
  schedule: { kind: "interval", interval_seconds: 3600 },
  target_urls: ["https://example.com/"],
  extraction_schema: null,
  trigger_dsl: null,
  stop_condition_dsl: null,
  profile_id: null,
  baseline_extracted: null,
  baseline_extracted_at: null,
  last_tick_at: null,
  last_tick_n: 0,
  consecutive_failures: 0,
  last_snapshot_id: null,
  alignment: [],
  pending_question: null,
  created_at: new Date("2026-01-01T00:00:00Z"),
  updated_at: new Date("2026-01-01T00:00:00Z"),
  ...overrides
})

describe("trigger_dsl shows the rule in effect", () => {
  it("a monitor created without a trigger reads {on: change}, not null; a given rule reads as given", () => {
    expect(monitorView(monitor()).trigger_dsl).toEqual({ on: "change" })
    const given = { on: "field_changed", path: "price" }
    expect(monitorView(monitor({ trigger_dsl: given })).trigger_dsl).toEqual(given)
    // The view is what the document says (and the document no longer allows null there).
    expect(Schema.decodeUnknownSync(MonitorResponse)(JSON.parse(JSON.stringify(monitorView(monitor()))))).toBeDefined()
    const field = responseSchema("/v1/projects/{pid}/track/monitors/{mid}", "get", "200").properties.trigger_dsl
    expect(field.type).toBe("object")
    expect(JSON.stringify(field)).not.toContain("\"null\"")
    expect(field.description).toContain("change")
  })
})

describe("interval schedules document tz", () => {
  it("the request's schedule shape lists tz for an interval", () => {
    const body = resolve(doc.paths["/v1/projects/{pid}/track/monitors"].post.requestBody.content["application/json"].schema)
    const union = (schema: Json): Array<Json> => schema.oneOf ?? schema.anyOf ?? []
    const branches: Array<Json> = union(resolve(body.properties.schedule)).flatMap((b: Json) => resolve(b).oneOf ?? resolve(b).anyOf ?? [resolve(b)])
    const interval = branches.find((b) => b.properties?.kind?.enum?.[0] === "interval" || b.properties?.kind?.const === "interval")
    expect(interval).toBeDefined()
    expect(Object.keys(interval.properties)).toEqual(expect.arrayContaining(["kind", "interval_seconds", "tz"]))
    expect(interval.properties.tz.description).toContain("changes nothing")
  })
})

describe("the billing account's plan", () => {
  it("documents how the spec's default plan maps to the plan id shown (decision: the id of the plan in effect)", () => {
    const plan = responseSchema("/v1/projects/{pid}/billing/account", "get", "200").properties.plan
    expect(plan.type).toBe("string")
    expect(plan.description).toContain("spec's `default`")
    expect(plan.description).toContain("WA_DEFAULT_PLAN")
  })
})

describe("defaults in the document are the ones applied", () => {
  const payloadOf = (method: string, path: string): Schema.Top => {
    let found: Schema.Top | undefined
    HttpApi.reflect(WebAgentApi, {
      onGroup: () => {},
      onEndpoint: ({ endpoint }) => {
        if (endpoint.method === method && endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}") === path) {
          found = [...endpoint.payload.values()].find((entry) => entry.encoding._tag === "Json")?.schemas[0]
        }
      }
    })
    if (found === undefined) throw new Error(`no JSON body for ${method} ${path}`)
    return found
  }
  const documented = (method: string, path: string) =>
    resolve(doc.paths[path][method.toLowerCase()].requestBody.content["application/json"].schema).properties as Record<string, Json>

  it("a body decoded without the defaulted fields gets the documented default of each", () => {
    const cases: Array<[string, string, Record<string, unknown>, Array<string>]> = [
      ["POST", "/v1/projects/{pid}/deep_research/runs", { topic: "t" }, ["depth", "require_outline_approval", "max_duration_minutes", "output_format"]],
      ["POST", "/api/v1/projects/{pid}/web_search/runs", { queries: ["q"] }, ["max_results_per_query", "rerank", "summarize", "wait"]]
    ]
    for (const [method, path, body, fields] of cases) {
      const decoded = Schema.decodeUnknownSync(Schema.toCodecJson(payloadOf(method, path) as Schema.Codec<unknown, unknown, never, never>))(body) as Record<string, unknown>
      const properties = documented(method, path)
      for (const field of fields) {
        expect({ path, field, default: properties[field]?.default }).toEqual({ path, field, default: decoded[field] })
      }
    }
  })

  it("keep_alive and agentmail are documented true and max_duration_minutes null (what src/do-anything/service.ts fills in)", () => {
    const properties = documented("POST", "/v1/projects/{pid}/do_anything/sessions")
    expect([properties["keep_alive"].default, properties["agentmail"].default, properties["max_duration_minutes"].default]).toEqual([true, true, null])
  })

  it("limit is an integer 1..100 with its default on every list; Track's page and page_size likewise", () => {
    const limits = Object.values<Record<string, Json>>(doc.paths).flatMap((ops) => Object.values<Json>(ops))
      .flatMap((op) => (op?.parameters ?? []).filter((p: Json) => p.in === "query" && p.name === "limit"))
    expect(limits.length).toBeGreaterThan(20)
    for (const limit of limits) expect(limit.schema).toEqual({ type: "integer", minimum: 1, maximum: 100, default: 20 })
    const monitors = doc.paths["/v1/projects/{pid}/track/monitors"].get.parameters as Array<Json>
    expect(monitors.find((p) => p.name === "page_size").schema).toEqual({ type: "integer", minimum: 1, maximum: 100, default: 20 })
    expect(monitors.find((p) => p.name === "page").schema).toMatchObject({ type: "integer", minimum: 1, default: 1 })
  })
})

describe("statuses and phases are enums in the document", () => {
  const enumOf = (schema: Json): Array<string> => {
    const s = resolve(schema)
    if (Array.isArray(s.enum)) return s.enum
    return (s.anyOf ?? []).flatMap((b: Json) => resolve(b).enum ?? [])
  }
  it("run status (both conventions), session status and research phase list every value the views produce", () => {
    // Each convention names its statuses exactly: done under /v1, succeeded (terminal_reason done) under /api/v1.
    const conventionA = [...RunStatuses].sort()
    const conventionB = RunStatuses.map(flatStatus).sort()
    for (const [path, statuses] of [
      ["/v1/projects/{pid}/do_anything/sessions/{sid}/runs/{rid}", conventionA],
      ["/api/v1/projects/{pid}/do_anything/runs/{rid}", conventionB],
      ["/v1/projects/{pid}/web_search/runs/{rid}", conventionA],
      ["/api/v1/projects/{pid}/web_search/runs/{rid}", conventionB],
      ["/v1/projects/{pid}/deep_research/runs/{rid}", conventionA],
      ["/v1/deep_research/{rid}", conventionA],
      ["/api/v1/projects/{pid}/deep_research/runs/{rid}", conventionB]
    ] as const) {
      expect(enumOf(responseSchema(path, "get", "200").properties.status).sort(), path).toEqual(statuses)
    }
    const listed = (path: string) => enumOf(resolve(responseSchema(path, "get", "200").properties.items.items).properties.status).sort()
    expect(listed("/v1/projects/{pid}/deep_research/runs")).toEqual(conventionA)
    expect(listed("/api/v1/projects/{pid}/deep_research/runs")).toEqual(conventionB)
    expect(enumOf(responseSchema("/v1/projects/{pid}/do_anything/sessions/{sid}", "get", "200").properties.status).sort()).toEqual(["closed", "idle", "running"])
    expect(enumOf(responseSchema("/v1/projects/{pid}/deep_research/runs/{rid}", "get", "200").properties.phase)).toEqual([...Phases])
  })

  it("event types, statuses, kinds and the other closed values list the domain's values (one list each, src/domain)", () => {
    const sorted = (values: ReadonlyArray<string>) => [...values].sort()
    const item = (path: string, method = "get", status = "200") => resolve(responseSchema(path, method, status).properties.items.items)
    const query = (path: string, name: string) => resolve((doc.paths[path].get.parameters as Array<Json>).find((p) => p.in === "query" && p.name === name)?.schema)
    // Event types: a delivery's event_type (both delivery routes) is a webhook message type; an inbox notification's type its own list.
    for (const delivery of [
      item("/v1/projects/{pid}/webhook_deliveries"),
      responseSchema("/v1/projects/{pid}/webhook_deliveries/{delivery_id}", "get", "200"),
      item("/v1/projects/{pid}/track/monitors/{mid}/deliveries"),
      responseSchema("/v1/projects/{pid}/track/monitors/{mid}/deliveries/{delivery_id}/retry", "post", "202")
    ]) expect(sorted(enumOf(delivery.properties.event_type))).toEqual(sorted(DeliveryEventTypes))
    // The delivery list is the webhook messages' (kept apart so the SDK does not load their data schemas).
    expect(sorted(DeliveryEventTypes)).toEqual(sorted(WebhookTypes))
    expect(sorted(enumOf(item("/v1/projects/{pid}/inbox").properties.type))).toEqual(sorted(InboxNotificationTypes))
    // Statuses: each DeepResearch list filters by its convention's names; liveness and readiness say one word each.
    expect(sorted(enumOf(query("/v1/projects/{pid}/deep_research/runs", "status")))).toEqual(sorted(RunStatuses))
    expect(sorted(enumOf(query("/v1/deep_research", "status")))).toEqual(sorted(RunStatuses))
    expect(sorted(enumOf(query("/api/v1/projects/{pid}/deep_research/runs", "status")))).toEqual(sorted(FlatRunStatuses))
    expect(enumOf(responseSchema("/healthz", "get", "200").properties.status)).toEqual(["ok"])
    expect(enumOf(responseSchema("/readyz", "get", "200").properties.status)).toEqual(["ready"])
    expect(enumOf(item("/v1/projects/{pid}/bug_reports").properties.status)).toEqual([...BugReportStatuses])
    for (const state of [
      item("/v1/projects/{pid}/profiles").properties.state,
      responseSchema("/v1/projects/{pid}/profiles/login", "post", "201").properties.state,
      responseSchema("/v1/projects/{pid}/profiles/{profile_id}/confirm", "post", "200").properties.state
    ]) expect(enumOf(state)).toEqual([...ProfileStates])
    // Kinds: a ledger entry's kind and the usage filter.
    expect(enumOf(item("/v1/projects/{pid}/billing/usage").properties.kind)).toEqual([...LedgerKinds])
    expect(enumOf(query("/v1/projects/{pid}/billing/usage", "kind"))).toEqual([...LedgerKinds])
    // DeepResearch's depth as answered (the request's enum), terminal_reason on every run view and in run.completed.
    expect(enumOf(responseSchema("/v1/projects/{pid}/deep_research/runs/{rid}", "get", "200").properties.depth)).toEqual([...Depth.literals])
    for (const path of [
      "/v1/projects/{pid}/do_anything/sessions/{sid}/runs/{rid}",
      "/api/v1/projects/{pid}/do_anything/runs/{rid}",
      "/v1/projects/{pid}/web_search/runs/{rid}",
      "/api/v1/projects/{pid}/deep_research/runs/{rid}"
    ]) expect(enumOf(responseSchema(path, "get", "200").properties.terminal_reason), path).toEqual([...TerminalReasons])
    expect(enumOf(doc.components.schemas["EventData.run.completed"].properties.terminal_reason)).toEqual([...TerminalReasons])
  })

  /**
   * The fields that name a closed value by their name. Open ones are listed here with the reason,
   * and must say what they hold in a description.
   */
  const ENUM_NAMES = /^(status|state|phase|kind|type|event_type|terminal_reason|depth)$/
  const OPEN: ReadonlyArray<{ readonly at: RegExp; readonly reason: string }> = [
    { at: /^#\/components\/schemas\/ValidationErrorEncoded\/properties\/extra\/properties\/errors\/items\/properties\/type$/, reason: "a 422 error's type names the failed check, Pydantic style (value_error.* subtypes grow with the checks)" },
    { at: /^#\/components\/schemas\/StripeWebhookResponse\/properties\/type$/, reason: "the Stripe event's type, echoed as Stripe sent it (any Stripe event is acknowledged)" },
    { at: /^#\/paths\/\/api\/v3\/eak\/delegations(\/complete)?\/post\/requestBody\/content\/application\/json\/schema\/properties\/state$/, reason: "the application's opaque OAuth-style state, sent back unchanged" }
  ]
  /** Whether a schema lists its values: an enum or const, or a union whose every branch but null does. */
  const closed = (schema: Json): boolean => {
    const s = resolve(schema)
    if (s === undefined || s === null) return false
    if (Array.isArray(s.enum) || s.const !== undefined) return true
    const union: Array<Json> = s.anyOf ?? s.oneOf ?? []
    const values = union.filter((b: Json) => !(b?.type === "null" && Object.keys(b).length === 1))
    return values.length > 0 && values.every(closed)
  }
  const described = (schema: Json): boolean => typeof resolve(schema)?.description === "string" && resolve(schema).description.length > 0

  it("the whole document: every property or query parameter named status, state, phase, kind, type, event_type, terminal_reason or depth is an enum (or a listed open field)", () => {
    const open: Array<{ at: string; schema: Json }> = []
    let checked = 0
    const walk = (node: Json, at: string): void => {
      if (node === null || typeof node !== "object") return
      if (node.properties !== null && typeof node.properties === "object" && !Array.isArray(node.properties)) {
        for (const [name, schema] of Object.entries<Json>(node.properties)) {
          if (!ENUM_NAMES.test(name)) continue
          checked++
          if (!closed(schema)) open.push({ at: `${at}/properties/${name}`, schema })
        }
      }
      if (Array.isArray(node.parameters)) {
        for (const parameter of node.parameters) {
          if (parameter?.in !== "query" || !ENUM_NAMES.test(parameter.name)) continue
          checked++
          if (!closed(parameter.schema)) open.push({ at: `${at}?${parameter.name}`, schema: parameter.schema })
        }
      }
      for (const [key, value] of Object.entries(node)) walk(value, `${at}/${key}`)
    }
    walk(doc, "#")
    expect(checked).toBeGreaterThan(300)
    const unlisted = open.filter((field) => !OPEN.some((entry) => entry.at.test(field.at)))
    expect(unlisted.map((field) => field.at)).toEqual([])
    // Every open field says what it holds; every entry of the list still names a field of the document.
    expect(open.filter((field) => !described(field.schema)).map((field) => field.at)).toEqual([])
    for (const entry of OPEN) expect(open.some((field) => entry.at.test(field.at)), entry.reason).toBe(true)
  })
})

describe("a nullable field lists null once", () => {
  it("no anyOf or oneOf of the document has {type: null} twice (api_keys' disabled_at: a date-time or null)", () => {
    const twice: Array<string> = []
    const walk = (node: Json, at: string): void => {
      if (node === null || typeof node !== "object") return
      for (const union of ["anyOf", "oneOf"]) {
        const branches = node[union]
        if (Array.isArray(branches) && branches.filter((b: Json) => b?.type === "null" && Object.keys(b).length === 1).length > 1) twice.push(`${at}/${union}`)
      }
      for (const [key, value] of Object.entries(node)) walk(value, `${at}/${key}`)
    }
    walk(doc, "#")
    expect(twice).toEqual([])
    const key = resolve(responseSchema("/v1/projects/{pid}/api_keys", "get", "200").properties.items.items)
    expect(key.properties.disabled_at).toEqual({ anyOf: [{ type: "string", format: "date-time" }, { type: "null" }] })
  })
})

describe("a 422's extra.errors is typed", () => {
  it("every 422 of the document declares extra.errors[] items {loc, msg, type}, required", () => {
    let checked = 0
    for (const [path, operations] of Object.entries<Json>(doc.paths)) {
      for (const [method, operation] of Object.entries<Json>(operations)) {
        const schema = operation?.responses?.["422"]?.content?.["application/json"]?.schema
        if (schema === undefined) continue
        const branches = [resolve(schema), ...(resolve(schema).anyOf ?? []).map(resolve)]
        const extra = branches.map((branch: Json) => branch?.properties?.extra).find((e: Json) => e?.properties?.errors !== undefined)
        expect(extra?.required, `${method} ${path}`).toContain("errors")
        const item = resolve(extra.properties.errors.items)
        expect(item.required, `${method} ${path}`).toEqual(["loc", "msg", "type"])
        expect(Object.keys(item.properties)).toEqual(["loc", "msg", "type"])
        checked++
      }
    }
    expect(checked).toBeGreaterThan(50)
  })
})

describe("DeepResearch at the outline gate", () => {
  it("the document states the decision: awaiting_input with phase hitl_outline kept (flow.test.ts and the console test hold the server to it)", () => {
    for (const path of ["/v1/projects/{pid}/deep_research/runs/{rid}", "/api/v1/projects/{pid}/deep_research/runs/{rid}"]) {
      const phase = responseSchema(path, "get", "200").properties.phase
      const described = [phase.description, ...(phase.anyOf ?? []).map((b: Json) => resolve(b).description)].join(" ")
      expect(described, path).toMatch(/`awaiting_input` with phase `hitl_outline` kept and `pending_request_id`/)
    }
  })
})

describe("unions discriminated by kind are oneOf", () => {
  /** The first anyOf/oneOf under a node. */
  const unionOf = (node: Json): { readonly mode: "anyOf" | "oneOf"; readonly branches: Array<Json> } | undefined => {
    if (node === null || typeof node !== "object") return undefined
    const kinded = (branches: Array<Json>) => branches.filter((b: Json) => b?.type !== "null")
    if (Array.isArray(node.oneOf) && kinded(node.oneOf).every((b: Json) => resolve(b)?.properties?.kind !== undefined)) return { mode: "oneOf", branches: kinded(node.oneOf) }
    if (Array.isArray(node.anyOf) && kinded(node.anyOf).every((b: Json) => resolve(b)?.properties?.kind !== undefined)) return { mode: "anyOf", branches: kinded(node.anyOf) }
    for (const value of Object.values(node)) {
      const found = unionOf(value)
      if (found !== undefined) return found
    }
    return undefined
  }
  it("Track's schedule (cron or interval, with checks JSON Schema cannot state) is documented oneOf, as the request and the monitor answer it", () => {
    const body = resolve(doc.paths["/v1/projects/{pid}/track/monitors"].post.requestBody.content["application/json"].schema)
    const request = unionOf(body.properties.schedule)
    expect(request?.mode).toBe("oneOf")
    expect(request?.branches.map((b: Json) => resolve(b).properties.kind.enum[0])).toEqual(["cron", "interval"])
    const answered = unionOf(responseSchema("/v1/projects/{pid}/track/monitors/{mid}", "get", "200").properties.schedule)
    expect(answered?.mode).toBe("oneOf")
  })
  it("no anyOf is left in the document whose every branch requires its own kind", () => {
    const left: Array<string> = []
    const walk = (node: Json, at: string): void => {
      if (node === null || typeof node !== "object") return
      if (Array.isArray(node.anyOf) && node.anyOf.filter((b: Json) => b?.type !== "null").length > 1) {
        const kinds = node.anyOf.filter((b: Json) => b?.type !== "null").map((b: Json) => {
          const r = resolve(b)
          const kind = r?.properties?.kind
          return r?.type === "object" && r.required?.includes("kind") && kind?.enum?.length === 1 ? kind.enum[0] : undefined
        })
        if (kinds.every((k: unknown) => k !== undefined) && new Set(kinds).size === kinds.length) left.push(at)
      }
      for (const [key, value] of Object.entries(node)) walk(value, `${at}/${key}`)
    }
    walk(doc, "#")
    expect(left).toEqual([])
  })
})

describe("a DoAnything run's schedule is documented as its four shapes", () => {
  it("oneOf cron, interval, event, autonomous, each closed, as the filter decodes them", () => {
    const body = resolve(doc.paths["/v1/projects/{pid}/do_anything/sessions"].post.requestBody.content["application/json"].schema)
    const field = JSON.stringify(body.properties.schedule)
    const found: Json = JSON.parse(field)
    const oneOf = (function find(o: Json): Array<Json> | undefined {
      if (o === null || typeof o !== "object") return undefined
      if (Array.isArray(o.oneOf)) return o.oneOf
      for (const v of Object.values(o)) {
        const r = find(v)
        if (r !== undefined) return r
      }
      return undefined
    })(found)!
    expect(oneOf.map((shape) => shape.properties.kind.enum[0])).toEqual(["cron", "interval", "event", "autonomous"])
    for (const shape of oneOf) expect(shape.additionalProperties).toBe(false)
    expect(Object.keys(oneOf[1].properties)).toEqual(["kind", "interval_seconds", "tz"])
  })
})
