/**
 * The bodies the service POSTs to users' endpoints are documented (issue 27 §2): the OpenAPI
 * document (`OpenApi.fromApi(WebAgentApi)`, what /openapi.json serves) has a `webhooks` section
 * with one entry per kind of body of the domain (src/domain/wire/webhook-payloads.ts
 * `WebhookKinds`, the map the senders are typed by), each a POST of `{type, timestamp, data}` with
 * the Standard Webhooks headers and the answers a receiver gives; a delivery record's `payload`
 * is one of those bodies. Samples of every kind (hand-written and generated from the domain
 * schema) pass the document's schema of their kind, signed as Callbacks signs them; a wrong body
 * (another convention's status, an unknown field, no timestamp, an unknown type) is refused,
 * and the receiver of the process-level suites (test/support/webhook-receiver.ts) fails the test
 * that reads a delivery the document refuses.
 */
import { describe, expect, it } from "vitest"
import { Arbitrary, Effect, Schema } from "effect"
import { OpenApi } from "effect/http-api"
import { WebAgentApi } from "../../src/http/api/api.ts"
import {
  type WebhookBody,
  webhookBody,
  webhookBodySchema,
  WebhookKindNames,
  WebhookKinds,
  type WebhookKindName,
  type WebhookMessage,
  WebhookTypes
} from "../../src/domain/wire/webhook-payloads.ts"
import { type SendInput, signPayload } from "../../src/webhooks/callbacks.ts"
import type { NotifyInput } from "../../src/webhooks/notification-channels.ts"
import { newWebhookSecret } from "../../src/webhooks/webhook-endpoints.ts"
import { checkWebhookDelivery, startWebhookReceiver, verifiedDelivery } from "../support/webhook-receiver.ts"

type Json = any
const doc: Json = OpenApi.fromApi(WebAgentApi)
const components: Record<string, Json> = doc.components.schemas
const strict = { errors: "all", onExcessProperty: "error" } as const

/** The headers Callbacks sends with `body` (src/webhooks/callbacks.ts). */
const signed = (body: unknown, secret = newWebhookSecret()) => {
  const text = JSON.stringify(body)
  const id = "msg_2bQ5kX9mZpL0vR7tYw3cNd8e"
  const timestamp = Math.floor(Date.now() / 1000)
  return {
    text,
    secret,
    headers: {
      "user-agent": "web-agent-service-webhooks/1",
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signPayload(secret, id, timestamp, text)
    }
  }
}

const at = "2026-11-29T04:00:00.000Z"
const doAnythingRun = {
  id: "run_01", session_id: "sess_01", status: "done" as const, terminal_reason: "done" as const, expired: false,
  instructions: "Find the price", output: { price: 99 }, error: null, step_count: 3, max_steps: 30, model: "fake-model",
  parent_run_id: null, skills: [], allowed_actions: [], keep_alive: false, callback_url: "https://example.com/hook",
  output_schema: null, recording: null, llm_cost_usd: "0.000182", created_at: at, started_at: at, finished_at: at, deadline_at: at
}
const researchRun = {
  id: "run_02", run_id: "run_02", session_id: null, project_id: "proj_01", kind: "deep_research" as const, status: "done" as const,
  parent_run_id: null, instructions: null, phase: "synthesize" as const, terminal_reason: "done" as const, error: null,
  topic: "Heat pumps", depth: "light" as const, require_outline_approval: false,
  outline: { title: "Heat pumps", sections: [{ section_id: "s1", title: "Costs", questions: ["How much?"], queries: ["heat pump cost"] }] },
  pending_request_id: null, result: null, llm_cost_usd: "0.01", service_cost_usd: "0.50", total_cost_usd: "0.51",
  max_cost_usd: null, callback_url: "https://example.com/hook", created_at: at, started_at: at, finished_at: at, deadline_at: at
}

/** A realistic body of each kind, typed by the domain (a wrong sample does not compile). */
const samples: Record<WebhookKindName, WebhookBody> = {
  "do_anything.run.completed": { type: "run.completed", timestamp: at, data: doAnythingRun },
  "do_anything.run.completed.flat": { type: "run.completed", timestamp: at, data: { ...doAnythingRun, status: "succeeded", run_id: "run_01" } },
  "deep_research.run.completed": { type: "run.completed", timestamp: at, data: researchRun },
  "deep_research.run.completed.flat": { type: "run.completed", timestamp: at, data: { ...researchRun, status: "succeeded" } },
  "track.monitor.triggered": {
    type: "monitor.triggered",
    timestamp: at,
    data: {
      monitor_id: "mon_01", run_id: "tick_01", tick_n: 2, intent: "Tell me when the price drops", snapshot_id: "snap_01", changed: true,
      extracted: { price: 99 }, diff: { kind: "json", changes: [{ op: "changed", path: "/price", old: 120, new: 99 }] },
      target_urls: ["https://example.com/product"], fetched_at: at
    }
  }
}

