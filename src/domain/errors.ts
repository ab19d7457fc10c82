/**
 * Errors of the domain, raised by the store and the product services. They say what went wrong
 * in the domain's terms, and each declares, once, on its own class, how it reads on the wire (see
 * OnTheWire): its HTTP status, its `code`, and how its `detail` and `extra` read. The HTTP layer's
 * one mapper (src/http/domain-errors.ts) turns any of them into the `{code, detail, extra}`
 * envelope of the contract by reading that declaration; adding an error does not touch it.
 */
import { Schema } from "effect"
import type { envelopeByStatus, FieldError } from "./api-errors.ts"
import { ProfileId, ScheduleId, WorkspaceId } from "./id-schemas.ts"
import { usdFromMicros } from "./money.ts"
import { RunKind, RunStatus, SessionId } from "./run.ts"
import { MAX_SKILLS } from "./skill.ts"

/** The HTTP statuses a domain error may declare: those of the contract's envelope classes (api-errors.ts) but 500. */
export type WireStatus = Exclude<keyof typeof envelopeByStatus, 500>

/**
 * Names a run status in the convention of the route that answers (statusIn of run-state.ts):
 * `succeeded` for `done` under /api/v1. An error that shows a run status in its detail or extra
 * shows it through this.
 */
export type ShowStatus = (status: string) => string

/** The envelope's `detail` and `extra` (a 422's `extra` carries `errors[]`, see fieldErrors). */
export interface WireBody {
  readonly detail: string
  readonly extra: Record<string, unknown>
}

/**
 * What every domain error declares on its class: `httpStatus` (a literal: the HTTP layer derives
 * the envelope class from it, in types and at run time), the wire `code`, and `wire`, its
 * `detail` and `extra`.
 */
export interface OnTheWire {
  readonly _tag: string
  readonly httpStatus: WireStatus
  readonly code: string
  readonly wire: (show: ShowStatus) => WireBody
}

/** The body of a 422: `extra.errors[]` lists the refused fields. */
const fieldErrors = (detail: string, errors: ReadonlyArray<FieldError>, extra: Record<string, unknown> = {}): WireBody => ({
  detail,
  extra: { ...extra, errors }
})

const kindLabel = { do_anything: "run", deep_research: "research run", web_search: "web search run" } as const

/** Retry-After of too_many_concurrent_runs: a search run ends within seconds, a research run takes longer. */
const RUN_CAP_RETRY_SECONDS = 2

/** No run of that kind (in that session, when one is named) in the project. */
export class RunNotFound extends Schema.TaggedError<RunNotFound>()("RunNotFound", {
  runId: Schema.String,
  kind: Schema.optional(RunKind),
  sessionId: Schema.optional(Schema.String)
}) {
  get httpStatus() { return 404 as const }
  get code() { return "run_not_found" }
  wire(): WireBody {
    return {
      detail: this.sessionId === undefined
        ? `no ${kindLabel[this.kind ?? "do_anything"]} ${this.runId} in this project`
        : `no run ${this.runId} in session ${this.sessionId}`,
      extra: {}
    }
  }
}

export class SessionNotFound extends Schema.TaggedError<SessionNotFound>()("SessionNotFound", {
  sessionId: Schema.String
}) {
  get httpStatus() { return 404 as const }
  get code() { return "session_not_found" }
  wire(): WireBody {
    return { detail: `no session ${this.sessionId} in this project`, extra: {} }
  }
}

/** The session is closed: it takes no more runs. */
export class SessionClosed extends Schema.TaggedError<SessionClosed>()("SessionClosed", {
  sessionId: Schema.String
}) {
  get httpStatus() { return 409 as const }
  get code() { return "conflict" }
  wire(): WireBody {
    return { detail: "the session is closed; create a new session", extra: { session_id: this.sessionId } }
  }
}

