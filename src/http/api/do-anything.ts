/**
 * DoAnything: sessions (a browser, a profile, a workspace) holding runs (one instruction each),
 * under Convention A (`/v1/projects/{pid}/do_anything/sessions/...`) and Convention B
 * (`/api/v1/projects/{pid}/do_anything/runs`, flat runs).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, Forbidden, NotFound, PaymentRequired, TooManyRequests, ValidationError } from "../../domain/api-errors.ts"
import {
  CancelRunRequest,
  ContinueTaskRequest,
  CreateRunRequest,
  FeedbackRequest,
  FlatRunResponse,
  InterveneRequest,
  InterveneResponse,
  ListSessionsQuery,
  MessageQueuedResponse,
  MessageRequest,
  RunResponse,
  SessionListResponse,
  SessionResponse
} from "../../domain/wire/do-anything.ts"
import { SignedUrlQuery } from "../../domain/wire/common.ts"
import { ScreenshotId } from "../../domain/id-schemas.ts"
import { ProjectIdParam, RunIdParam, SessionIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const strict = { errors: "all", onExcessProperty: "error" } as const
const sessionParams = { ...ProjectIdParam, sid: SessionIdParam }
const runParams = { ...sessionParams, rid: RunIdParam }
/** A screenshot id in a signed URL's path (`shot_`, or `evt_` for older ones), decoded as the branded ScreenshotId. */
const ScreenshotIdParam = ScreenshotId.check(Schema.isMaxCodePoints(64))
// PaymentRequired: 402 insufficient_credits when billing is on (WA_BILLING) and the balance is below the minimum.
// Forbidden: 403 safety_boundary_violated when a URL of a create breaks the project's safety boundary (/v1/projects/{pid}/safety).
const writeErrors = [ValidationError, NotFound, Conflict, PaymentRequired, Forbidden] as const
const EventStream = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" }))
const LastEventId = { "last-event-id": Schema.optional(Schema.String) }