describe("the webhooks section of the OpenAPI document", () => {
  it("has one POST per kind of body the code sends, with the signature headers and a receiver's answers", () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([...WebhookKindNames].sort())
    // Every message type the senders can send has a kind.
    expect([...new Set(WebhookKindNames.map((kind) => WebhookKinds[kind].type))].sort()).toEqual([...WebhookTypes].sort())
    for (const kind of WebhookKindNames) {
      const post = doc.webhooks[kind].post
      expect(post.requestBody.content["application/json"].schema).toEqual({ $ref: `#/components/schemas/Webhook.${kind}` })
      const body = components[`Webhook.${kind}`]
      expect(body.properties.type.enum).toEqual([WebhookKinds[kind].type])
      expect(body.properties.data).toEqual({ $ref: `#/components/schemas/WebhookData.${kind}` })
      expect(body.required).toEqual(["type", "timestamp", "data"])
      expect(body.additionalProperties).toBe(false)
      expect(components[`WebhookData.${kind}`]).toBeDefined()
      const headers = post.parameters.filter((p: Json) => p.in === "header" && p.required).map((p: Json) => p.name)
      expect(headers).toEqual(expect.arrayContaining(["webhook-id", "webhook-timestamp", "webhook-signature"]))
      expect(Object.keys(post.responses).sort()).toEqual(["2XX", "default"])
    }
    // The run callbacks under /api/v1 say succeeded; under /v1 done.
    expect(components["WebhookData.do_anything.run.completed"].properties.status.enum).toContain("done")
    expect(components["WebhookData.do_anything.run.completed.flat"].properties.status.enum).not.toContain("done")
    expect(components["WebhookData.deep_research.run.completed.flat"].properties.status.enum).toContain("succeeded")
  })

  it("types a delivery record's payload as one of those bodies on every delivery route", () => {
    const expected = WebhookKindNames.map((kind) => ({ $ref: `#/components/schemas/Webhook.${kind}` }))
    const payloads: Array<string> = []
    for (const [path, operations] of Object.entries<Json>(doc.paths)) {
      for (const [method, operation] of Object.entries<Json>(operations)) {
        const schema = operation?.responses?.["200"]?.content?.["application/json"]?.schema ??
          operation?.responses?.["202"]?.content?.["application/json"]?.schema
        const record = schema?.properties?.items?.items ?? schema
        if (record?.properties?.payload === undefined || record?.properties?.event_type === undefined) continue
        expect(record.properties.payload.anyOf, `${method} ${path}`).toEqual(expected)
        payloads.push(`${method.toUpperCase()} ${path}`)
      }
    }
    expect(payloads).toEqual(expect.arrayContaining([
      "GET /v1/projects/{pid}/webhook_deliveries",
      "GET /v1/projects/{pid}/webhook_deliveries/{delivery_id}",
      "POST /v1/projects/{pid}/webhook_deliveries/{delivery_id}/retry",
      "GET /v1/projects/{pid}/track/monitors/{mid}/deliveries"
    ]))
  })

  it("accepts a signed sample of every kind, as the domain schema does", () => {
    for (const kind of WebhookKindNames) {
      const body = samples[kind]
      expect(Schema.decodeUnknownExit(webhookBodySchema(kind))(body, strict)._tag, kind).toBe("Success")
      const delivery = signed(body)
      const checked = checkWebhookDelivery(delivery.headers, delivery.text)
      expect(checked.problems, kind).toEqual([])
      expect(checked.kinds, kind).toContain(kind)
      expect(verifiedDelivery(delivery.secret, { headers: delivery.headers, body: delivery.text })).toEqual(body)
    }
    // The body Callbacks.send records: {type, timestamp, data} stamped now.
    const sent = webhookBody({ type: "monitor.triggered", data: samples["track.monitor.triggered"].data as Json }, new Date())
    expect(checkWebhookDelivery(signed(sent).headers, signed(sent).text).kinds).toEqual(["track.monitor.triggered"])
  })

  it("accepts what the domain schema of every kind accepts (generated samples)", async () => {
    for (const kind of WebhookKindNames) {
      const schema = webhookBodySchema(kind) as unknown as Schema.Codec<unknown>
      const generated = await Effect.runPromise(Arbitrary.sampleEffect(Arbitrary.schema(schema), { count: 10, seed: 27 }))
      let checked = 0
      for (const sample of generated) {
        const body = JSON.parse(JSON.stringify(sample))
        if (Schema.decodeUnknownExit(schema)(body, strict)._tag === "Failure") continue
        // The domain's Timestamp is a string the document states the format of (date-time): real ones, as the code writes them.
        body.timestamp = new Date().toISOString()
        if (kind === "track.monitor.triggered") body.data.fetched_at = new Date().toISOString()
        const delivery = signed(body)
        const { kinds, problems } = checkWebhookDelivery(delivery.headers, delivery.text)
        expect(problems, `${kind}: ${delivery.text.slice(0, 400)}`).toEqual([])
        expect(kinds, kind).toContain(kind)
        checked++
      }
      expect(checked, `${kind}: samples checked`).toBeGreaterThan(0)
    }
  })

  it("refuses a wrong body or wrong headers", () => {
    const problemsOf = (body: unknown, headers?: Record<string, string>) => {
      const delivery = signed(body)
      return checkWebhookDelivery({ ...delivery.headers, ...headers }, delivery.text).problems
    }
    const plain = samples["do_anything.run.completed"] as Json
    const monitor = samples["track.monitor.triggered"] as Json
    // A /v1 run's body saying succeeded (without run_id): neither convention's.
    expect(problemsOf({ ...plain, data: { ...plain.data, status: "succeeded" } })).not.toEqual([])
    // An /api/v1 run's body saying done.
    expect(problemsOf({ ...plain, data: { ...plain.data, run_id: "run_01", status: "done" } })).not.toEqual([])
    expect(problemsOf({ ...monitor, data: { ...monitor.data, undocumented: 1 } })).not.toEqual([])
    expect(problemsOf({ ...monitor, extra: 1 })).not.toEqual([])
    expect(problemsOf({ type: monitor.type, data: monitor.data })).not.toEqual([])
    expect(problemsOf({ ...monitor, data: { ...monitor.data, diff: { kind: "json" } } })).not.toEqual([])
    expect(problemsOf({ ...monitor, type: "monitor.change_detected" })).toEqual([expect.stringContaining("is not the type of any webhook")])
    expect(problemsOf(monitor, { "webhook-signature": "sha256=abc" })).toEqual([expect.stringContaining("webhook-signature")])
    expect(problemsOf(monitor, { "webhook-id": "" })).toEqual([expect.stringContaining("webhook-id")])
    // The domain refuses them too: the monitor's data with an unknown field.
    expect(Schema.decodeUnknownExit(webhookBodySchema("track.monitor.triggered"))({ ...monitor, data: { ...monitor.data, undocumented: 1 } }, strict)._tag).toBe("Failure")
  })

  it("a wrong body does not compile: the senders are typed by the domain's messages", () => {
    const monitorData = samples["track.monitor.triggered"].data as Extract<WebhookBody, { type: "monitor.triggered" }>["data"]
    const ok: WebhookMessage = { type: "monitor.triggered", data: monitorData }
    // @ts-expect-error a monitor's notification carries the fired tick's data
    const partial: WebhookMessage = { type: "monitor.triggered", data: { monitor_id: "mon_01" } }
    // @ts-expect-error a run's callback carries the run as GET shows it, not any object
    const run: WebhookMessage = { type: "run.completed", data: { report: "ok" } }
    // @ts-expect-error no sender sends a type the document does not list
    const unknown: WebhookMessage = { type: "monitor.change_detected", data: monitorData }
    const send: Pick<SendInput, "message"> = { message: ok }
    // @ts-expect-error Track's channels are told a monitor.triggered message only
    const notify: Pick<NotifyInput, "message"> = { message: { type: "run.completed", data: samples["do_anything.run.completed"].data as any as never } }
    expect([partial, run, unknown, send, notify]).toHaveLength(5)
  })

  it("the suites' receiver fails the test that reads a delivery the document refuses", async () => {
    const receiver = await startWebhookReceiver()
    const good = signed(samples["track.monitor.triggered"])
    expect((await fetch(`${receiver.url}/ok`, { method: "POST", headers: good.headers, body: good.text })).status).toBe(204)
    expect(receiver.received.length).toBe(1)
    expect(receiver.received[0]!.kinds).toEqual(["track.monitor.triggered"])
    const bad = signed({ ...samples["track.monitor.triggered"], data: { monitor_id: "mon_01" } })
    await fetch(`${receiver.url}/bad`, { method: "POST", headers: bad.headers, body: bad.text })
    expect(() => receiver.received.length).toThrow(/POST \/bad .*\n.*not a track\.monitor\.triggered body/)
    await expect(receiver.close()).rejects.toThrow(/webhooks section does not allow/)
  })
})