/** The key (or, with scope `project`, its project) already holds as many open sessions as it may. */
export class SessionCapReached extends Schema.TaggedError<SessionCapReached>()("SessionCapReached", {
  open: Schema.Int,
  limit: Schema.Int,
  scope: Schema.optional(Schema.Literals(["key", "project"]))
}) {
  get httpStatus() { return 429 as const }
  get code() { return "too_many_concurrent_sessions" }
  wire(): WireBody {
    return {
      detail: this.scope === "project"
        ? `this project already holds ${this.open} open sessions across its keys (its plan's limit ${this.limit}); close one or wait for one to end`
        : `this key already holds ${this.open} open sessions (limit ${this.limit}); close one or wait for one to end`,
      extra: { limit: this.limit, active: this.open, scope: this.scope ?? "key", retry_after_seconds: 5 }
    }
  }
}

/** The project has as many API keys (or monitors not ended) as its plan allows. */
export class PlanLimitReached extends Schema.TaggedError<PlanLimitReached>()("PlanLimitReached", {
  resource: Schema.Literals(["api_keys", "monitors"]),
  count: Schema.Int,
  limit: Schema.Int
}) {
  // A plan limit is no rate: waiting does not lift it (delete one, or move to a bigger plan).
  get httpStatus() { return 403 as const }
  get code() { return "plan_limit_reached" }
  wire(): WireBody {
    return {
      detail: `this project already has ${this.count} ${this.resource === "api_keys" ? "API keys" : "monitors that have not ended"} (its plan's limit ${this.limit}); ` +
        (this.resource === "api_keys" ? "revoke one" : "cancel or delete one") + " or move the project to a bigger plan",
      extra: { resource: this.resource, limit: this.limit, count: this.count }
    }
  }
}

/** The project already has as many runs under way (standalone runs not ended) as it may. */
export class RunCapReached extends Schema.TaggedError<RunCapReached>()("RunCapReached", {
  active: Schema.Int,
  limit: Schema.Int,
  /** Whose cap: the project's (WA_MAX_CONCURRENT_RUNS) or the calling key's (WA_MAX_CONCURRENT_RUNS_PER_KEY). */
  scope: Schema.optional(Schema.Literals(["key", "project"]))
}) {
  get httpStatus() { return 429 as const }
  get code() { return "too_many_concurrent_runs" }
  wire(): WireBody {
    return {
      detail: this.scope === "key"
        ? `this API key already has ${this.active} runs under way (its limit ${this.limit}); retry when one has ended`
        : `this project already has ${this.active} runs under way (limit ${this.limit}); retry when one has ended`,
      // Runs of a search end within seconds; the envelope middleware turns these into Retry-After and RateLimit.
      extra: { limit: this.limit, active: this.active, scope: this.scope ?? "project", retry_after_seconds: RUN_CAP_RETRY_SECONDS }
    }
  }
}

/** A session runs one run at a time: its latest run has not ended. */
export class PreviousRunActive extends Schema.TaggedError<PreviousRunActive>()("PreviousRunActive", {
  runId: Schema.String,
  status: RunStatus
}) {
  get httpStatus() { return 409 as const }
  get code() { return "conflict" }
  wire(show: ShowStatus): WireBody {
    return { detail: "the previous run of this session is not terminal yet", extra: { run_id: this.runId, status: show(this.status) } }
  }
}

/** The run's state machine (src/domain/run-state.ts) does not allow this change. */
export class InvalidTransition extends Schema.TaggedError<InvalidTransition>()("InvalidTransition", {
  runId: Schema.String,
  from: RunStatus,
  to: RunStatus
}) {
  get httpStatus() { return 409 as const }
  get code() { return "conflict" }
  wire(show: ShowStatus): WireBody {
    return {
      detail: this.to === "canceled"
        ? `the run is ${show(this.from)}; only a non-terminal run can be canceled`
        : `the run is ${show(this.from)}; it cannot become ${show(this.to)}`,
      extra: { status: show(this.from) }
    }
  }
}

