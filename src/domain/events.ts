/**
 * The event payloads of the service's event streams: one schema per event type for its `data`.
 *
 * A stream frame is `id: <n>`, `event: <type>`, `data: {type, data, created_at}` (src/http/sse.ts):
 * the envelope's `data` is the payload these schemas describe. Run streams (DoAnything,
 * DeepResearch, WebSearch) carry `run.*` events, a monitor's stream `monitor.*` and `alignment.*`
 * events; every stream also sends `stream.heartbeat` (no id, data `{}`) while it is idle.
 *
 * The emitters are typed by these maps (RunStore.appendEvent, MonitorStore.appendEvent, the agent's
 * `emit`): a payload that does not match its type's schema does not compile. The OpenAPI document
 * lists every schema under components.schemas (src/http/api/openapi-events.ts), and the test SSE
 * reader decodes every event it reads with them (test/support/sse.ts).
 *
 * Conventions: stored events name a run's status as Convention A does (`done`). Under `/api/v1`
 * (Convention B) `run.status_changed` and `run.completed` say `succeeded` instead, with
 * terminal_reason `done` (`runEventSchemasIn("B")`).
 *
 * No event carries a secret's value: tool parameters and results, agent messages and failures are
 * redacted before they are emitted (src/agent/tools.ts); a monitor's notify secret never leaves it.
 */
import { Schema } from "effect"
import { CanonicalSchedule } from "./schedule-spec.ts"
import { AlignmentMessageKind, MonitorDiff, MonitorStatus, NotifyChannelKind } from "./monitor.ts"
import { Phases } from "./research.ts"
import { type Convention, FlatRunStatuses, RunStatuses, TerminalReasons } from "./run-state.ts"
import { SkillKind } from "./skill.ts"

const described = <S extends Schema.Top>(schema: S, description: string) => schema.annotate({ description }) as S

const Int = Schema.Int
const Str = Schema.String
const NullableStr = Schema.NullOr(Schema.String)
/** A decimal amount of US dollars as the wire shows money: a string, exact to the micro-dollar. */
const Usd = Schema.String.annotate({ description: "US dollars, a decimal string exact to the micro-dollar" })
const Json = Schema.Unknown
const Timestamp = Schema.String.annotate({ format: "date-time" })

// ---------------------------------------------------------------------------------------------
// Runs (DoAnything, DeepResearch, WebSearch)
// ---------------------------------------------------------------------------------------------

/** The fields a status change may carry besides the change itself (TransitionOptions.data). */
export const StatusChangeExtra = {
  /** take-control: what released or paused the run (`control_page`, `api`, ...). */
  trigger: Schema.optionalKey(Str),
  /** cancel: the reason the caller gave. */
  reason: Schema.optionalKey(NullableStr)
}
export type StatusChangeExtra = Schema.Struct.Type<typeof StatusChangeExtra>

const statusChanged = <S extends Schema.Top>(status: S, convention: Convention) =>
  Schema.Struct({
    run_id: Str,
    from: Schema.NullOr(status),
    status,
    ...StatusChangeExtra,
    // Convention B adds terminal_reason `done` where it shows `succeeded`.
    ...(convention === "B" ? { terminal_reason: Schema.optionalKey(Schema.Literal("done")) } : {})
  })

const completed = <S extends Schema.Top>(status: S) =>
  Schema.Struct({
    run_id: Str,
    status,
    terminal_reason: Schema.NullOr(Schema.Literals(TerminalReasons)),
    output: Json,
    error: Schema.NullOr(Schema.Struct({ code: Str, detail: NullableStr }))
  })

const RunStatusA = Schema.Literals(RunStatuses)
const RunStatusB = Schema.Literals(FlatRunStatuses)

/** `run.action.*`: a tool's call (its parameters and result redacted, results cut at 500 characters). */
const ActionStarted = Schema.Struct({ action: Str, params: Json })
const ActionCompleted = Schema.Struct({ action: Str, result: Json })
const ActionFailed = Schema.Struct({ action: Str, params: Schema.optionalKey(Json), code: Str, error: Str })

const CachedStepSummary = Schema.Struct({
  tool: Str,
  target: Schema.NullOr(Schema.Struct({ role: Str, name: Str, css: NullableStr }))
})

const InputRequestRef = { input_request_id: Str, request_id: Str }

const ResearchProgress = Schema.Union([
  Schema.Struct({ phase: Schema.Literal("gather"), section_id: Str, sources_found: Int, sources_target: Int }),
  Schema.Struct({ phase: Schema.Literal("crosscheck"), section_id: Str, claims: Int }),
  Schema.Struct({ phase: Schema.Literal("synthesize"), section_id: Str })
])

