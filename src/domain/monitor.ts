/**
 * The typed model of Track: monitors, their tick runs and snapshots, and the wire requests that
 * create and steer them. Rows are decoded into these once, where the store reads them
 * (src/track/monitor-store.ts).
 *
 * States: `pending_clarification` (alignment: the supervisor asks questions), `active` (ticks on
 * its schedule), `paused`, `failing` (too many consecutive failed ticks; still ticks, so it heals
 * itself on the next good tick, and resume/refine clear it), and the terminal `completed` (stop
 * condition met) and `canceled`.
 */
import { Schema } from "effect"
import { CanonicalSchedule, ScheduleSpec } from "./schedule-spec.ts"
import { StopConditionDsl, TriggerDsl } from "./track-rules.ts"
import { MaxString, OptionalNullable } from "./schemas.ts"
import { ProjectId, RunId } from "./run.ts"
import { InputRequestId, MonitorId, ProfileId, ScheduleId, WebhookEndpointId } from "./id-schemas.ts"
import { jsonBytes } from "./json-strings.ts"

/**
 * `mon_`, `tick_`, `snap_`: the ids of Track (src/domain/ids.ts makes them branded the same way).
 * MonitorId's schema is in id-schemas.ts (run.ts's TrackTickRequest names a monitor), re-exported here.
 */
export { MonitorId }
/**
 * A tick run's id (`tick_`) is a RunId: a tick is a row of `runs` (kind track_tick) that the run
 * kernel executes as it executes any run (src/track/tick.ts), so the kernel and Track read its id
 * as the one brand, with no conversion between them. The name says which runs a field holds.
 */
export const TickRunId = RunId
export type TickRunId = RunId
export const SnapshotId = Schema.String.pipe(Schema.brand("SnapshotId"))
export type SnapshotId = typeof SnapshotId.Type

export const MonitorStatuses = ["pending_clarification", "active", "paused", "failing", "completed", "canceled"] as const
export const MonitorStatus = Schema.Literals(MonitorStatuses)
export type MonitorStatus = typeof MonitorStatus.Type

export const isTerminalMonitor = (status: MonitorStatus) => status === "completed" || status === "canceled"

/** The limits of the spec's table. */
export const MAX_TARGET_URLS = 20
export const MAX_INTENT = 4000

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)
const MAX_SCHEMA_BYTES = 64 * 1024
const ExtractionSchema = JsonObject.check(Schema.makeFilter(
  (schema) => jsonBytes(schema) <= MAX_SCHEMA_BYTES || `must be at most ${MAX_SCHEMA_BYTES} bytes of JSON`,
  { description: `a JSON Schema of at most ${MAX_SCHEMA_BYTES} bytes` }
))

/** An absolute http(s) URL (the spec's `uri`). */
export const TargetUrl = MaxString(2083).check(Schema.makeFilter((url: string) => {
  try {
    const parsed = new URL(url)
    return (parsed.protocol === "http:" || parsed.protocol === "https:") && parsed.hostname !== "" ? true : "must be an absolute http or https URL"
  } catch {
    return "must be an absolute http or https URL"
  }
}, { expected: "an absolute http or https URL" })).annotate({ format: "uri" })

export const NotifyChannelKind = Schema.Literals(["callback_url", "global_webhook", "console_inbox", "schedule"])
export type NotifyChannelKind = typeof NotifyChannelKind.Type

/**
 * Exactly one of `url` / `webhook_id` / `schedule_id`, the one its kind names (none for
 * `console_inbox`). `schedule`: each notification triggers a DoAnything schedule of the project
 * (src/do-anything/schedules.ts), its payload the notification.
 */
export const NotifyChannelSpec = Schema.Struct({
  kind: NotifyChannelKind,
  url: OptionalNullable(TargetUrl),
  webhook_id: OptionalNullable(WebhookEndpointId.check(Schema.isMaxCodePoints(64))),
  schedule_id: OptionalNullable(ScheduleId.check(Schema.isMaxCodePoints(64)))
}).check(Schema.makeFilter((channel) => {
  const hasUrl = channel.url != null
  const hasWebhook = channel.webhook_id != null
  if (channel.kind === "schedule") {
    if (channel.schedule_id == null) return { path: ["schedule_id"], issue: "schedule_id is required when kind is schedule" }
    if (hasUrl || hasWebhook) return { path: [hasUrl ? "url" : "webhook_id"], issue: "kind schedule takes schedule_id only" }
    return true
  }
  if (channel.schedule_id != null) return { path: ["schedule_id"], issue: "schedule_id is only for kind schedule" }
  if (channel.kind === "callback_url") {
    if (!hasUrl) return { path: ["url"], issue: "url is required when kind is callback_url" }
    if (hasWebhook) return { path: ["webhook_id"], issue: "webhook_id is only for kind global_webhook" }
  } else if (channel.kind === "global_webhook") {
    if (!hasWebhook) return { path: ["webhook_id"], issue: "webhook_id is required when kind is global_webhook" }
    if (hasUrl) return { path: ["url"], issue: "url is only for kind callback_url" }
  } else if (hasUrl || hasWebhook) {
    return { path: [hasUrl ? "url" : "webhook_id"], issue: "console_inbox takes neither url nor webhook_id" }
  }
  return true
}))
export type NotifyChannelSpec = typeof NotifyChannelSpec.Type

