/**
 * The bodies the service POSTs to its users' endpoints, added to the generated OpenAPI document
 * (issue 27 §2) as an OpenAPI 3.1 `webhooks` section: one entry per kind of body
 * (src/domain/wire/webhook-payloads.ts `WebhookKinds`), each a `post` whose request body is the
 * kind's `{type, timestamp, data}`, with the Standard Webhooks headers it carries and the answers
 * a receiver gives.
 *
 * Components: `Webhook.<kind>` the whole body, `WebhookData.<kind>` its `data` (e.g.
 * `Webhook.do_anything.run.completed`, `WebhookData.track.monitor.triggered`).
 *
 * A delivery record's `payload` (GET .../webhook_deliveries, a monitor's deliveries) is the body
 * it signed, so its schema becomes `anyOf` the bodies. `anyOf`, not `oneOf`: a DeepResearch run's
 * body under /v1 and under /api/v1 differ only when it succeeded (`done` / `succeeded`), so a failed
 * or canceled run's body is valid as both kinds and `oneOf` would refuse it. The server keeps the
 * field `Schema.Unknown` (it passes the stored body through); the bodies are typed where they are
 * built (Callbacks.send takes a WebhookMessage).
 */
import type { Schema } from "effect"
import { WEBHOOK_TIMESTAMP_DESCRIPTION, WebhookKindNames, WebhookKinds } from "../../domain/wire/webhook-payloads.ts"
import { jsonSchemas } from "./openapi-events.ts"

type Spec = Record<string, any>

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })

/** The component names of a kind's body and data. */
export const webhookComponentNames = (kind: string) => ({ body: `Webhook.${kind}`, data: `WebhookData.${kind}` })

/** The Standard Webhooks headers every delivery carries (src/webhooks/callbacks.ts). */
export const WEBHOOK_HEADERS = [
  {
    name: "webhook-id",
    in: "header",
    required: true,
    description: "The delivery's id (msg_...), the same on every attempt: deduplicate on it. GET /v1/projects/{pid}/webhook_deliveries/{delivery_id} shows the delivery.",
    schema: { type: "string", pattern: "^msg_[A-Za-z0-9]+$" }
  },
  {
    name: "webhook-timestamp",
    in: "header",
    required: true,
    description: "Unix seconds when this attempt was signed; refuse one far from now (replays).",
    schema: { type: "string", pattern: "^[0-9]+$" }
  },
  {
    name: "webhook-signature",
    in: "header",
    required: true,
    description: "v1,<base64 HMAC-SHA256 of \"<webhook-id>.<webhook-timestamp>.<body>\"> keyed with the base64 part of the whsec_ secret " +
      "(Standard Webhooks; its libraries verify it). The secret is the project's webhook secret for a run's callback, the monitor's " +
      "notify_secret for a monitor's callback_url, the endpoint's for a project webhook endpoint.",
    schema: { type: "string", pattern: "^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$" }
  },
  {
    name: "user-agent",
    in: "header",
    required: true,
    schema: { type: "string", enum: ["web-agent-service-webhooks/1"] }
  }
] as const

const RESPONSES = {
  "2XX": { description: "Received: the delivery is `delivered`; no other attempt follows. The answer's body is read and ignored." },
  default: {
    description: "Any other answer (a redirect is not followed), no answer within 10 seconds, or a refused connection: the attempt failed. " +
      "It is tried again with exponential backoff, up to 6 attempts in all, then the delivery is `failed` " +
      "(POST /v1/projects/{pid}/webhook_deliveries/{delivery_id}/retry makes it due again). A target that is not a public " +
      "address is refused without retry."
  }
}

/** Whether a JSON schema is a delivery record (the response of the delivery routes). */
const isDeliveryRecord = (node: any): boolean =>
  node?.["type"] === "object" && node["properties"]?.["payload"] !== undefined && node["properties"]?.["event_type"] !== undefined &&
  node["properties"]?.["last_status_code"] !== undefined

/** Replaces every delivery record's payload schema under `node`; gives how many. */
const typePayloads = (node: any, payload: Record<string, unknown>): number => {
  if (node === null || typeof node !== "object") return 0
  if (isDeliveryRecord(node)) {
    node["properties"]["payload"] = payload
    return 1
  }
  let count = 0
  for (const value of Array.isArray(node) ? node : Object.values(node)) count += typePayloads(value, payload)
  return count
}

/** The `OpenApi.Transform` adding the `webhooks` section, its components and the deliveries' payload schema. */
export const webhooks = (spec: Spec): Spec => {
  const components: Record<string, unknown> = (spec["components"] ??= {})["schemas"] ??= {}
  const kinds = WebhookKindNames
  const all = jsonSchemas(kinds.map((kind) => WebhookKinds[kind].data as Schema.Top))
  for (const [name, definition] of Object.entries(all.definitions)) if (!(name in components)) components[name] = definition
  const section: Record<string, unknown> = {}
  kinds.forEach((kind, index) => {
    const { type, summary, description } = WebhookKinds[kind]
    const names = webhookComponentNames(kind)
    components[names.data] = all.schemas[index]
    components[names.body] = {
      type: "object",
      description: summary,
      properties: {
        type: { type: "string", enum: [type] },
        timestamp: { type: "string", format: "date-time", description: WEBHOOK_TIMESTAMP_DESCRIPTION },
        data: ref(names.data)
      },
      required: ["type", "timestamp", "data"],
      additionalProperties: false
    }
    section[kind] = {
      post: {
        operationId: `webhook.${kind}`,
        summary,
        description,
        parameters: WEBHOOK_HEADERS,
        requestBody: { required: true, content: { "application/json": { schema: ref(names.body) } } },
        responses: RESPONSES
      }
    }
  })
  spec["webhooks"] = section
  typePayloads(spec["paths"], {
    anyOf: kinds.map((kind) => ref(webhookComponentNames(kind).body)),
    description: "The signed JSON body, {type, timestamp, data}: one of the bodies of the webhooks section " +
      "(the same for console_inbox and schedule deliveries, which are not sent over HTTP)"
  })
  return spec
}
