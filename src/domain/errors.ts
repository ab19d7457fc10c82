/**
 * Errors of the domain, raised by the store and the product services. They say what went wrong
 * in the domain's terms; the HTTP layer (src/http/domain-errors.ts) turns each into the
 * `{code, detail, extra}` envelope of the contract.
 */
import { Schema } from "effect"
import { RunKind, RunStatus, SessionId } from "./run.ts"

/** No run of that kind (in that session, when one is named) in the project. */
export class RunNotFound extends Schema.TaggedError<RunNotFound>()("RunNotFound", {
  runId: Schema.String,
  kind: Schema.optional(RunKind),
  sessionId: Schema.optional(Schema.String)
}) {}

export class SessionNotFound extends Schema.TaggedError<SessionNotFound>()("SessionNotFound", {
  sessionId: Schema.String
}) {}

/** The session is closed: it takes no more runs. */
export class SessionClosed extends Schema.TaggedError<SessionClosed>()("SessionClosed", {
  sessionId: Schema.String
}) {}

/** The key (or, with scope `project`, its project) already holds as many open sessions as it may. */
export class SessionCapReached extends Schema.TaggedError<SessionCapReached>()("SessionCapReached", {
  open: Schema.Int,
  limit: Schema.Int,
  scope: Schema.optional(Schema.Literals(["key", "project"]))
}) {}

/** The project has as many API keys (or monitors not ended) as its plan allows. */
export class PlanLimitReached extends Schema.TaggedError<PlanLimitReached>()("PlanLimitReached", {
  resource: Schema.Literals(["api_keys", "monitors"]),
  count: Schema.Int,
  limit: Schema.Int
}) {}

/** The project already has as many runs under way (standalone runs not ended) as it may. */
export class RunCapReached extends Schema.TaggedError<RunCapReached>()("RunCapReached", {
  active: Schema.Int,
  limit: Schema.Int,
  /** Whose cap: the project's (WA_MAX_CONCURRENT_RUNS) or the calling key's (WA_MAX_CONCURRENT_RUNS_PER_KEY). */
  scope: Schema.optional(Schema.Literals(["key", "project"]))
}) {}

/** A session runs one run at a time: its latest run has not ended. */
export class PreviousRunActive extends Schema.TaggedError<PreviousRunActive>()("PreviousRunActive", {
  runId: Schema.String,
  status: RunStatus
}) {}

/** The run's state machine (src/domain/run-state.ts) does not allow this change. */
export class InvalidTransition extends Schema.TaggedError<InvalidTransition>()("InvalidTransition", {
  runId: Schema.String,
  from: RunStatus,
  to: RunStatus
}) {}

/** The operation needs a run that has not ended (a message, a cancel). */
export class RunEnded extends Schema.TaggedError<RunEnded>()("RunEnded", {
  runId: Schema.String,
  status: RunStatus,
  operation: Schema.Literals(["message", "cancel"])
}) {}

/** Feedback is for runs that ended. */
export class RunNotEnded extends Schema.TaggedError<RunNotEnded>()("RunNotEnded", {
  runId: Schema.String,
  status: RunStatus
}) {}

/** Only a run that ran out of steps can be continued. */
export class RunNotExpired extends Schema.TaggedError<RunNotExpired>()("RunNotExpired", {
  runId: Schema.String
}) {}

export class RunNotAwaitingInput extends Schema.TaggedError<RunNotAwaitingInput>()("RunNotAwaitingInput", {
  runId: Schema.String,
  status: RunStatus
}) {}

/** No input request of that id is pending on the run. `field` is the name the caller used for the id. */
export class InputRequestNotFound extends Schema.TaggedError<InputRequestNotFound>()("InputRequestNotFound", {
  inputRequestId: Schema.String,
  field: Schema.Literals(["input_request_id", "request_id"])
}) {}

export class InputRequestAnswered extends Schema.TaggedError<InputRequestAnswered>()("InputRequestAnswered", {
  inputRequestId: Schema.String
}) {}

/** Names the request used that are not among the allowed ones (actions, engines, models, outline sections). */
export class UnknownNames extends Schema.TaggedError<UnknownNames>()("UnknownNames", {
  field: Schema.String,
  what: Schema.String,
  unknown: Schema.Array(Schema.String),
  allowed: Schema.Array(Schema.String)
}) {}

/** A field the request needs (given the other fields) is missing. */
export class MissingFields extends Schema.TaggedError<MissingFields>()("MissingFields", {
  fields: Schema.Array(Schema.String)
}) {}

/** A field's value is not one this operation accepts. */
export class InvalidField extends Schema.TaggedError<InvalidField>()("InvalidField", {
  field: Schema.Array(Schema.String),
  detail: Schema.String,
  msg: Schema.String,
  type: Schema.String
}) {}

/** No monitor with that id in the project. */
export class MonitorNotFound extends Schema.TaggedError<MonitorNotFound>()("MonitorNotFound", {
  monitorId: Schema.String
}) {}

