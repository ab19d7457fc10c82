/**
 * Small deviations of the contract (issue 27), each against the view or schema the server uses
 * and the document it serves (`OpenApi.fromApi(WebAgentApi)`, the /openapi.json body).
 */
import { describe, expect, it } from "vitest"
import { Schema } from "effect"
import { OpenApi } from "effect/http-api"
import { WebAgentApi } from "../../src/http/api/api.ts"
import { MonitorResponse } from "../../src/http/api/track.ts"
import { Monitor } from "../../src/domain/monitor.ts"
import { monitorView } from "../../src/http/views/monitor-view.ts"

type Json = any
const doc: Json = OpenApi.fromApi(WebAgentApi)
const resolve = (schema: Json): Json =>
  schema?.$ref !== undefined ? resolve(doc.components.schemas[String(schema.$ref).replace("#/components/schemas/", "")]) : schema
const responseSchema = (path: string, method: string, status: string) =>
  resolve(doc.paths[path][method].responses[status].content["application/json"].schema)

const monitor = (overrides: Partial<Monitor> = {}) => new Monitor({
  id: "mon_1" as Monitor["id"],
  project_id: "prj_1",
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
    const branches: Array<Json> = (resolve(body.properties.schedule).anyOf ?? []).flatMap((b: Json) => resolve(b).anyOf ?? [resolve(b)])
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