/** The operation needs a run that has not ended (a message, a cancel). */
export class RunEnded extends Schema.TaggedError<RunEnded>()("RunEnded", {
  runId: Schema.String,
  status: RunStatus,
  operation: Schema.Literals(["message", "cancel"])
}) {
  get httpStatus() { return 409 as const }
  get code() { return "conflict" }
  wire(show: ShowStatus): WireBody {
    return {
      detail: this.operation === "message"
        ? `the run is ${show(this.status)}; messages go to a follow-up run`
        : `the run is ${show(this.status)}; only a non-terminal run can be canceled`,
      extra: { status: show(this.status) }
    }
  }
}

/** Feedback is for runs that ended. */
export class RunNotEnded extends Schema.TaggedError<RunNotEnded>()("RunNotEnded", {
  runId: Schema.String,
  status: RunStatus
}) {
  get httpStatus() { return 409 as const }
  get code() { return "conflict" }
  wire(show: ShowStatus): WireBody {
    return { detail: `the run is ${show(this.status)}; feedback is for finished runs`, extra: { status: show(this.status) } }
  }
}

/** Only a run that ran out of steps can be continued. */
export class RunNotExpired extends Schema.TaggedError<RunNotExpired>()("RunNotExpired", {
  runId: Schema.String
}) {
  get httpStatus() { return 409 as const }
  get code() { return "conflict" }
  wire(): WireBody {
    return { detail: "only a run that ran out of steps (expired) can be continued; add a follow-up run instead", extra: {} }
  }
}

export class RunNotAwaitingInput extends Schema.TaggedError<RunNotAwaitingInput>()("RunNotAwaitingInput", {
  runId: Schema.String,
  status: RunStatus
}) {
  get httpStatus() { return 409 as const }
  get code() { return "conflict" }
  wire(show: ShowStatus): WireBody {
    return { detail: `the run is ${show(this.status)}; it is not awaiting input`, extra: { status: show(this.status) } }
  }
}

/** No input request of that id is pending on the run. `field` is the name the caller used for the id. */
export class InputRequestNotFound extends Schema.TaggedError<InputRequestNotFound>()("InputRequestNotFound", {
  inputRequestId: Schema.String,
  field: Schema.Literals(["input_request_id", "request_id"])
}) {
  get httpStatus() { return 409 as const }
  get code() { return "conflict" }
  wire(): WireBody {
    return this.field === "request_id"
      ? { detail: `no pending input request ${this.inputRequestId} on this run`, extra: { request_id: this.inputRequestId } }
      : { detail: `no input request ${this.inputRequestId} on this run`, extra: { input_request_id: this.inputRequestId } }
  }
}

export class InputRequestAnswered extends Schema.TaggedError<InputRequestAnswered>()("InputRequestAnswered", {
  inputRequestId: Schema.String
}) {
  get httpStatus() { return 409 as const }
  get code() { return "conflict" }
  wire(): WireBody {
    return { detail: "the input request was already answered", extra: { input_request_id: this.inputRequestId } }
  }
}

/** Names the request used that are not among the allowed ones (actions, engines, models, outline sections). */
export class UnknownNames extends Schema.TaggedError<UnknownNames>()("UnknownNames", {
  field: Schema.String,
  what: Schema.String,
  unknown: Schema.Array(Schema.String),
  allowed: Schema.Array(Schema.String)
}) {
  get httpStatus() { return 422 as const }
  /** Unknown skills have their own code (and `extra.names`); other names are a plain validation_error. */
  get code() { return this.field === "skills" ? "unknown_skills" : "validation_error" }
  wire(): WireBody {
    return this.field === "skills"
      ? fieldErrors(
        `no skill named ${this.unknown.join(", ")} in this project (see /v1/projects/{pid}/skills)`,
        this.unknown.map((name) => ({ loc: ["body", "skills"], msg: `no skill named ${name} in this project`, type: "value_error" })),
        { names: this.unknown }
      )
      : fieldErrors(
        `unknown ${this.what}(s): ${this.unknown.join(", ")}; valid: ${this.allowed.join(", ")}`,
        this.unknown.map((name) => ({ loc: ["body", this.field], msg: `unknown ${this.what} ${name}; valid ${this.what}s: ${this.allowed.join(", ")}`, type: "enum" }))
      )
  }
}

