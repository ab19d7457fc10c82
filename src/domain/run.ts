/**
 * The typed model of sessions and runs: branded ids, the run request as a union by product, and
 * `Session` / `Run` as schema classes. Rows are decoded into these once, where the store reads
 * them (src/store/runs.ts); nothing above the store looks at raw JSON.
 */
import { Schema } from "effect"
import { Phases, RunStatuses, TerminalReasons } from "./run-state.ts"
import { DelegationGrantId, MonitorId, ProfileId, UserId, WorkspaceId } from "./id-schemas.ts"
import { CallbackUrl, MaxString, OptionalNullable, WithDefault } from "./schemas.ts"
import { jsonBytes } from "./json-strings.ts"

export const ProjectId = Schema.String.pipe(Schema.brand("ProjectId"))
export type ProjectId = typeof ProjectId.Type
export const ApiKeyId = Schema.String.pipe(Schema.brand("ApiKeyId"))
export type ApiKeyId = typeof ApiKeyId.Type

/**
 * Who acts for a project: an API key, a console user (by its role in the project's tenant), or a
 * delegation grant. It is what `runs.api_key_id` and `sessions.api_key_id` hold and what the
 * per-principal caps count.
 */
export const Principal = Schema.Union([ApiKeyId, UserId, DelegationGrantId])
export type Principal = typeof Principal.Type
export const SessionId = Schema.String.pipe(Schema.brand("SessionId"))
export type SessionId = typeof SessionId.Type
export const RunId = Schema.String.pipe(Schema.brand("RunId"))
export type RunId = typeof RunId.Type

export const RunStatus = Schema.Literals(RunStatuses)
/** The kinds of runs the run APIs serve (and name in their errors). */
export const RunKind = Schema.Literals(["do_anything", "deep_research", "web_search"])
export type RunKind = typeof RunKind.Type
/**
 * Every kind of run row: the run APIs' kinds and Track's ticks (`track_tick`, served as a
 * monitor's ticks by the monitor routes, never by the run routes). What the run kernel executes.
 */
export const StoredRunKind = Schema.Literals([...RunKind.literals, "track_tick"])
export type StoredRunKind = typeof StoredRunKind.Type

// --- DoAnything -----------------------------------------------------------------------------

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/** The largest `output_schema` accepted, as JSON text: it is sent to the model with every step. */
export const MAX_OUTPUT_SCHEMA_BYTES = 64 * 1024

const OutputSchema = JsonObject.check(Schema.makeFilter(
  (schema) => jsonBytes(schema) <= MAX_OUTPUT_SCHEMA_BYTES || `must be at most ${MAX_OUTPUT_SCHEMA_BYTES} bytes of JSON`,
  { description: `a JSON Schema of at most ${MAX_OUTPUT_SCHEMA_BYTES} bytes` }
))

/** A project secret's name (src/secrets/): what `{{secret:name}}` / `{{totp:name}}` placeholders and a run's `secrets` name. */
export const SecretName = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_-]{1,64}$/)).annotate({
  description: "1 to 64 letters, digits, _ or -"
})
/** Secrets one run may name. */
export const MAX_RUN_SECRETS = 20

/** The fields of a DoAnything run request (the wire bounds `instructions`; a continued run's may be longer). */
export const doAnythingFields = {
  instructions: OptionalNullable(Schema.String),
  session_id: OptionalNullable(SessionId.check(Schema.isMaxCodePoints(64))),
  workspace_id: OptionalNullable(WorkspaceId.check(Schema.isMaxCodePoints(64))),
  profile_id: OptionalNullable(ProfileId.check(Schema.isMaxCodePoints(64))),
  // Not narrowed to SkillName: runs stored before skills existed may list any text; a name that is
  // no skill of the project is refused at create (unknown_skills) all the same.
  skills: Schema.optional(Schema.Array(MaxString(200)).check(Schema.isMaxLength(50)).annotate({
    description: "names of project skills (/v1/projects/{pid}/skills) offered to the agent as tools skill_<name>; " +
      "a name the project has no skill for is 422 unknown_skills"
  })),
  allowed_actions: Schema.optional(Schema.Array(MaxString(64)).check(Schema.isMaxLength(50))),
  secrets: Schema.optional(Schema.Array(SecretName).check(Schema.isMaxLength(MAX_RUN_SECRETS)).annotate({
    description: "Names of project secrets (/v1/projects/{pid}/secrets) the run may type: the model sees only the placeholders " +
      "{{secret:name}} and {{totp:name}}, and the browser tools substitute the values on the secret's origins"
  })),
  max_duration_minutes: OptionalNullable(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10_080 }))).annotate({
    default: null,
    description: "minutes the run may take; omitted or null: no limit of its own"
  }),
  // Omitted: true (the run's request is stored with these filled in, src/do-anything/service.ts).
  keep_alive: Schema.optional(Schema.Boolean).annotate({ default: true, description: "keeps the session warm after the run for follow-ups" }),
  agentmail: Schema.optional(Schema.Boolean).annotate({ default: true }),
  cache_script: OptionalNullable(Schema.Boolean).annotate({
    default: null,
    description: "true: a run that ends done saves its browser actions as the task's script (GET /v1/projects/{pid}/cache_scripts), " +
      "and a later run of the same task (instructions, start origin, output_schema) replays it without the model, healing the steps " +
      "the page no longer allows (events run.cache.hit, run.cache.miss, run.cache.step_healed, run.cache.saved); omitted, null or false: neither"
  }),
  callback_url: OptionalNullable(CallbackUrl),
  output_schema: OptionalNullable(OutputSchema),
  recording: OptionalNullable(Schema.Struct({
    enabled: Schema.optional(Schema.Boolean),
    quality: Schema.optional(MaxString(32)),
    capture_during_take_control: Schema.optional(Schema.Boolean)
  })),
  // The wire checks it strictly (CreateRunRequest: src/domain/schedule-spec.ts SessionScheduleField); the
  // schedule itself lives in session_schedules (src/do-anything/schedules.ts), and runs are
  // stored without it, so rows written before it was checked still decode.
  schedule: OptionalNullable(JsonObject),
  model: OptionalNullable(MaxString(100))
}

