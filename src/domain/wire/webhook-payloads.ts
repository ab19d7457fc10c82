/**
 * The bodies the service POSTs to its users' endpoints (issue 27 §2): every one is
 * `{type, timestamp, data}`, signed the Standard Webhooks way (src/webhooks/callbacks.ts), and
 * is also what a delivery record's `payload` holds (GET .../webhook_deliveries).
 *
 * Two messages (`type`):
 * - `run.completed`: a DoAnything or DeepResearch run ended; sent to the run's `callback_url`,
 *   signed with the project's webhook secret. `data` is the run as its product's GET shows it, in
 *   the convention of the route that created it: under `/v1` status `done`, under `/api/v1`
 *   (Convention B) `succeeded` with terminal_reason `done` (src/http/views/callback-view.ts).
 *   WebSearch runs and Track ticks send none.
 * - `monitor.triggered`: a Track monitor's trigger fired on a tick; sent to its notify channel's
 *   `callback_url` (signed with the monitor's `notify_secret`) or project webhook endpoint
 *   (`global_webhook`, signed with the endpoint's secret). The same body is recorded for the
 *   `console_inbox` and `schedule` channels, which are not sent over HTTP.
 *
 * The senders are typed by `WebhookMessages` (Callbacks.send, RunNotifier, NotificationChannels):
 * a body whose data is not its type's does not compile. The OpenAPI document's `webhooks` section
 * (src/http/api/openapi-webhooks.ts) has one entry per body kind (`WebhookKinds`): the run
 * callback per product and convention, the monitor's notification.
 */
import { Schema } from "effect"
import { MonitorEventSchemas } from "../events.ts"
import { Timestamp } from "../schemas.ts"
import { FlatResearchRunResponse, ResearchRunResponse } from "./deep-research.ts"
import { FlatRunResponse, RunResponse } from "./do-anything.ts"

const described = <S extends Schema.Top>(schema: S, description: string) => schema.annotate({ description }) as S

/** What a monitor's notification says: the fired tick, its snapshot and what changed. */
export const MonitorTriggeredData = Schema.Struct({
  monitor_id: Schema.String,
  /** The tick (a run of kind track_tick) that fired. */
  run_id: Schema.String,
  /** The tick's number in the monitor (null for a tick not numbered). */
  tick_n: Schema.NullOr(Schema.Int),
  /** The monitor's intent, as its creator wrote it. */
  intent: Schema.String,
  snapshot_id: Schema.String,
  /** The snapshot differs from the previous one (false on the baseline, or when the trigger fires without a change). */
  changed: Schema.Boolean,
  /** The values extracted by the monitor's extraction_schema (null without one). */
  extracted: Schema.Unknown,
  /** What changed since the previous snapshot (null on the first): the diff of monitor.change_detected. */
  diff: MonitorEventSchemas["monitor.change_detected"].fields.diff,
  target_urls: Schema.NullOr(Schema.Array(Schema.String)),
  fetched_at: Timestamp
})
export type MonitorTriggeredData = typeof MonitorTriggeredData.Type

/** A run's callback data: the run as GET shows it, in the convention of the route that created it. */
export const RunCompletedData = Schema.Union([RunResponse, FlatRunResponse, ResearchRunResponse, FlatResearchRunResponse])
export type RunCompletedData = typeof RunCompletedData.Type

/** Every message type a webhook body carries, with the schema of its `data`. */
export const WebhookMessages = {
  "run.completed": RunCompletedData,
  "monitor.triggered": MonitorTriggeredData
}
export type WebhookType = keyof typeof WebhookMessages
export const WebhookTypes = Object.keys(WebhookMessages) as ReadonlyArray<WebhookType>

/** What a sender gives: a type and its data (the timestamp is added when the delivery is recorded). */
export type WebhookMessage<T extends WebhookType = WebhookType> = {
  [K in T]: { readonly type: K; readonly data: (typeof WebhookMessages)[K]["Type"] }
}[T]

/** A whole body as sent, signed and recorded. */
export type WebhookBody<T extends WebhookType = WebhookType> = {
  [K in T]: { readonly type: K; readonly timestamp: string; readonly data: (typeof WebhookMessages)[K]["Type"] }
}[T]

/** The body of a message, stamped now. */
export const webhookBody = <T extends WebhookType>(message: WebhookMessage<T>, timestamp: Date): WebhookBody<T> =>
  ({ type: message.type, timestamp: timestamp.toISOString(), data: message.data }) as WebhookBody<T>

/** One kind of body a user's endpoint receives: its message type, its data and who sends it. */
interface WebhookKind {
  readonly type: WebhookType
  readonly data: Schema.Top
  readonly summary: string
  readonly description: string
}

const RUN_SIGNED = "Signed with the project's webhook secret (GET /v1/projects/{pid}/webhook_secret)."

/**
 * The kinds of body, as the document's `webhooks` section names them: the run callback per
 * product and convention (`.flat`: the run was created under `/api/v1`), and the monitor's
 * notification.
 */
export const WebhookKinds = {
  "do_anything.run.completed": {
    type: "run.completed",
    data: RunResponse,
    summary: "A DoAnything run created under /v1 ended",
    description: `Sent once to the run's callback_url when it ends; data is the run as GET /v1/projects/{pid}/do_anything/sessions/{sid}/runs/{rid} shows it (status done on success). ${RUN_SIGNED}`
  },
  "do_anything.run.completed.flat": {
    type: "run.completed",
    data: FlatRunResponse,
    summary: "A DoAnything run created under /api/v1 ended",
    description: `Sent once to the run's callback_url when it ends; data is the run as /api/v1 shows it (status succeeded with terminal_reason done on success, run_id). ${RUN_SIGNED}`
  },
  "deep_research.run.completed": {
    type: "run.completed",
    data: ResearchRunResponse,
    summary: "A DeepResearch run created under /v1 ended",
    description: `Sent once to the run's callback_url when it ends; data is the run as GET /v1/projects/{pid}/deep_research/runs/{rid} shows it (status done on success). ${RUN_SIGNED}`
  },
  "deep_research.run.completed.flat": {
    type: "run.completed",
    data: FlatResearchRunResponse,
    summary: "A DeepResearch run created under /api/v1 ended",
    description: `Sent once to the run's callback_url when it ends; data is the run as /api/v1 shows it (status succeeded with terminal_reason done on success). ${RUN_SIGNED}`
  },
  "track.monitor.triggered": {
    type: "monitor.triggered",
    data: MonitorTriggeredData,
    summary: "A Track monitor's trigger fired",
    description: "Sent once per fired tick to the monitor's notify_channel: kind callback_url (its url, signed with the monitor's notify_secret) " +
      "or kind global_webhook (the project webhook endpoint's url, signed with the endpoint's secret). " +
      "console_inbox and schedule channels record the same body as the delivery's payload without sending it."
  }
} as const satisfies Record<string, WebhookKind>
export type WebhookKindName = keyof typeof WebhookKinds
export const WebhookKindNames = Object.keys(WebhookKinds) as ReadonlyArray<WebhookKindName>

export const WEBHOOK_TIMESTAMP_DESCRIPTION = "When the delivery was recorded (every attempt sends the same body)"

/** The schema of a kind's whole body: `{type, timestamp, data}`. */
export const webhookBodySchema = (kind: WebhookKindName) => {
  const { type, data, summary } = WebhookKinds[kind]
  return described(
    Schema.Struct({
      type: Schema.Literal(type),
      timestamp: Timestamp.annotate({ description: WEBHOOK_TIMESTAMP_DESCRIPTION }),
      data
    }),
    summary
  )
}