/** A field the request needs (given the other fields) is missing. */
export class MissingFields extends Schema.TaggedError<MissingFields>()("MissingFields", {
  fields: Schema.Array(Schema.String)
}) {
  get httpStatus() { return 422 as const }
  get code() { return "validation_error" }
  wire(): WireBody {
    return fieldErrors(
      this.fields.length === 1 && this.fields[0] === "instructions" ? "instructions are required" : `${this.fields.join(" and ")} required`,
      this.fields.map((field) => ({ loc: ["body", field], msg: field === "instructions" ? "instructions are required" : "required", type: "missing" }))
    )
  }
}

/** A field's value is not one this operation accepts. */
export class InvalidField extends Schema.TaggedError<InvalidField>()("InvalidField", {
  field: Schema.Array(Schema.String),
  detail: Schema.String,
  msg: Schema.String,
  type: Schema.String
}) {
  get httpStatus() { return 422 as const }
  get code() { return "validation_error" }
  wire(): WireBody {
    return fieldErrors(this.detail, [{ loc: ["body", ...this.field], msg: this.msg, type: this.type }])
  }
}

/** No monitor with that id in the project. */
export class MonitorNotFound extends Schema.TaggedError<MonitorNotFound>()("MonitorNotFound", {
  monitorId: Schema.String
}) {
  get httpStatus() { return 404 as const }
  get code() { return "monitor_not_found" }
  wire(): WireBody {
    return { detail: `no monitor ${this.monitorId} in this project`, extra: {} }
  }
}

/** A run, snapshot or delivery of a monitor that the monitor does not have. */
export class MonitorPartNotFound extends Schema.TaggedError<MonitorPartNotFound>()("MonitorPartNotFound", {
  what: Schema.Literals(["run", "snapshot", "delivery"]),
  id: Schema.String,
  monitorId: Schema.String
}) {
  get httpStatus() { return 404 as const }
  get code() { return `${this.what}_not_found` }
  wire(): WireBody {
    return { detail: `no ${this.what === "run" ? "tick run" : this.what} ${this.id} of monitor ${this.monitorId}`, extra: {} }
  }
}

/** A message or intervention for a monitor that is not aligning (or a question already answered). */
export class MonitorNotInAlignment extends Schema.TaggedError<MonitorNotInAlignment>()("MonitorNotInAlignment", {
  monitorId: Schema.String,
  status: Schema.String,
  requestId: Schema.optional(Schema.String)
}) {
  get httpStatus() { return 409 as const }
  get code() { return "monitor_not_in_alignment" }
  wire(): WireBody {
    return {
      detail: this.requestId === undefined
        ? `the monitor is ${this.status}; messages and interventions are for a monitor in alignment (pending_clarification)`
        : `no open alignment question ${this.requestId} on this monitor`,
      extra: { status: this.status, ...(this.requestId === undefined ? {} : { request_id: this.requestId }) }
    }
  }
}

/** An action the monitor's status does not allow (resume an active monitor, anything on a canceled one). */
export class MonitorActionRefused extends Schema.TaggedError<MonitorActionRefused>()("MonitorActionRefused", {
  action: Schema.String,
  status: Schema.String
}) {
  get httpStatus() { return 409 as const }
  get code() { return "conflict" }
  wire(): WireBody {
    return { detail: `the monitor is ${this.status}; it cannot ${this.action}`, extra: { status: this.status, action: this.action } }
  }
}

