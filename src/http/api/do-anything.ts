/**
 * DoAnything: sessions (a browser, a profile, a workspace) holding runs (one instruction each),
 * under Convention A (`/v1/projects/{pid}/do_anything/sessions/...`) and Convention B
 * (`/api/v1/projects/{pid}/do_anything/runs`, flat runs).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, Forbidden, NotFound, PaymentRequired, TooManyRequests, ValidationError } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { doAnythingFields } from "../../domain/run.ts"
import { MaxString, OptionalNullable, ProjectIdParam, RunIdParam, RunStatusA, RunStatusB, SessionIdParam, SessionStatus } from "./schemas.ts"
import { RecordingQuality } from "../../domain/recording.ts"
import { SessionScheduleField } from "../../domain/schedule-spec.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

export { MAX_OUTPUT_SCHEMA_BYTES } from "../../domain/run.ts"

/** `recording` on the wire: its quality is one of low, medium (default), high (src/recordings/settings.ts). */
const RecordingRequest = Schema.Struct({
  enabled: Schema.optional(Schema.Boolean),
  quality: Schema.optional(RecordingQuality),
  capture_during_take_control: Schema.optional(Schema.Boolean)
}).annotate({
  description: "Records the run's pages (rrweb DOM recording of the agent's active tab) when enabled is true; quality low, " +
    "medium (default) or high; capture_during_take_control (default true) false leaves out the time a person controls the page."
})

export const CreateRunRequest = Schema.Struct({
  ...doAnythingFields,
  instructions: OptionalNullable(MaxString(10_000)),
  recording: OptionalNullable(RecordingRequest),
  schedule: OptionalNullable(SessionScheduleField)
})
export type CreateRunRequest = typeof CreateRunRequest.Type

export const CancelRunRequest = Schema.Struct({ reason: OptionalNullable(MaxString(200)) })
export const ContinueTaskRequest = Schema.Struct({ content: MaxString(10_000).check(Schema.isMinCodePoints(1)) })
export const MessageRequest = Schema.Struct({ content: MaxString(10_000).check(Schema.isMinCodePoints(1)) })
export const FeedbackRequest = Schema.Struct({
  rating: OptionalNullable(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 5 }))),
  thumbs: OptionalNullable(Schema.Literals(["up", "down"])),
  feedback_text: OptionalNullable(MaxString(2000)),
  labels: Schema.optional(Schema.Array(MaxString(100)).check(Schema.isMaxLength(20)))
})
export const InterveneRequest = Schema.Struct({
  kind: Schema.optional(Schema.Literals(["answer_input_request", "take_control", "release_control", "refresh_control_url"])),
  input_request_id: Schema.optional(MaxString(64)),
  response: Schema.optional(Schema.Unknown),
  metadata: Schema.optional(JsonObject),
  reason: Schema.optional(MaxString(200)),
  trigger: Schema.optional(MaxString(64))
})

const Error = Schema.Struct({
  code: Schema.String,
  detail: Schema.String,
  extra: Schema.optional(Schema.Record(Schema.String, Schema.Unknown).annotate({
    description: "safety_boundary_violated: reason (what was refused and by which rule)"
  }))
})
const Money = Schema.String.annotate({ description: "USD as a decimal string exact to the micro-dollar, at least two decimals (\"0.000182\", \"1.50\")" })

export const RunResponse = Schema.Struct({
  id: Schema.String,
  session_id: Schema.NullOr(Schema.String),
  status: RunStatusA,
  terminal_reason: Schema.NullOr(Schema.String),
  expired: Schema.Boolean,
  instructions: Schema.NullOr(Schema.String),
  output: Schema.Unknown,
  error: Schema.NullOr(Error),
  step_count: Schema.Int,
  max_steps: Schema.Int,
  model: Schema.NullOr(Schema.String),
  parent_run_id: Schema.NullOr(Schema.String),
  skills: Schema.Array(Schema.String),
  allowed_actions: Schema.Array(Schema.String),
  keep_alive: Schema.Unknown,
  callback_url: Schema.Unknown,
  output_schema: Schema.Unknown,
  /** Null when the run is not recorded; artifact_id and replay_url are set once the recording is stored (after the run ends). */
  recording: Schema.NullOr(Schema.Struct({
    enabled: Schema.Boolean,
    quality: Schema.String,
    capture_during_take_control: Schema.Boolean,
    artifact_id: Schema.NullOr(Schema.String),
    size_bytes: Schema.NullOr(Schema.Int),
    replay_url: Schema.NullOr(Schema.String),
    replay_url_expires_at: Schema.NullOr(Schema.String)
  })),
  llm_cost_usd: Money,
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String),
  deadline_at: Schema.NullOr(Schema.String)
})

/** The run after an intervene; take_control and refresh_control_url add the control URL they issued. */
export const InterveneResponse = Schema.Struct({
  ...RunResponse.fields,
  standalone_control_url: Schema.optional(Schema.String.annotate({
    description: "take_control / refresh_control_url: the signed control page URL for a person (no API key needed; also in run.take_control_pending)"
  })),
  exp: Schema.optional(Schema.Int.annotate({ description: "unix seconds: the URL stops working if nobody opens it by then" }))
})

/** Convention B's run: status `succeeded` where Convention A says `done`, with terminal_reason `done`. */
export const FlatRunResponse = Schema.Struct({
  ...RunResponse.fields,
  status: RunStatusB,
  terminal_reason: Schema.NullOr(Schema.String).annotate({ description: "done when status is succeeded; otherwise why the run ended (null while it runs)" }),
  run_id: Schema.String
})

export const SessionResponse = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  status: SessionStatus,
  profile_id: Schema.NullOr(Schema.String),
  workspace_id: Schema.NullOr(Schema.String),
  inbox_address: Schema.NullOr(Schema.String).annotate({
    description: "the session's email inbox, <session id>@<WA_MAIL_DOMAIN> (agentmail); null when its run was created with agentmail: false or the service receives no mail"
  }),
  latest_run_id: Schema.NullOr(Schema.String),
  runs: Schema.Array(RunResponse),
  llm_cost_usd: Money,
  browser_cost_usd: Money,
  proxy_cost_usd: Money,
  total_cost_usd: Money,
  created_at: Schema.String,
  updated_at: Schema.String,
  closed_at: Schema.NullOr(Schema.String)
})

export const SessionListResponse = Schema.Struct({
  items: Schema.Array(SessionResponse),
  next_cursor: Schema.NullOr(Schema.String)
})

const strict = { errors: "all", onExcessProperty: "error" } as const
const sessionParams = { ...ProjectIdParam, sid: SessionIdParam }
const runParams = { ...sessionParams, rid: RunIdParam }
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
      query: { ...PageQuery, status: Schema.optional(Schema.Literals(["running", "idle", "closed"])) },
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
      success: Schema.Struct({ queued: Schema.Boolean }).annotate({ httpApiStatus: 202 }),
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
      params: { id: MaxString(64) },
      query: { expires: Schema.NumberFromString, signature: MaxString(128) },
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
