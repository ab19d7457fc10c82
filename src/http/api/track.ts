/**
 * Track monitors. Convention A under `/v1/projects/{pid}/track/monitors` (create, list, get,
 * PATCH pause/resume/refine/cancel, DELETE, messages, intervene, events, run_now, tick runs,
 * snapshots, deliveries); Convention B `POST /api/v1/projects/{pid}/track/tracks` creates the
 * same monitor, with GET by id and events under the same prefix. Paths the spec does not show
 * (run_now, runs, snapshots, deliveries) sit under the monitor, next to messages and intervene.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  CreateMonitorRequest,
  MessageMonitorRequest,
  MonitorInterveneRequest,
  MonitorStatus,
  NotifyChannelKind,
  PageResult,
  PatchMonitorRequest,
  TickStatus,
  TickTrigger
} from "../../domain/monitor.ts"
import { CanonicalSchedule } from "../../domain/schedule-spec.ts"
import { RULES_DOCUMENTATION } from "../../domain/track-rules.ts"
import { BadRequest, Conflict, Forbidden, NotFound, PaymentRequired, ValidationError } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { MaxString, ProjectIdParam, secretField, Timestamp } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"
import { DeliveryResponse } from "./webhook-deliveries.ts"

const Json = Schema.Unknown
const JsonObject = Schema.Record(Schema.String, Schema.Unknown)
const Money = Schema.String.annotate({ description: "USD as a decimal string exact to the micro-dollar, at least two decimals (\"0.000182\", \"1.50\")" })

export const MonitorResponse = Schema.Struct({
  id: Schema.String,
  tenant_id: Schema.String.annotate({ description: "the project id until tenants exist" }),
  owner_user_id: Schema.NullOr(Schema.String).annotate({ description: "null until console accounts exist" }),
  status: MonitorStatus,
  status_reason: Schema.NullOr(Schema.String),
  intent_text: Schema.String,
  notify_channel: Schema.Struct({
    kind: NotifyChannelKind,
    url: Schema.NullOr(Schema.String),
    webhook_id: Schema.NullOr(Schema.String),
    schedule_id: Schema.optionalKey(Schema.NullOr(Schema.String)).annotate({ description: "kind schedule: the DoAnything schedule each notification triggers" })
  }),
  schedule: Schema.NullOr(CanonicalSchedule),
  target_urls: Schema.NullOr(Schema.Array(Schema.String)),
  extraction_schema: Schema.NullOr(JsonObject),
  trigger_dsl: JsonObject.annotate({ description: "the trigger rule in effect: the one given, or the default {\"on\": \"change\"} when none was (never null)", examples: [{ on: "change" }] }),
  stop_condition_dsl: Schema.NullOr(JsonObject).annotate({ description: "null: the monitor runs until stopped" }),
  profile_id: Schema.NullOr(Schema.String),
  baseline_extracted: Json,
  baseline_extracted_at: Schema.NullOr(Timestamp),
  last_tick_at: Schema.NullOr(Timestamp),
  last_tick_n: Schema.Int,
  consecutive_failures: Schema.Int,
  pending_input_request: Schema.NullOr(Schema.Struct({ request_id: Schema.String, question: Schema.String })).annotate({
    description: "the supervisor's open question during alignment (answer it with intervene)"
  }),
  created_at: Timestamp,
  updated_at: Timestamp
})

export const CreateMonitorResponse = Schema.Struct({
  ...MonitorResponse.fields,
  notify_secret: secretField(Schema.String, "Standard Webhooks secret (whsec_...) signing callback_url deliveries; returned only here")
})

export const MonitorListResponse = Schema.Struct({
  items: Schema.Array(MonitorResponse),
  total: Schema.Int,
  page: Schema.Int,
  page_size: Schema.Int,
  has_more: Schema.Boolean
})

export const TickRunResponse = Schema.Struct({
  id: Schema.String,
  monitor_id: Schema.String,
  n: Schema.NullOr(Schema.Int),
  trigger: TickTrigger,
  slot_at: Schema.NullOr(Timestamp),
  status: TickStatus,
  changed: Schema.NullOr(Schema.Boolean),
  fired: Schema.NullOr(Schema.Boolean),
  snapshot_id: Schema.NullOr(Schema.String),
  pages: Schema.Array(PageResult),
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, detail: Schema.String })),
  llm_cost_usd: Money,
  browser_cost_usd: Money,
  proxy_cost_usd: Money,
  service_cost_usd: Money.annotate({ description: "The tick fee (track_per_tick of the price table), charged when the tick succeeds" }),
  total_cost_usd: Money,
  created_at: Timestamp,
  started_at: Schema.NullOr(Timestamp),
  finished_at: Schema.NullOr(Timestamp)
})

export const SnapshotResponse = Schema.Struct({
  id: Schema.String,
  monitor_id: Schema.String,
  run_id: Schema.String,
  n: Schema.Int,
  content_hash: Schema.String,
  changed: Schema.Boolean,
  extracted: Json,
  diff: Json.annotate({ description: "null for the baseline; {kind: json, changes: [{op, path, old, new}]} or {kind: text, added, removed, unified}" }),
  pages: Schema.Array(PageResult),
  text_length: Schema.Int,
  text: Schema.optional(Schema.String),
  fetched_at: Timestamp,
  created_at: Timestamp
})

const EventStream = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" }))
const strict = { errors: "all", onExcessProperty: "error" } as const
const MonitorParams = { ...ProjectIdParam, mid: MaxString(64) }
const page = <S extends Schema.Top>(item: S) => Schema.Struct({ items: Schema.Array(item), next_cursor: Schema.NullOr(Schema.String) })

const createEndpoint = (path: "/monitors" | "/tracks") =>
  HttpApiEndpoint.post("createMonitor", path, {
    params: ProjectIdParam,
    payload: CreateMonitorRequest,
    success: CreateMonitorResponse.annotate({ httpApiStatus: 201 }),
    // Forbidden: plan_limit_reached, the project has as many monitors not ended as its plan allows.
    error: [ValidationError, BadRequest, PaymentRequired, Forbidden]
  }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
    OpenApi.Description,
    "Direct mode (schedule given): active at once; the first tick runs at once (the baseline), then on the schedule " +
      "(cron with expr or its alias cron and an IANA tz, or interval_seconds ≥ WA_SCHEDULE_MIN_INTERVAL_SECONDS). " +
      "Alignment mode (no schedule): pending_clarification; the supervisor asks alignment.input_request questions " +
      "(answer with intervene or messages) and configures the monitor itself; without a model this is 422 " +
      "alignment_requires_model. notify_secret is returned only here.\n\n" + RULES_DOCUMENTATION
  )

export class TrackApi extends HttpApiGroup.make("track")
  .add(
    createEndpoint("/monitors"),
    HttpApiEndpoint.get("listMonitors", "/monitors", {
      params: ProjectIdParam,
      query: {
        page: Schema.optional(Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100_000 }))).annotate({ default: 1 }),
        page_size: Schema.optional(Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))).annotate({ default: 20 }),
        status: Schema.optional(MonitorStatus)
      },
      success: MonitorListResponse,
      error: BadRequest
    }),
    HttpApiEndpoint.get("getMonitor", "/monitors/:mid", { params: MonitorParams, success: MonitorResponse, error: NotFound }),
    HttpApiEndpoint.patch("patchMonitor", "/monitors/:mid", {
      params: MonitorParams,
      payload: PatchMonitorRequest,
      success: MonitorResponse,
      error: [ValidationError, BadRequest, NotFound, Conflict]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "pause (active or failing → paused), resume (paused or failing → active, failures reset), cancel (any " +
        "non-terminal → canceled), refine with `patch` (the create fields; a schedule makes an aligning monitor " +
        "active, removing it sends the monitor back to alignment). Anything else is 409 conflict."
    ),
    HttpApiEndpoint.delete("deleteMonitor", "/monitors/:mid", {
      params: MonitorParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }),
    HttpApiEndpoint.post("messageMonitor", "/monitors/:mid/messages", {
      params: MonitorParams,
      payload: MessageMonitorRequest,
      success: MonitorResponse.annotate({ httpApiStatus: 202 }),
      error: [ValidationError, BadRequest, NotFound, Conflict]
    }).annotate(HttpApi.PayloadParseOptions, strict),
    HttpApiEndpoint.post("interveneMonitor", "/monitors/:mid/intervene", {
      params: MonitorParams,
      payload: MonitorInterveneRequest,
      success: MonitorResponse,
      error: [ValidationError, BadRequest, NotFound, Conflict]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Answers the supervisor's open question (request_id from alignment.input_request): answer, skip, or abandon " +
        "(→ canceled, status_reason user_abandoned_alignment). 409 monitor_not_in_alignment outside alignment or for " +
        "a request_id that is not the open question."
    ),
    HttpApiEndpoint.post("runNow", "/monitors/:mid/run_now", {
      params: MonitorParams,
      success: TickRunResponse.annotate({ httpApiStatus: 202 }),
      error: [NotFound, Conflict, PaymentRequired]
    }).annotate(OpenApi.Description, "Starts a tick now, outside the schedule (also for a paused monitor); 409 once the monitor ended; 402 when the project cannot pay (insufficient_credits, budget_exceeded)."),
    HttpApiEndpoint.get("monitorEvents", "/monitors/:mid/events", {
      params: MonitorParams,
      headers: { "last-event-id": Schema.optional(Schema.String) },
      success: EventStream,
      error: NotFound
    }).annotate(
      OpenApi.Description,
      "SSE: monitor.created, monitor.status_changed, monitor.updated, monitor.tick.started / completed / failed / skipped, " +
        "monitor.change_detected, monitor.notification.queued, monitor.delivery.succeeded / failed, alignment.input_request, " +
        "alignment.message, alignment.answered, alignment.completed, alignment.abandoned; replay after Last-Event-ID."
    ),
    HttpApiEndpoint.get("listRuns", "/monitors/:mid/runs", {
      params: MonitorParams,
      query: PageQuery,
      success: page(TickRunResponse),
      error: [BadRequest, NotFound]
    }),
    HttpApiEndpoint.get("getRun", "/monitors/:mid/runs/:run_id", {
      params: { ...MonitorParams, run_id: MaxString(64) },
      success: TickRunResponse,
      error: NotFound
    }),
    HttpApiEndpoint.get("listSnapshots", "/monitors/:mid/snapshots", {
      params: MonitorParams,
      query: PageQuery,
      success: page(SnapshotResponse),
      error: [BadRequest, NotFound]
    }).annotate(OpenApi.Description, "Newest first; items leave out the text (get one snapshot for it)."),
    HttpApiEndpoint.get("getSnapshot", "/monitors/:mid/snapshots/:snapshot_id", {
      params: { ...MonitorParams, snapshot_id: MaxString(64) },
      success: SnapshotResponse,
      error: NotFound
    }),
    HttpApiEndpoint.get("listDeliveries", "/monitors/:mid/deliveries", {
      params: MonitorParams,
      query: PageQuery,
      success: page(DeliveryResponse),
      error: [BadRequest, NotFound]
    }),
    HttpApiEndpoint.post("retryDelivery", "/monitors/:mid/deliveries/:delivery_id/retry", {
      params: { ...MonitorParams, delivery_id: MaxString(64) },
      success: DeliveryResponse.annotate({ httpApiStatus: 202 }),
      error: [NotFound, Conflict]
    })
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/track")
  .annotateMerge(OpenApi.annotations({ title: "Track monitors (Convention A)" }))
{}

export class TrackFlatApi extends HttpApiGroup.make("track_flat")
  .add(
    createEndpoint("/tracks"),
    HttpApiEndpoint.get("getMonitor", "/tracks/:mid", { params: MonitorParams, success: MonitorResponse, error: NotFound }),
    HttpApiEndpoint.get("monitorEvents", "/tracks/:mid/events", {
      params: MonitorParams,
      headers: { "last-event-id": Schema.optional(Schema.String) },
      success: EventStream,
      error: NotFound
    })
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/api/v1/projects/:pid/track")
  .annotateMerge(OpenApi.annotations({ title: "Track (Convention B)", description: "the same monitors as Convention A" }))
{}