/** Alignment mode needs a model (the supervisor); none is configured. */
export class AlignmentNeedsModel extends Schema.TaggedError<AlignmentNeedsModel>()("AlignmentNeedsModel", {}) {
  get httpStatus() { return 422 as const }
  get code() { return "alignment_requires_model" }
  wire(): WireBody {
    return fieldErrors(
      "alignment mode (no schedule) needs a model to ask the clarifying questions, and none is configured; give a schedule (direct mode) or configure WA_MODEL_BASE_URL",
      [{ loc: ["body", "schedule"], msg: "required when no model is configured", type: "missing" }]
    )
  }
}

/** Take control (intervene take_control / release_control / refresh_control_url) does not fit the run's state. */
export class ControlNotAvailable extends Schema.TaggedError<ControlNotAvailable>()("ControlNotAvailable", {
  runId: Schema.String,
  status: RunStatus,
  detail: Schema.String
}) {
  get httpStatus() { return 409 as const }
  get code() { return "conflict" }
  wire(show: ShowStatus): WireBody {
    return { detail: this.detail, extra: { status: show(this.status) } }
  }
}

/** Billing is on and the project's credit balance is below the minimum a run needs. */
export class InsufficientCredits extends Schema.TaggedError<InsufficientCredits>()("InsufficientCredits", {
  balanceMicros: Schema.Number,
  requiredMicros: Schema.Number
}) {
  get httpStatus() { return 402 as const }
  get code() { return "insufficient_credits" }
  wire(): WireBody {
    const balance = usdFromMicros(this.balanceMicros)
    const required = usdFromMicros(this.requiredMicros)
    return {
      detail: `the project's credit balance (${balance} USD) is below the ${required} USD a run needs; add credits (wa credits grant)`,
      extra: { balance_usd: balance, required_usd: required }
    }
  }
}

/** The project's monthly budget cap is reached: no new run until the next period or a higher cap. */
export class BudgetExceeded extends Schema.TaggedError<BudgetExceeded>()("BudgetExceeded", {
  capMicros: Schema.Number,
  spentMicros: Schema.Number
}) {
  get httpStatus() { return 402 as const }
  get code() { return "budget_exceeded" }
  wire(): WireBody {
    const cap = usdFromMicros(this.capMicros)
    const spent = usdFromMicros(this.spentMicros)
    return {
      detail: `the project spent ${spent} USD of its ${cap} USD monthly budget; raise the cap (PUT /billing/budget) or wait for the next period`,
      extra: { monthly_cap_usd: cap, spent_usd: spent }
    }
  }
}

/** Every domain error of this module (each is OnTheWire). */
export type DomainError =
  | PlanLimitReached
  | InsufficientCredits
  | BudgetExceeded
  | ControlNotAvailable
  | RunNotFound
  | SessionNotFound
  | SessionClosed
  | SessionCapReached
  | RunCapReached
  | PreviousRunActive
  | InvalidTransition
  | RunEnded
  | RunNotEnded
  | RunNotExpired
  | RunNotAwaitingInput
  | InputRequestNotFound
  | InputRequestAnswered
  | UnknownNames
  | MissingFields
  | InvalidField
  | UnknownSections
  | ArtifactNotFound
  | ParentRunNotReady
  | MonitorNotFound
  | MonitorPartNotFound
  | MonitorNotInAlignment
  | MonitorActionRefused
  | AlignmentNeedsModel
  | WorkspaceNotFound
  | WorkspaceFileNotFound
  | ProfileNotFound
  | ProfileInUse
  | LoginNotStarted
  | ScheduleNotFound
  | SchedulePaused
  | CacheScriptNotFound
  | SkillNotFound
  | SkillLimitReached
  | SkillNameTaken