/**
 * Stored with a run's request, not on the wire: the route convention that created the run
 * (src/domain/run-state.ts Convention). Its callback names statuses that way (`succeeded` +
 * terminal_reason `done` for "B"); absent (runs stored before it): "A".
 */
export const conventionField = {
  convention: Schema.optionalKey(Schema.Literals(["A", "B"]))
}

export const DoAnythingRequest = Schema.TaggedStruct("DoAnything", { ...doAnythingFields, ...conventionField })
export type DoAnythingRequest = typeof DoAnythingRequest.Type

// --- DeepResearch ---------------------------------------------------------------------------

export const Depth = Schema.Literals(["light", "standard", "deep"])
export type Depth = typeof Depth.Type

const DomainList = Schema.Array(MaxString(253).check(Schema.isMinCodePoints(1))).check(Schema.isMaxLength(200))

/** A non-negative USD amount as a number or a decimal string ("0.50"). */
export const UsdAmount = Schema.Union([
  Schema.Number.check(Schema.isGreaterThanOrEqualTo(0), Schema.isFinite()),
  Schema.String.check(Schema.isPattern(/^\d{1,9}(\.\d{1,6})?$/u))
]).annotate({ description: "USD: a number >= 0 or a decimal string such as \"2.50\"" })

export const deepResearchFields = {
  topic: Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(2000)),
  depth: WithDefault(Depth, "standard"),
  output_format: WithDefault(Schema.Literal("report"), "report"),
  target_audience: OptionalNullable(MaxString(500)),
  require_outline_approval: WithDefault(Schema.Boolean, true),
  max_duration_minutes: WithDefault(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10_000 })), 600),
  max_cost_usd: OptionalNullable(UsdAmount),
  domain_whitelist: OptionalNullable(DomainList),
  domain_blacklist: OptionalNullable(DomainList),
  callback_url: OptionalNullable(CallbackUrl)
}

export const DeepResearchRequest = Schema.TaggedStruct("DeepResearch", { ...deepResearchFields, ...conventionField })
export type DeepResearchRequest = typeof DeepResearchRequest.Type

// --- WebSearch ------------------------------------------------------------------------------

export const Freshness = Schema.Literals(["day", "week", "month", "year"])
export type Freshness = typeof Freshness.Type

export const MAX_QUERIES = 50
export const MAX_QUERY_LENGTH = 500
export const MAX_SITES = 200
export const DEFAULT_MAX_RESULTS_PER_QUERY = 10

const Query = Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(MAX_QUERY_LENGTH))
const Site = Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(253))
const SiteList = Schema.Array(Site).check(Schema.isMaxLength(MAX_SITES))

export const webSearchFields = {
  queries: Schema.Array(Query).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_QUERIES)),
  /** Engine names; omitted or null means the default engine set (every configured engine). */
  engines: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String.check(Schema.isMaxCodePoints(64))).check(Schema.isMaxLength(20)))),
  max_results_per_query: WithDefault(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 50 })), DEFAULT_MAX_RESULTS_PER_QUERY),
  rerank: WithDefault(Schema.Boolean, false),
  summarize: WithDefault(Schema.Boolean, false),
  freshness: Schema.optionalKey(Schema.NullOr(Freshness)),
  site_whitelist: Schema.optionalKey(Schema.NullOr(SiteList)),
  site_blacklist: Schema.optionalKey(Schema.NullOr(SiteList)),
  language: Schema.optionalKey(Schema.NullOr(Schema.String.check(Schema.isMinCodePoints(2), Schema.isMaxCodePoints(35)))),
  objective: Schema.optionalKey(Schema.NullOr(Schema.String.check(Schema.isMaxCodePoints(2000)))),
  /** Read by the HTTP layer (block up to 30 s); the engine layer ignores it. */
  wait: WithDefault(Schema.Boolean, true)
}

/**
 * Fields of a stored WebSearch run that are not on the wire: a follow-up run (send_followup) leaves
 * out the pages its parent (and the parent's own parents) already returned.
 */