export class DoAnythingApi extends HttpApiGroup.make("do_anything")
  .add(
    HttpApiEndpoint.post("createSession", "/sessions", {
      params: ProjectIdParam,
      payload: CreateRunRequest,
      success: SessionResponse.annotate({ httpApiStatus: 201 }),
      error: [...writeErrors, TooManyRequests]
    }).annotate(
      OpenApi.Description,
      "A new session with its first run. With `session_id`: no new session; a follow-up run is added to that session " +
        "(as `POST /api/v1/projects/{pid}/do_anything/runs` with session_id does; instructions optional: without them the run " +
        "observes the session's page with read-only actions) and the session is answered with its runs, the new one last " +
        "(latest_run_id). 404 session_not_found for an unknown session; 409 conflict when its latest run is not terminal " +
        "(extra.run_id, extra.status) or it is closed (extra.session_id)."
    ),
    HttpApiEndpoint.get("listSessions", "/sessions", {
      params: ProjectIdParam,
      query: ListSessionsQuery,
      success: SessionListResponse,
      error: BadRequest
    }),
    HttpApiEndpoint.get("getSession", "/sessions/:sid", { params: sessionParams, success: SessionResponse, error: NotFound }),
    HttpApiEndpoint.post("closeSession", "/sessions/:sid/close", { params: sessionParams, success: SessionResponse, error: NotFound }),
    HttpApiEndpoint.post("createRun", "/sessions/:sid/runs", {
      params: sessionParams,
      payload: CreateRunRequest,
      success: RunResponse.annotate({ httpApiStatus: 201 }),
      error: writeErrors
    }),
    HttpApiEndpoint.get("getRun", "/sessions/:sid/runs/:rid", { params: runParams, success: RunResponse, error: NotFound }),
    HttpApiEndpoint.get("runEvents", "/sessions/:sid/runs/:rid/events", {
      params: runParams,
      headers: LastEventId,
      success: EventStream,
      error: NotFound
    }),
    HttpApiEndpoint.post("message", "/sessions/:sid/runs/:rid/messages", {
      params: runParams,
      payload: MessageRequest,
      success: MessageQueuedResponse.annotate({ httpApiStatus: 202 }),
      error: writeErrors
    }),
    HttpApiEndpoint.post("intervene", "/sessions/:sid/runs/:rid/intervene", {
      params: runParams,
      payload: InterveneRequest,
      success: InterveneResponse,
      error: writeErrors
    }).annotate(
      OpenApi.Description,
      "By `kind`: `answer_input_request` (default; input_request_id and response) answers the agent's question. " +
        "`take_control` (optional reason) on a running run (or one awaiting input, whose question is withdrawn when a person connects) issues a signed control URL (standalone_control_url, exp; event " +
        "run.take_control_pending); when a person opens it the run becomes paused (run.user_paused) after the agent's current " +
        "step; nobody connecting before exp gives run.take_control_expired. `release_control` (optional trigger, default `api`) " +
        "on a paused run gives the browser back (running, run.user_released). `refresh_control_url` issues a new URL for the " +
        "latest take_control (the old one stops working). 409 conflict when the run's status does not allow the kind."
    ),
    HttpApiEndpoint.post("cancel", "/sessions/:sid/runs/:rid/cancel", {
      params: runParams,
      payload: CancelRunRequest,
      success: RunResponse,
      error: writeErrors
    }),
    HttpApiEndpoint.post("continue", "/sessions/:sid/runs/:rid/continue", {
      params: runParams,
      payload: ContinueTaskRequest,
      success: RunResponse.annotate({ httpApiStatus: 201 }),
      error: writeErrors
    }),
    HttpApiEndpoint.post("feedback", "/sessions/:sid/runs/:rid/feedback", {
      params: runParams,
      payload: FeedbackRequest,
      success: RunResponse,
      error: writeErrors
    }).annotate(HttpApi.PayloadParseOptions, strict)
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/do_anything")
  .annotateMerge(OpenApi.annotations({ title: "DoAnything (Convention A)", description: "Sessions that contain runs." }))
{}

export class DoAnythingFlatApi extends HttpApiGroup.make("do_anything_flat")
  .add(
    HttpApiEndpoint.post("createRun", "/runs", {
      params: ProjectIdParam,
      payload: CreateRunRequest,
      success: FlatRunResponse.annotate({ httpApiStatus: 202 }),
      error: [...writeErrors, TooManyRequests]
    }),
    HttpApiEndpoint.get("getRun", "/runs/:rid", { params: { ...ProjectIdParam, rid: RunIdParam }, success: FlatRunResponse, error: NotFound }),
    HttpApiEndpoint.get("runEvents", "/runs/:rid/events", {
      params: { ...ProjectIdParam, rid: RunIdParam },
      headers: LastEventId,
      success: EventStream,
      error: NotFound
    })
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/api/v1/projects/:pid/do_anything")
  .annotateMerge(OpenApi.annotations({
    title: "DoAnything (Convention B)",
    description: "Flat runs: status succeeded, terminal_reason done, everywhere under /api/v1: responses, the event streams " +
      "(run.status_changed and run.completed data: status succeeded, terminal_reason done), 409 envelopes (extra.status) and the " +
      "callback_url body of a run created here (a run created under /v1 gets Convention A's body, status done)."
  }))
{}

export class MediaApi extends HttpApiGroup.make("media")
  .add(
    HttpApiEndpoint.get("screenshot", "/v1/screenshots/:id", {
      params: { id: ScreenshotIdParam },
      query: SignedUrlQuery,
      success: Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "image/jpeg" })),
      error: [NotFound, Forbidden]
    })
  )
  .annotateMerge(OpenApi.annotations({
    title: "Media",
    description: "Signed, short-lived URLs (no API key needed); an expired or altered URL is 403 (url_expired or " +
      "invalid_signature). Reading the run's events again gives freshly signed screenshot URLs."
  }))
{}