/** Outline edits name sections the outline does not have. */
export class UnknownSections extends Schema.TaggedError<UnknownSections>()("UnknownSections", {
  unknown: Schema.Array(Schema.String),
  sections: Schema.Array(Schema.String)
}) {
  get httpStatus() { return 422 as const }
  get code() { return "validation_error" }
  wire(): WireBody {
    return fieldErrors(
      `unknown section id(s): ${[...new Set(this.unknown)].join(", ")}`,
      this.unknown.map((id) => ({ loc: ["body", "response", "edits"], msg: `no section ${id} in the outline; sections: ${this.sections.join(", ")}`, type: "value_error" }))
    )
  }
}

export class ArtifactNotFound extends Schema.TaggedError<ArtifactNotFound>()("ArtifactNotFound", {
  runId: Schema.String,
  artifactId: Schema.String
}) {
  get httpStatus() { return 404 as const }
  get code() { return "artifact_not_found" }
  wire(): WireBody {
    return { detail: `no artifact ${this.artifactId} on run ${this.runId}`, extra: {} }
  }
}

/**
 * A run derived from another (refine, follow-up) needs its parent to have ended, or, for a
 * follow-up on a report, to have finished successfully (`done`).
 */
export class ParentRunNotReady extends Schema.TaggedError<ParentRunNotReady>()("ParentRunNotReady", {
  runId: Schema.String,
  status: RunStatus,
  operation: Schema.Literals(["refine", "followup"]),
  needs: Schema.Literals(["ended", "done"])
}) {
  get httpStatus() { return 409 as const }
  get code() { return "conflict" }
  wire(show: ShowStatus): WireBody {
    return {
      detail: `the run is ${show(this.status)}; a ${this.operation === "refine" ? "refinement" : "follow-up"} needs a run that ${
        this.needs === "done" ? `finished successfully (${show("done")})` : "has ended"
      }`,
      extra: { run_id: this.runId, status: show(this.status) }
    }
  }
}

/** No workspace with that id in the project (or it was deleted). */
export class WorkspaceNotFound extends Schema.TaggedError<WorkspaceNotFound>()("WorkspaceNotFound", {
  workspaceId: WorkspaceId
}) {
  get httpStatus() { return 404 as const }
  get code() { return "workspace_not_found" }
  wire(): WireBody {
    return { detail: `no workspace ${this.workspaceId} in this project`, extra: { workspace_id: this.workspaceId } }
  }
}

/** No file of that name in the workspace. */
export class WorkspaceFileNotFound extends Schema.TaggedError<WorkspaceFileNotFound>()("WorkspaceFileNotFound", {
  workspaceId: WorkspaceId,
  name: Schema.String
}) {
  get httpStatus() { return 404 as const }
  get code() { return "file_not_found" }
  wire(): WireBody {
    return { detail: `no file ${JSON.stringify(this.name)} in workspace ${this.workspaceId}`, extra: { workspace_id: this.workspaceId, name: this.name } }
  }
}

/** No profile with that id in the project. */
export class ProfileNotFound extends Schema.TaggedError<ProfileNotFound>()("ProfileNotFound", {
  profileId: ProfileId
}) {
  get httpStatus() { return 404 as const }
  get code() { return "profile_not_found" }
  wire(): WireBody {
    return { detail: `no profile ${this.profileId} in this project`, extra: { profile_id: this.profileId } }
  }
}

/** The profile is leased to an open session (one session at a time per browser identity). */
export class ProfileInUse extends Schema.TaggedError<ProfileInUse>()("ProfileInUse", {
  profileId: ProfileId,
  sessionId: SessionId
}) {
  get httpStatus() { return 409 as const }
  get code() { return "profile_in_use" }
  wire(): WireBody {
    return {
      detail: `profile ${this.profileId} is in use by open session ${this.sessionId}; a profile serves one session at a time (close that session first)`,
      extra: { profile_id: this.profileId, session_id: this.sessionId }
    }
  }
}