const runSchemasIn = <S extends Schema.Top>(status: S, convention: Convention) => ({
  "run.status_changed": described(statusChanged(status, convention), "The run's status changed (`from` null: the run was created)."),
  "run.completed": described(completed(status), "The run ended (its last event): status, terminal_reason, output and error as GET shows them."),
  "run.input_request": described(
    Schema.Struct({ ...InputRequestRef, prompt: Str, schema: Json }),
    "The run asks for input (status awaiting_input); answer with intervene. DeepResearch's outline gate: schema {kind: outline_approval, outline}."
  ),
  "run.input_request_resolved": described(Schema.Struct(InputRequestRef), "The input request was answered."),
  "run.input_request_withdrawn": described(
    Schema.Struct({ ...InputRequestRef, reason: Schema.Literal("take_control") }),
    "The input request was withdrawn: a person took control instead of answering."
  ),
  "run.resumed": described(
    Schema.Struct({ run_id: Str, from_step: Int, phase: Schema.optionalKey(Schema.NullOr(Schema.Literals(Phases))), url: Schema.optionalKey(NullableStr) }),
    "The run goes on from its checkpoint after a restart or a take-over by another runner."
  ),
  "run.phase_changed": described(Schema.Struct({ run_id: Str, phase: Schema.Literals(Phases) }), "DeepResearch: the run entered a phase."),
  "run.research.progress": described(ResearchProgress, "DeepResearch: a section was gathered, cross-checked or written."),
  "run.search.progress": described(
    Schema.Struct({ engine: Str, query: Str, status: Schema.Literals(["started", "succeeded", "failed", "timed_out", "circuit_open"]), hits: Int }),
    "WebSearch: one engine's progress on one query."
  ),
  "run.cost_update": described(
    Schema.Struct({
      /** The step whose charges these are (a DoAnything or DeepResearch step). */
      step: Schema.optionalKey(Int),
      /** The run's last charge (its browser time up to its end). */
      final: Schema.optionalKey(Schema.Boolean),
      increment_usd: Usd,
      llm_cost_usd: Usd,
      browser_cost_usd: Schema.optionalKey(Usd),
      proxy_cost_usd: Schema.optionalKey(Usd),
      service_cost_usd: Schema.optionalKey(Usd),
      total_cost_usd: Usd
    }),
    "Costs were charged: the increment, and the totals of the session (DoAnything) or of the run (DeepResearch, WebSearch)."
  ),
  "run.usage": described(Schema.Struct({ step: Int, input_tokens: Int, output_tokens: Int }), "The tokens a step's model call used."),
  "run.message": described(
    Schema.Struct({ role: Schema.Literals(["agent", "user"]), content: Str }),
    "A message of the agent (redacted) or one the user sent to the run."
  ),
  "run.screenshot": described(Schema.Struct({ url: Str }), "A screenshot of the page; its signed URL is signed afresh each time the event is read."),
  "run.action.started": described(ActionStarted, "The agent called a tool (its parameters redacted)."),
  "run.action.completed": described(ActionCompleted, "The tool succeeded (its result redacted and cut at 500 characters)."),
  "run.action.failed": described(ActionFailed, "The tool failed; the failure goes back to the model."),
  "run.skill.called": described(
    Schema.Struct({ skill: Str, version: Int, kind: SkillKind, arguments: Schema.Record(Str, Json) }),
    "The agent called a skill."
  ),
  "run.skill.completed": described(Schema.Struct({ skill: Str, steps: Int }), "The skill's steps were replayed."),
  "run.skill.failed": described(Schema.Struct({ skill: Str, step: Int, reason: Str }), "A step of the skill could not be replayed."),
  "run.cache.hit": described(Schema.Struct({ script_id: Str, version: Int, steps: Int }), "A cached script of the task is replayed."),
  "run.cache.miss": described(Schema.Struct({ reason: Schema.Literal("no_script") }), "No cached script of the task: the model acts."),
  "run.cache.step_healed": described(
    Schema.Struct({ step: Int, by: Schema.Literals(["css_path", "model"]), reason: Str, old: CachedStepSummary, new: Schema.NullOr(CachedStepSummary) }),
    "A step of the cached script was found again (by its CSS path, or taken by the model)."
  ),
  "run.cache.saved": described(Schema.Struct({ script_id: Str, version: Int, steps: Int, healed_steps: Int }), "The run's actions were saved as a cached script."),
  "run.take_control_pending": described(
    Schema.Struct({ run_id: Str, standalone_control_url: Str, exp: Int, reason: NullableStr }),
    "A control URL was issued: a person may take control until `exp` (Unix seconds)."
  ),
  "run.take_control_expired": described(Schema.Struct({ run_id: Str, exp: Int }), "The control URL expired unused."),
  "run.user_paused": described(Schema.Struct({ run_id: Str, reason: NullableStr }), "A person took control: the run is paused."),
  "run.user_released": described(Schema.Struct({ run_id: Str, trigger: Str }), "The person released control: the run goes on."),
  "run.next_run_scheduled": described(
    Schema.Struct({ run_id: Str, proposed_at: Timestamp, next_run_at: Timestamp }),
    "Autonomous schedule: the agent proposed its next run; next_run_at is the time kept (within the schedule's bounds)."
  ),
  "run.file_downloaded": described(
    Schema.Struct({ workspace_id: Str, name: Str, size_bytes: Int, content_type: Str, url: Str }),
    "A download of the page was saved in the session's workspace."
  ),
  "run.file_download_failed": described(Schema.Struct({ workspace_id: Str, name: Str, url: Str, reason: Str }), "A download could not be saved."),
  "run.email_received": described(
    Schema.Struct({ session_id: Str, message_id: Str, from: Str, subject: Str, received_at: Timestamp }),
    "An email arrived at the session's inbox."
  )
})