export const webSearchDerivedFields = {
  exclude_canonical_urls: Schema.optionalKey(Schema.Array(Schema.String))
}

export const WebSearchRunRequest = Schema.TaggedStruct("WebSearch", { ...webSearchFields, ...webSearchDerivedFields })
export type WebSearchRunRequest = typeof WebSearchRunRequest.Type

// --- Track ---------------------------------------------------------------------------------

/**
 * A monitor's tick (src/track/tick.ts), stored as a run of kind `track_tick`: which monitor, why
 * it ticks (its schedule's slot, or run_now), and the slot's instant as the tick was made (the
 * text is the key of the slot's one tick, src/store/migrations/0033_track_on_runs.ts).
 */
export const TrackTickRequest = Schema.TaggedStruct("TrackTick", {
  monitor_id: MonitorId,
  trigger: Schema.Literals(["schedule", "run_now"]),
  slot_at: Schema.NullOr(Schema.String)
})
export type TrackTickRequest = typeof TrackTickRequest.Type

// --- Runs and sessions ----------------------------------------------------------------------

/** What a run was asked to do, by product. The `kind` column of a run row is its tag. */
export const RunRequest = Schema.Union([DoAnythingRequest, DeepResearchRequest, WebSearchRunRequest, TrackTickRequest])
export type RunRequest = typeof RunRequest.Type

export const tagOfKind = { do_anything: "DoAnything", deep_research: "DeepResearch", web_search: "WebSearch", track_tick: "TrackTick" } as const
export const kindOfTag = { DoAnything: "do_anything", DeepResearch: "deep_research", WebSearch: "web_search", TrackTick: "track_tick" } as const

/** The request as stored (the `kind` column says which product it is for). */
export const storedRequest = (request: RunRequest): Record<string, unknown> => {
  const { _tag, ...fields } = request
  return fields
}

export class Run extends Schema.Class<Run>("wa/domain/Run")({
  id: RunId,
  /** Null for runs that need no browser session (WebSearch, DeepResearch). */
  session_id: Schema.NullOr(SessionId),
  project_id: ProjectId,
  kind: StoredRunKind,
  status: RunStatus,
  terminal_reason: Schema.NullOr(Schema.Literals(TerminalReasons)),
  expired: Schema.Boolean,
  instructions: Schema.NullOr(Schema.String),
  request: RunRequest,
  output: Schema.Unknown,
  error_code: Schema.NullOr(Schema.String),
  error_detail: Schema.NullOr(Schema.String),
  step_count: Schema.Number,
  max_steps: Schema.Number,
  model: Schema.NullOr(Schema.String),
  parent_run_id: Schema.NullOr(RunId),
  llm_cost_usd: Schema.String,
  /** DoAnything: the browser time this run held the session's browser (src/config/prices.ts). */
  browser_cost_usd: Schema.String,
  proxy_cost_usd: Schema.String,
  /** The product fee: DeepResearch per run, WebSearch per query. */
  service_cost_usd: Schema.String,
  feedback: Schema.Unknown,
  created_at: Schema.Date,
  updated_at: Schema.Date,
  started_at: Schema.NullOr(Schema.Date),
  finished_at: Schema.NullOr(Schema.Date),
  deadline_at: Schema.NullOr(Schema.Date),
  /** DeepResearch: the phase the run is in (null for other kinds). */
  phase: Schema.NullOr(Schema.Literals(Phases))
}) {}

export class Session extends Schema.Class<Session>("wa/domain/Session")({
  id: SessionId,
  project_id: ProjectId,
  api_key_id: Principal,
  status: Schema.Literals(["running", "idle", "closed"]),
  profile_id: Schema.NullOr(ProfileId),
  workspace_id: Schema.NullOr(WorkspaceId),
  latest_run_id: Schema.NullOr(RunId),
  llm_cost_usd: Schema.String,
  browser_cost_usd: Schema.String,
  proxy_cost_usd: Schema.String,
  created_at: Schema.Date,
  updated_at: Schema.Date,
  closed_at: Schema.NullOr(Schema.Date)
}) {}

const decodeRun = Schema.decodeUnknownSync(Run)
const decodeSession = Schema.decodeUnknownSync(Session)
/** A row's columns, and what its request is tagged from: the `kind` column and the stored request (a JSON object without its tag). */
const decodeRunColumns = Schema.decodeUnknownSync(Schema.Record(Schema.String, Schema.Unknown))
const decodeStoredRequest = Schema.decodeUnknownSync(Schema.Struct({ kind: StoredRunKind, request: Schema.Record(Schema.String, Schema.Unknown) }))

/**
 * A run row as read from PostgreSQL, decoded. The stored request gets its tag from the `kind`
 * column. A row that does not decode is a defect (the store wrote it from a decoded request).
 */
export const runFromRow = (row: unknown): Run => {
  const columns = decodeRunColumns(row)
  const { kind, request } = decodeStoredRequest(columns)
  return decodeRun({ ...columns, request: { ...request, _tag: tagOfKind[kind] } })
}

export const sessionFromRow = (row: unknown): Session => decodeSession(row)