/** A confirm names a site no interactive login was started for on this profile. */
export class LoginNotStarted extends Schema.TaggedError<LoginNotStarted>()("LoginNotStarted", {
  profileId: ProfileId,
  siteId: Schema.String
}) {
  get httpStatus() { return 409 as const }
  get code() { return "interactive_login_not_started" }
  wire(): WireBody {
    return {
      detail: `no interactive login for site ${this.siteId} on profile ${this.profileId}; start one with POST /profiles/login`,
      extra: { profile_id: this.profileId, site_id: this.siteId }
    }
  }
}

/** No DoAnything schedule with that id in the project (or it was deleted). */
export class ScheduleNotFound extends Schema.TaggedError<ScheduleNotFound>()("ScheduleNotFound", {
  scheduleId: ScheduleId
}) {
  get httpStatus() { return 404 as const }
  get code() { return "schedule_not_found" }
  wire(): WireBody {
    return { detail: `no schedule ${this.scheduleId} in this project`, extra: { schedule_id: this.scheduleId } }
  }
}

/** A paused schedule is not triggered (resume it first). */
export class SchedulePaused extends Schema.TaggedError<SchedulePaused>()("SchedulePaused", {
  scheduleId: ScheduleId
}) {
  get httpStatus() { return 409 as const }
  get code() { return "schedule_paused" }
  wire(): WireBody {
    return { detail: `schedule ${this.scheduleId} is paused; resume it before triggering it`, extra: { schedule_id: this.scheduleId } }
  }
}

export class CacheScriptNotFound extends Schema.TaggedError<CacheScriptNotFound>()("CacheScriptNotFound", {
  scriptId: Schema.String
}) {
  get httpStatus() { return 404 as const }
  get code() { return "cache_script_not_found" }
  wire(): WireBody {
    return { detail: `no cached script ${this.scriptId} in this project`, extra: { script_id: this.scriptId } }
  }
}

export class SkillNotFound extends Schema.TaggedError<SkillNotFound>()("SkillNotFound", {
  skill: Schema.String
}) {
  get httpStatus() { return 404 as const }
  get code() { return "skill_not_found" }
  wire(): WireBody {
    return { detail: `no skill ${this.skill} in this project`, extra: { skill: this.skill } }
  }
}

/** The project has its most skills (counted under a per-project lock, so concurrent creates respect it). */
export class SkillLimitReached extends Schema.TaggedError<SkillLimitReached>()("SkillLimitReached", {
  count: Schema.Number
}) {
  get httpStatus() { return 409 as const }
  get code() { return "skill_limit_reached" }
  wire(): WireBody {
    return { detail: `this project has ${this.count} skills, the most it may have (${MAX_SKILLS}); delete one first`, extra: { limit: MAX_SKILLS } }
  }
}

export class SkillNameTaken extends Schema.TaggedError<SkillNameTaken>()("SkillNameTaken", {
  name: Schema.String
}) {
  get httpStatus() { return 409 as const }
  get code() { return "skill_name_taken" }
  wire(): WireBody {
    return { detail: `this project already has a skill named ${this.name}`, extra: { name: this.name } }
  }
}

/** A signed URL (a workspace file's download, a recording's replay, a screenshot) whose signature does not match it: tampered, or another service's. */
export class InvalidSignature extends Schema.TaggedError<InvalidSignature>()("InvalidSignature", {}) {
  get httpStatus() { return 403 as const }
  get code() { return "invalid_signature" }
  wire(): WireBody {
    return { detail: "the signature does not match this URL", extra: {} }
  }
}

/** A signed URL past its expiry; `refresh` tells where a fresh one comes from. */
export class SignedUrlExpired extends Schema.TaggedError<SignedUrlExpired>()("SignedUrlExpired", {
  refresh: Schema.String
}) {
  get httpStatus() { return 403 as const }
  get code() { return "url_expired" }
  wire(): WireBody {
    return { detail: `the URL has expired; ${this.refresh}`, extra: {} }
  }
}