/** Run events as stored and as Convention A (`/v1`) streams them. */
export const RunEventSchemas = runSchemasIn(RunStatusA, "A")
/** Run events as Convention B (`/api/v1`) streams them: `succeeded` (+ terminal_reason `done`) for `done`. */
export const FlatRunEventSchemas = runSchemasIn(RunStatusB, "B")

// ---------------------------------------------------------------------------------------------
// Monitors (Track) and their alignment
// ---------------------------------------------------------------------------------------------

const JsonObject = Schema.Record(Str, Json)

const Delivery = Schema.Struct({
  run_id: NullableStr,
  delivery_id: Str,
  attempts: Int,
  status_code: Schema.NullOr(Int),
  error: NullableStr,
  /** No attempt follows (delivered, or failed for good). */
  final: Schema.Boolean
})

/** Events of a monitor's stream (`.../track/monitors/{mid}/events`). */
export const MonitorEventSchemas = {
  "monitor.created": described(
    Schema.Struct({ monitor_id: Str, status: MonitorStatus, mode: Schema.Literals(["alignment", "direct"]) }),
    "The monitor was created (mode alignment: it asks questions first)."
  ),
  "monitor.status_changed": described(
    Schema.Struct({ from: MonitorStatus, to: MonitorStatus, reason: NullableStr }),
    "The monitor's status changed; the stream ends after the change to completed or canceled."
  ),
  "monitor.updated": described(Schema.Struct({ fields: Schema.Array(Str) }), "Settings of the monitor changed (refine, or the end of alignment)."),
  "monitor.tick.started": described(
    Schema.Struct({
      run_id: Str,
      n: Int,
      trigger: Schema.Literals(["schedule", "run_now"]),
      /** The schedule slot the tick is for (null for run_now). */
      slot_at: Schema.NullOr(Timestamp),
      /** The tick had started before (its runner went away) and starts again. */
      resumed: Schema.Boolean
    }),
    "A tick started (n: its number, kept when it starts again)."
  ),
  "monitor.tick.completed": described(
    Schema.Struct({ run_id: Str, n: Int, snapshot_id: Str, changed: Schema.Boolean, fired: Schema.Boolean, baseline: Schema.Boolean }),
    "A tick ran: its snapshot, whether it changed and whether the trigger fired (baseline: the first snapshot)."
  ),
  "monitor.tick.failed": described(
    Schema.Struct({ run_id: Str, n: Schema.NullOr(Int), error: Schema.Struct({ code: Str, detail: Str }), consecutive_failures: Int }),
    "A tick failed."
  ),
  "monitor.tick.skipped": described(Schema.Struct({ run_id: Str, reason: Str }), "A tick was not run."),
  "monitor.change_detected": described(
    Schema.Struct({ run_id: Str, n: Schema.NullOr(Int), diff: Schema.NullOr(MonitorDiff) }),
    "The tick's snapshot differs from the previous one."
  ),
  "monitor.notification.queued": described(
    Schema.Struct({ run_id: Str, delivery_id: NullableStr, channel: NotifyChannelKind }),
    "The trigger fired: a notification was queued on the monitor's channel (delivery_id null for console_inbox and schedule, which have no delivery)."
  ),
  "monitor.delivery.succeeded": described(Delivery, "The notification was delivered."),
  "monitor.delivery.failed": described(Delivery, "An attempt at delivering the notification failed (final: no retry follows)."),
  "alignment.input_request": described(
    Schema.Struct({ request_id: Str, question: Str, monitor_id: Str }),
    "Alignment: the supervisor asks a question; answer with intervene (request_id)."
  ),
  "alignment.message": described(
    Schema.Struct({ role: Schema.Literal("user"), kind: AlignmentMessageKind, content: Str }),
    "Alignment: the user sent a message."
  ),
  "alignment.answered": described(
    Schema.Struct({ request_id: Str, kind: Schema.Literals(["answer", "skip"]), response: Str }),
    "Alignment: the question was answered (or skipped)."
  ),
  "alignment.abandoned": described(Schema.Struct({ request_id: Str }), "Alignment: the user abandoned it; the monitor is canceled."),
  "alignment.completed": described(
    Schema.Struct({
      schedule: CanonicalSchedule,
      target_urls: Schema.NullOr(Schema.Array(Str)),
      extraction_schema: Schema.NullOr(JsonObject),
      trigger_dsl: Schema.NullOr(JsonObject),
      stop_condition_dsl: Schema.NullOr(JsonObject)
    }),
    "Alignment ended: the monitor is configured and active."
  )
}

