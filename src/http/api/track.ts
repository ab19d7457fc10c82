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
  MonitorId,
  MonitorInterveneRequest,
  PatchMonitorRequest,
  SnapshotId,
  TickRunId
} from "../../domain/monitor.ts"
import { RULES_DOCUMENTATION } from "../../domain/track-rules.ts"
import { BadRequest, Conflict, Forbidden, NotFound, PaymentRequired, ValidationError } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import {
  CreateMonitorResponse,
  ListMonitorsQuery,
  MonitorListResponse,
  MonitorResponse,
  SnapshotListResponse,
  SnapshotResponse,
  TickRunListResponse,
  TickRunResponse
} from "../../domain/wire/track.ts"
import { DeliveryListResponse, DeliveryResponse } from "../../domain/wire/webhook-deliveries.ts"
import { DeliveryIdParam, ProjectIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const EventStream = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" }))
const strict = { errors: "all", onExcessProperty: "error" } as const
/**
 * Track's ids in a path, decoded as the model's branded ids (the brand is type-level: on the wire
 * and in the OpenAPI document the same strings, at most 64 characters).
 */
const MonitorIdParam = MonitorId.check(Schema.isMaxCodePoints(64))
const TickRunIdParam = TickRunId.check(Schema.isMaxCodePoints(64))
const SnapshotIdParam = SnapshotId.check(Schema.isMaxCodePoints(64))
const MonitorParams = { ...ProjectIdParam, mid: MonitorIdParam }

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
      query: ListMonitorsQuery,
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
      success: TickRunListResponse,
      error: [BadRequest, NotFound]
    }),
    HttpApiEndpoint.get("getRun", "/monitors/:mid/runs/:run_id", {
      params: { ...MonitorParams, run_id: TickRunIdParam },
      success: TickRunResponse,
      error: NotFound
    }),
    HttpApiEndpoint.get("listSnapshots", "/monitors/:mid/snapshots", {
      params: MonitorParams,
      query: PageQuery,
      success: SnapshotListResponse,
      error: [BadRequest, NotFound]
    }).annotate(OpenApi.Description, "Newest first; items leave out the text (get one snapshot for it)."),
    HttpApiEndpoint.get("getSnapshot", "/monitors/:mid/snapshots/:snapshot_id", {
      params: { ...MonitorParams, snapshot_id: SnapshotIdParam },
      success: SnapshotResponse,
      error: NotFound
    }),
    HttpApiEndpoint.get("listDeliveries", "/monitors/:mid/deliveries", {
      params: MonitorParams,
      query: PageQuery,
      success: DeliveryListResponse,
      error: [BadRequest, NotFound]
    }),
    HttpApiEndpoint.post("retryDelivery", "/monitors/:mid/deliveries/:delivery_id/retry", {
      params: { ...MonitorParams, delivery_id: DeliveryIdParam },
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