/** The channel as stored and shown (`NotifyChannelOut`). */
export interface NotifyChannel {
  readonly kind: NotifyChannelKind
  readonly url: string | null
  /** Kind `global_webhook`: one of the project's webhook endpoints. */
  readonly webhook_id: WebhookEndpointId | null
  /** Kind `schedule` only: one of the project's DoAnything schedules. */
  readonly schedule_id?: ScheduleId | null
}

export const CreateMonitorRequest = Schema.Struct({
  intent: Schema.String.check(Schema.isMinCodePoints(4), Schema.isMaxCodePoints(MAX_INTENT)),
  notify_channel: NotifyChannelSpec,
  schedule: OptionalNullable(ScheduleSpec),
  target_urls: OptionalNullable(Schema.Array(TargetUrl).check(Schema.isMaxLength(MAX_TARGET_URLS))),
  extraction_schema: OptionalNullable(ExtractionSchema),
  trigger_dsl: OptionalNullable(TriggerDsl),
  stop_condition_dsl: OptionalNullable(StopConditionDsl),
  profile_id: OptionalNullable(ProfileId.check(Schema.isMaxCodePoints(36)))
})
export type CreateMonitorRequest = typeof CreateMonitorRequest.Type

/** What `refine` may change (the same fields and rules as create; intent and channel included). */
export const MonitorPatch = Schema.Struct({
  intent: Schema.optional(Schema.String.check(Schema.isMinCodePoints(4), Schema.isMaxCodePoints(MAX_INTENT))),
  notify_channel: Schema.optional(NotifyChannelSpec),
  schedule: OptionalNullable(ScheduleSpec),
  target_urls: OptionalNullable(Schema.Array(TargetUrl).check(Schema.isMaxLength(MAX_TARGET_URLS))),
  extraction_schema: OptionalNullable(ExtractionSchema),
  trigger_dsl: OptionalNullable(TriggerDsl),
  stop_condition_dsl: OptionalNullable(StopConditionDsl),
  profile_id: OptionalNullable(ProfileId.check(Schema.isMaxCodePoints(36)))
})
export type MonitorPatch = typeof MonitorPatch.Type

export const PatchMonitorRequest = Schema.Struct({
  action: Schema.Literals(["pause", "resume", "refine", "cancel"]),
  patch: Schema.optional(MonitorPatch),
  reason: OptionalNullable(MaxString(200))
}).check(Schema.makeFilter((request) => {
  if (request.action === "refine" && request.patch === undefined) return { path: ["patch"], issue: "patch is required when action is refine" }
  if (request.action !== "refine" && request.patch !== undefined) return { path: ["patch"], issue: "patch is only for action refine" }
  return true
}))
export type PatchMonitorRequest = typeof PatchMonitorRequest.Type

/** What a user's alignment message is (default user_clarification). */
export const AlignmentMessageKind = Schema.Literals(["user_clarification", "user_correction"])
export type AlignmentMessageKind = typeof AlignmentMessageKind.Type

export const MessageMonitorRequest = Schema.Struct({
  content: Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(4000)),
  kind: Schema.optional(AlignmentMessageKind)
})

export const MonitorInterveneRequest = Schema.Struct({
  request_id: Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(64)),
  kind: Schema.optional(Schema.Literals(["answer", "skip", "abandon"])),
  response: Schema.optional(MaxString(4000))
})

/** One turn of the alignment conversation (kept on the monitor). */
export const AlignmentTurn = Schema.Struct({
  role: Schema.Literals(["supervisor", "user"]),
  content: Schema.String,
  request_id: Schema.optional(Schema.String),
  kind: Schema.optional(Schema.String)
})
export type AlignmentTurn = typeof AlignmentTurn.Type

/** The supervisor's open question; its id was made as an `ir_` id (alignment turns keep the text the user echoed). */
export const PendingQuestion = Schema.Struct({ request_id: InputRequestId, question: Schema.String })
export type PendingQuestion = typeof PendingQuestion.Type

