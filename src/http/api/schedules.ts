/**
 * Schedules of DoAnything sessions (`/v1/projects/{pid}/schedules`): list, read, pause, resume,
 * delete, trigger (event), and the firing history with the skipped firings and why. A schedule is
 * made by a session request's `schedule` (src/do-anything/schedules.ts); Track monitors'
 * schedules are not listed here (they are managed through their monitor).
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { MAX_TRIGGER_PAYLOAD_BYTES } from "../../domain/limits.ts"
import { BadRequest, Conflict, Forbidden, NotFound, ValidationError } from "../../domain/api-errors.ts"
import {
  FiringListResponse,
  FiringResponse,
  ListFiringsQuery,
  ListSchedulesQuery,
  ScheduleListResponse,
  ScheduleResponse,
  TriggerRequest
} from "../../domain/wire/schedules.ts"
import { ProjectIdParam, ScheduleIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const strict = { errors: "all", onExcessProperty: "error" } as const
const ScheduleParams = { ...ProjectIdParam, schedule_id: ScheduleIdParam }

export class SchedulesApi extends HttpApiGroup.make("schedules")
  .add(
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: ListSchedulesQuery,
      success: ScheduleListResponse,
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
      query: ListFiringsQuery,
      success: FiringListResponse,
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