/** A run, snapshot or delivery of a monitor that the monitor does not have. */
export class MonitorPartNotFound extends Schema.TaggedError<MonitorPartNotFound>()("MonitorPartNotFound", {
  what: Schema.Literals(["run", "snapshot", "delivery"]),
  id: Schema.String,
  monitorId: Schema.String
}) {}

/** A message or intervention for a monitor that is not aligning (or a question already answered). */
export class MonitorNotInAlignment extends Schema.TaggedError<MonitorNotInAlignment>()("MonitorNotInAlignment", {
  monitorId: Schema.String,
  status: Schema.String,
  requestId: Schema.optional(Schema.String)
}) {}

/** An action the monitor's status does not allow (resume an active monitor, anything on a canceled one). */
export class MonitorActionRefused extends Schema.TaggedError<MonitorActionRefused>()("MonitorActionRefused", {
  action: Schema.String,
  status: Schema.String
}) {}

/** Alignment mode needs a model (the supervisor); none is configured. */
export class AlignmentNeedsModel extends Schema.TaggedError<AlignmentNeedsModel>()("AlignmentNeedsModel", {}) {}

/** Take control (intervene take_control / release_control / refresh_control_url) does not fit the run's state. */
export class ControlNotAvailable extends Schema.TaggedError<ControlNotAvailable>()("ControlNotAvailable", {
  runId: Schema.String,
  status: RunStatus,
  detail: Schema.String
}) {}

/** Billing is on and the project's credit balance is below the minimum a run needs. */
export class InsufficientCredits extends Schema.TaggedError<InsufficientCredits>()("InsufficientCredits", {
  balanceMicros: Schema.Number,
  requiredMicros: Schema.Number
}) {}

/** The project's monthly budget cap is reached: no new run until the next period or a higher cap. */
export class BudgetExceeded extends Schema.TaggedError<BudgetExceeded>()("BudgetExceeded", {
  capMicros: Schema.Number,
  spentMicros: Schema.Number
}) {}

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

/** Outline edits name sections the outline does not have. */
export class UnknownSections extends Schema.TaggedError<UnknownSections>()("UnknownSections", {
  unknown: Schema.Array(Schema.String),
  sections: Schema.Array(Schema.String)
}) {}

export class ArtifactNotFound extends Schema.TaggedError<ArtifactNotFound>()("ArtifactNotFound", {
  runId: Schema.String,
  artifactId: Schema.String
}) {}

/**
 * A run derived from another (refine, follow-up) needs its parent to have ended, or, for a
 * follow-up on a report, to have finished successfully (`done`).
 */
export class ParentRunNotReady extends Schema.TaggedError<ParentRunNotReady>()("ParentRunNotReady", {
  runId: Schema.String,
  status: RunStatus,
  operation: Schema.Literals(["refine", "followup"]),
  needs: Schema.Literals(["ended", "done"])
}) {}

/** No workspace with that id in the project (or it was deleted). */
export class WorkspaceNotFound extends Schema.TaggedError<WorkspaceNotFound>()("WorkspaceNotFound", {
  workspaceId: Schema.String
}) {}

/** No file of that name in the workspace. */
export class WorkspaceFileNotFound extends Schema.TaggedError<WorkspaceFileNotFound>()("WorkspaceFileNotFound", {
  workspaceId: Schema.String,
  name: Schema.String
}) {}

/** No profile with that id in the project. */
export class ProfileNotFound extends Schema.TaggedError<ProfileNotFound>()("ProfileNotFound", {
  profileId: Schema.String
}) {}

/** The profile is leased to an open session (one session at a time per browser identity). */
export class ProfileInUse extends Schema.TaggedError<ProfileInUse>()("ProfileInUse", {
  profileId: Schema.String,
  sessionId: SessionId
}) {}

/** A confirm names a site no interactive login was started for on this profile. */
export class LoginNotStarted extends Schema.TaggedError<LoginNotStarted>()("LoginNotStarted", {
  profileId: Schema.String,
  siteId: Schema.String
}) {}

/** No DoAnything schedule with that id in the project (or it was deleted). */
export class ScheduleNotFound extends Schema.TaggedError<ScheduleNotFound>()("ScheduleNotFound", {
  scheduleId: Schema.String
}) {}

/** A paused schedule is not triggered (resume it first). */
export class SchedulePaused extends Schema.TaggedError<SchedulePaused>()("SchedulePaused", {
  scheduleId: Schema.String
}) {}

export class CacheScriptNotFound extends Schema.TaggedError<CacheScriptNotFound>()("CacheScriptNotFound", {
  scriptId: Schema.String
}) {}

export class SkillNotFound extends Schema.TaggedError<SkillNotFound>()("SkillNotFound", {
  skill: Schema.String
}) {}

/** The project has its most skills (counted under a per-project lock, so concurrent creates respect it). */
export class SkillLimitReached extends Schema.TaggedError<SkillLimitReached>()("SkillLimitReached", {
  count: Schema.Number
}) {}

export class SkillNameTaken extends Schema.TaggedError<SkillNameTaken>()("SkillNameTaken", {
  name: Schema.String
}) {}