const Nullable = <S extends Schema.Top>(schema: S) => Schema.NullOr(schema)

export class Monitor extends Schema.Class<Monitor>("wa/domain/Monitor")({
  id: MonitorId,
  project_id: ProjectId,
  /** The API key or the console user (its id) that created the monitor: a principal, not one kind of id. */
  created_by_key_id: Nullable(Schema.String),
  status: MonitorStatus,
  status_reason: Nullable(Schema.String),
  intent_text: Schema.String,
  notify_channel: Schema.Struct({ kind: NotifyChannelKind, url: Nullable(Schema.String), webhook_id: Nullable(WebhookEndpointId), schedule_id: Schema.optionalKey(Nullable(ScheduleId)) }),
  notify_secret: Schema.String,
  schedule: Nullable(CanonicalSchedule),
  target_urls: Nullable(Schema.Array(Schema.String)),
  extraction_schema: Nullable(JsonObject),
  trigger_dsl: Nullable(JsonObject),
  stop_condition_dsl: Nullable(JsonObject),
  profile_id: Nullable(ProfileId),
  baseline_extracted: Nullable(Schema.Unknown),
  baseline_extracted_at: Nullable(Schema.Date),
  last_tick_at: Nullable(Schema.Date),
  last_tick_n: Schema.Int,
  consecutive_failures: Schema.Int,
  last_snapshot_id: Nullable(SnapshotId),
  alignment: Schema.Array(AlignmentTurn),
  pending_question: Nullable(PendingQuestion),
  created_at: Schema.Date,
  updated_at: Schema.Date
}) {}

export const TickTrigger = Schema.Literals(["schedule", "run_now"])
export const TickStatus = Schema.Literals(["running", "done", "failed", "skipped"])
export type TickStatus = typeof TickStatus.Type

/** One page of a tick: what was fetched and how. */
export const PageResult = Schema.Struct({
  url: Schema.String,
  final_url: Nullable(Schema.String),
  ok: Schema.Boolean,
  method: Nullable(Schema.String),
  content_hash: Nullable(Schema.String),
  error: Nullable(Schema.String)
})
export type PageResult = typeof PageResult.Type

/** A tick run: one execution of a monitor (on its schedule or by run_now). */
export class TickRun extends Schema.Class<TickRun>("wa/domain/TickRun")({
  id: TickRunId,
  monitor_id: MonitorId,
  project_id: ProjectId,
  n: Nullable(Schema.Int),
  trigger: TickTrigger,
  slot_at: Nullable(Schema.Date),
  status: TickStatus,
  changed: Nullable(Schema.Boolean),
  fired: Nullable(Schema.Boolean),
  snapshot_id: Nullable(SnapshotId),
  pages: Schema.Array(PageResult),
  error_code: Nullable(Schema.String),
  error_detail: Nullable(Schema.String),
  llm_cost_micros: Schema.Int,
  /** The tick's fee (track_per_tick), charged when it succeeds. */
  service_cost_micros: Schema.Int,
  created_at: Schema.Date,
  started_at: Nullable(Schema.Date),
  finished_at: Nullable(Schema.Date)
}) {}

/**
 * What changed between two snapshots of a monitor: the structural diff of the extracted JSON, or
 * the line counts and unified diff of the text (src/track/diff.ts). Snapshots keep it, and
 * monitor.change_detected and monitor.triggered carry it.
 */
export const MonitorDiff = Schema.Union([
  Schema.Struct({
    kind: Schema.Literal("json"),
    changes: Schema.Array(Schema.Struct({
      op: Schema.Literals(["added", "removed", "changed"]),
      /** An RFC 6901 JSON pointer ("" for the root). */
      path: Schema.String,
      old: Schema.optionalKey(Schema.Unknown),
      new: Schema.optionalKey(Schema.Unknown)
    }))
  }),
  Schema.Struct({ kind: Schema.Literal("text"), added: Schema.Int, removed: Schema.Int, unified: Schema.String })
])
export type MonitorDiff = typeof MonitorDiff.Type

export class Snapshot extends Schema.Class<Snapshot>("wa/domain/Snapshot")({
  id: SnapshotId,
  monitor_id: MonitorId,
  run_id: TickRunId,
  n: Schema.Int,
  content_hash: Schema.String,
  extracted: Nullable(Schema.Unknown),
  text: Schema.String,
  pages: Schema.Array(PageResult),
  diff: Nullable(MonitorDiff),
  changed: Schema.Boolean,
  fetched_at: Schema.Date,
  created_at: Schema.Date
}) {}
