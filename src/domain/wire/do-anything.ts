/**
 * DoAnything on the wire: the request bodies of sessions and runs, the session and run views
 * under both conventions, and the queries of their lists (src/http/api/do-anything.ts).
 */
import { Schema } from "effect"
import { doAnythingFields } from "../run.ts"
import { RecordingQuality } from "../recording.ts"
import { SessionScheduleField } from "../schedule-spec.ts"
import { PageQuery } from "../pagination.ts"
import { MaxString, OptionalNullable } from "../schemas.ts"
import { InputRequestId } from "../id-schemas.ts"
import { RunStatusA, RunStatusB, SessionStatus, TerminalReason } from "./common.ts"

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

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
  input_request_id: Schema.optional(InputRequestId.check(Schema.isMaxCodePoints(64))),
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
  terminal_reason: TerminalReason,
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
  terminal_reason: TerminalReason.annotate({ description: "done when status is succeeded; otherwise why the run ended (null while it runs)" }),
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

/** The answer to a message: it waits for the agent's next step. */
export const MessageQueuedResponse = Schema.Struct({ queued: Schema.Boolean })

/** The query of the session list. */
export const ListSessionsQuery = { ...PageQuery, status: Schema.optional(Schema.Literals(["running", "idle", "closed"])) }
