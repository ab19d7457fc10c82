/**
 * Schedules of DoAnything sessions (`/v1/projects/{pid}/schedules`): list, read, pause, resume,
 * delete, trigger (event), and the firing history with the skipped firings and why. A schedule is
 * made by a session request's `schedule` (src/do-anything/schedules.ts); Track monitors'
 * schedules are not listed here (they are managed through their monitor).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { MAX_TRIGGER_PAYLOAD_BYTES } from "../../domain/limits.ts"
import { StoredSchedule } from "../../domain/schedule-spec.ts"
import { BadRequest, Conflict, Forbidden, NotFound, ValidationError } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { MaxString, ProjectIdParam, Timestamp } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

export const FiringOutcome = Schema.Literals(["pending", "run_created", "skipped"])
export const SkipReason = Schema.Literals(["paused", "session_not_found", "scheduled_cap_reached", "previous_run_active", "insufficient_credits", "budget_exceeded"])

export const FiringResponse = Schema.Struct({
  schedule_id: Schema.String,
  slot_at: Timestamp.annotate({ description: "the slot fired (an event trigger's arrival time)" }),
  trigger: Schema.Literals(["schedule", "event"]),
  payload: Schema.Unknown.annotate({ description: "the trigger's payload (null for a timed slot)" }),
  outcome: FiringOutcome.annotate({ description: "pending until the scheduler decides it; run_created (run_id) or skipped (reason)" }),
  reason: Schema.NullOr(SkipReason),
  run_id: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  decided_at: Schema.NullOr(Timestamp)
})

export const ScheduleResponse = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  session_id: Schema.String,
  source_run_id: Schema.NullOr(Schema.String).annotate({ description: "the run whose request set the schedule (its instructions are the firings')" }),
  kind: Schema.Literals(["cron", "interval", "event", "autonomous"]),
  schedule: StoredSchedule.annotate({ description: "the schedule in canonical form" }),
  instructions: Schema.String,
  paused: Schema.Boolean,
  next_fire_at: Schema.NullOr(Timestamp).annotate({ description: "null while paused, and for an event schedule (it fires when triggered)" }),
  last_fired_at: Schema.NullOr(Timestamp),
  last_outcome: Schema.NullOr(FiringOutcome),
  last_reason: Schema.NullOr(SkipReason),
  last_run_id: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
})

const TriggerPayload = Schema.Unknown.check(Schema.makeFilter(
  (payload) => payload === undefined || Buffer.byteLength(JSON.stringify(payload)) <= MAX_TRIGGER_PAYLOAD_BYTES || `must be at most ${MAX_TRIGGER_PAYLOAD_BYTES} bytes of JSON`,
  { description: `any JSON value of at most ${MAX_TRIGGER_PAYLOAD_BYTES} bytes` }
))

export const TriggerRequest = Schema.Struct({
  payload: Schema.optional(TriggerPayload.annotate({ description: "handed to the run: added to its instructions as context (data, not instructions)" }))
})

const strict = { errors: "all", onExcessProperty: "error" } as const
const ScheduleParams = { ...ProjectIdParam, schedule_id: MaxString(64) }
const BooleanString = Schema.Literals(["true", "false"])

export class SchedulesApi extends HttpApiGroup.make("schedules")
  .add(
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: {
        ...PageQuery,
        kind: Schema.optional(Schema.Literals(["cron", "interval", "event", "autonomous"])),
        paused: Schema.optional(BooleanString),
        session_id: Schema.optional(MaxString(64)),
        event: Schema.optional(MaxString(200))
      },
      success: Schema.Struct({ items: Schema.Array(ScheduleResponse), next_cursor: Schema.NullOr(Schema.String) }),
      error: BadRequest
    }).annotate(OpenApi.Description, "The project's DoAnything schedules, newest first (Track monitors' schedules are managed through their monitors)."),
    HttpApiEndpoint.get("get", "/:schedule_id", { params: ScheduleParams, success: ScheduleResponse, error: NotFound }),
    HttpApiEndpoint.post("pause", "/:schedule_id/pause", { params: ScheduleParams, success: ScheduleResponse, error: NotFound })
      .annotate(OpenApi.Description, "Stops firing (next_fire_at null); a run under way goes on."),
    HttpApiEndpoint.post("resume", "/:schedule_id/resume", { params: ScheduleParams, success: ScheduleResponse, error: NotFound })
      .annotate(OpenApi.Description, "Fires again from the first slot after now (slots missed while paused are not fired)."),
    HttpApiEndpoint.delete("delete", "/:schedule_id", { params: ScheduleParams, success: HttpApiSchema.NoContent, error: NotFound })
      .annotate(OpenApi.Description, "Deletes the schedule and its firing history; the session and its runs stay."),
    HttpApiEndpoint.get("firings", "/:schedule_id/firings", {
      params: ScheduleParams,
      query: { ...PageQuery, outcome: Schema.optional(FiringOutcome) },
      success: Schema.Struct({ items: Schema.Array(FiringResponse), next_cursor: Schema.NullOr(Schema.String) }),
      error: [NotFound, BadRequest]
    }).annotate(OpenApi.Description, "Firings, newest slot first: runs created, and firings skipped with their reason."),
    HttpApiEndpoint.post("trigger", "/:schedule_id/trigger", {
      params: ScheduleParams,
      payload: TriggerRequest,
      success: FiringResponse.annotate({ httpApiStatus: 202 }),
      error: [NotFound, Conflict, ValidationError, Forbidden]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      `Fires the schedule now (an event schedule's way to fire; any kind may be triggered) with an optional JSON payload of at most ${MAX_TRIGGER_PAYLOAD_BYTES} bytes, ` +
        "handed to the run as context. The firing is recorded at once (outcome pending) and decided by the scheduler like a timed one: " +
        "skipped while the session's previous run is active or the scheduled cap is reached. 409 schedule_paused for a paused schedule. " +
        "403 safety_boundary_violated when an http(s) URL in the payload breaks the project's safety boundary (the payload goes into the run's prompt); nothing is recorded."
    )
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/schedules")
  .annotateMerge(OpenApi.annotations({
    title: "Schedules",
    description: "Scheduled DoAnything sessions: cron, interval, event and autonomous schedules, each firing adding a run to its session."
  }))
{}