// ---------------------------------------------------------------------------------------------
// The maps and their types
// ---------------------------------------------------------------------------------------------

/** Every event type a stream can carry, stored (not the heartbeat), with its payload schema. */
export const EventSchemas = { ...RunEventSchemas, ...MonitorEventSchemas }

export type RunEventType = keyof typeof RunEventSchemas
export type MonitorEventType = keyof typeof MonitorEventSchemas
export type EventType = keyof typeof EventSchemas
export const RunEventTypes = Object.keys(RunEventSchemas) as ReadonlyArray<RunEventType>
export const MonitorEventTypes = Object.keys(MonitorEventSchemas) as ReadonlyArray<MonitorEventType>
export const EventTypes = Object.keys(EventSchemas) as ReadonlyArray<EventType>

/** The payload of an event of type T, as its emitter writes it. */
export type EventData<T extends EventType> = (typeof EventSchemas)[T]["Type"]

/** One event of a batch (RunStore.appendEvents, completeStep; MonitorStore.update): type and payload agree. */
export type NewEvent<T extends EventType = EventType> = { [K in T]: { readonly type: K; readonly data: EventData<K> } }[T]
export type NewRunEvent = NewEvent<RunEventType>
export type NewMonitorEvent = NewEvent<MonitorEventType>

/** The frame an idle stream sends (no id; not stored). */
export const HEARTBEAT_EVENT = "stream.heartbeat"
export const HeartbeatData = described(Schema.Struct({}), "Sent by an idle stream; carries nothing.")

/** The run event schemas as a route of `convention` streams them. */
export const runEventSchemasIn = (convention: Convention) => convention === "A" ? RunEventSchemas : FlatRunEventSchemas

/** The payload schema of `type` on a stream of `convention`, or undefined for a type no stream carries. */
export const eventDataSchema = (type: string, convention: Convention): Schema.Top | undefined => {
  if (type === HEARTBEAT_EVENT) return HeartbeatData
  const runs: Record<string, Schema.Top> = runEventSchemasIn(convention)
  const monitors: Record<string, Schema.Top> = MonitorEventSchemas
  return Object.hasOwn(runs, type) ? runs[type] : Object.hasOwn(monitors, type) ? monitors[type] : undefined
}

/** Which event types each product's stream carries. */
export const StreamEventTypes = {
  do_anything: [
    "run.status_changed", "run.completed", "run.input_request", "run.input_request_resolved", "run.input_request_withdrawn",
    "run.resumed", "run.cost_update", "run.usage", "run.message", "run.screenshot",
    "run.action.started", "run.action.completed", "run.action.failed",
    "run.skill.called", "run.skill.completed", "run.skill.failed",
    "run.cache.hit", "run.cache.miss", "run.cache.step_healed", "run.cache.saved",
    "run.take_control_pending", "run.take_control_expired", "run.user_paused", "run.user_released",
    "run.next_run_scheduled", "run.file_downloaded", "run.file_download_failed", "run.email_received"
  ],
  deep_research: [
    "run.status_changed", "run.completed", "run.input_request", "run.input_request_resolved",
    "run.resumed", "run.phase_changed", "run.research.progress", "run.cost_update"
  ],
  web_search: ["run.status_changed", "run.completed", "run.resumed", "run.search.progress", "run.cost_update"],
  track: MonitorEventTypes
} satisfies Record<string, ReadonlyArray<EventType>>
export type StreamKind = keyof typeof StreamEventTypes
