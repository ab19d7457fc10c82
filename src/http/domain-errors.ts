/**
 * Domain errors (src/domain/errors.ts) on the wire: each becomes the `{code, detail, extra}`
 * envelope of its HTTP status. Handlers pipe a service call through `httpErrors`; the envelope
 * errors a handler raises itself pass through unchanged.
 */
import { Effect } from "effect"
import type {
  DomainError,
  InputRequestAnswered,
  InputRequestNotFound,
  InvalidField,
  InvalidTransition,
  MissingFields,
  PreviousRunActive,
  RunEnded,
  RunNotAwaitingInput,
  RunNotEnded,
  RunNotExpired,
  RunNotFound,
  SessionCapReached,
  RunCapReached,
  SessionClosed,
  SessionNotFound,
  UnknownNames,
  UnknownSections,
  ArtifactNotFound,
  ParentRunNotReady,
  MonitorNotFound,
  MonitorPartNotFound,
  MonitorNotInAlignment,
  MonitorActionRefused,
  AlignmentNeedsModel,
  WorkspaceNotFound,
  WorkspaceFileNotFound,
  ProfileNotFound,
  ProfileInUse,
  LoginNotStarted,
  ControlNotAvailable,
  InsufficientCredits,
  BudgetExceeded,
  PlanLimitReached,
  ScheduleNotFound,
  SchedulePaused
} from "../domain/errors.ts"
import { usdFromMicros } from "../domain/money.ts"
import { type Convention, statusIn } from "../domain/run-state.ts"
import { Conflict, Forbidden, NotFound, PaymentRequired, TooManyRequests, ValidationError, validationError } from "./errors.ts"

/** Retry-After of too_many_concurrent_runs: a search run ends within seconds, a research run takes longer. */
const RUN_CAP_RETRY_SECONDS = 2

const kindLabel = { do_anything: "run", deep_research: "research run", web_search: "web search run" } as const

/** The envelope class each domain error becomes. */
export type HttpErrorOf<E> = E extends RunNotFound | SessionNotFound | ArtifactNotFound | MonitorNotFound | MonitorPartNotFound | WorkspaceNotFound | WorkspaceFileNotFound | ProfileNotFound | ScheduleNotFound ? NotFound
  : E extends SessionCapReached | RunCapReached ? TooManyRequests
  : E extends InsufficientCredits | BudgetExceeded ? PaymentRequired
  : E extends PlanLimitReached ? Forbidden
  : E extends UnknownNames | MissingFields | InvalidField | UnknownSections | AlignmentNeedsModel ? ValidationError
  : E extends SessionClosed | PreviousRunActive | InvalidTransition | RunEnded | RunNotEnded | RunNotExpired | RunNotAwaitingInput | InputRequestNotFound | InputRequestAnswered | ParentRunNotReady | MonitorNotInAlignment | MonitorActionRefused | ProfileInUse | LoginNotStarted | ControlNotAvailable | SchedulePaused ? Conflict
  : E

const isDomainError = (error: unknown): error is DomainError =>
  typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string" && error._tag in renderers

const conflict = (detail: string, extra: Record<string, unknown> = {}) => new Conflict({ code: "conflict", detail, extra })

/**
 * Each domain error's envelope. `show` names a run status in the convention of the route that
 * answers (src/domain/run-state.ts statusIn): `succeeded` for `done` under /api/v1, in `extra.status`
 * and in the detail alike.
 */
const renderers: {
  readonly [K in DomainError["_tag"]]: (error: Extract<DomainError, { _tag: K }>, show: (status: string) => string) => NotFound | Conflict | TooManyRequests | ValidationError
} = {
  RunNotFound: (e) =>
    new NotFound({
      code: "run_not_found",
      detail: e.sessionId === undefined ? `no ${kindLabel[e.kind ?? "do_anything"]} ${e.runId} in this project` : `no run ${e.runId} in session ${e.sessionId}`,
      extra: {}
    }),
  SessionNotFound: (e) => new NotFound({ code: "session_not_found", detail: `no session ${e.sessionId} in this project`, extra: {} }),
  SessionCapReached: (e) =>
    new TooManyRequests({
      code: "too_many_concurrent_sessions",
      detail: e.scope === "project"
        ? `this project already holds ${e.open} open sessions across its keys (its plan's limit ${e.limit}); close one or wait for one to end`
        : `this key already holds ${e.open} open sessions (limit ${e.limit}); close one or wait for one to end`,
      extra: { limit: e.limit, active: e.open, scope: e.scope ?? "key", retry_after_seconds: 5 }
    }),
  // A plan limit is no rate: waiting does not lift it (delete one, or move to a bigger plan).
  PlanLimitReached: (e) =>
    new Forbidden({
      code: "plan_limit_reached",
      detail: `this project already has ${e.count} ${e.resource === "api_keys" ? "API keys" : "monitors that have not ended"} (its plan's limit ${e.limit}); ` +
        (e.resource === "api_keys" ? "revoke one" : "cancel or delete one") + " or move the project to a bigger plan",
      extra: { resource: e.resource, limit: e.limit, count: e.count }
    }),
  RunCapReached: (e) =>
    new TooManyRequests({
      code: "too_many_concurrent_runs",
      detail: e.scope === "key"
        ? `this API key already has ${e.active} runs under way (its limit ${e.limit}); retry when one has ended`
        : `this project already has ${e.active} runs under way (limit ${e.limit}); retry when one has ended`,
      // Runs of a search end within seconds; the envelope middleware turns these into Retry-After and RateLimit.
      extra: { limit: e.limit, active: e.active, scope: e.scope ?? "project", retry_after_seconds: RUN_CAP_RETRY_SECONDS }
    }),
  SessionClosed: (e) => conflict("the session is closed; create a new session", { session_id: e.sessionId }),
  PreviousRunActive: (e, show) => conflict("the previous run of this session is not terminal yet", { run_id: e.runId, status: show(e.status) }),
  InvalidTransition: (e, show) =>
    e.to === "canceled"
      ? conflict(`the run is ${show(e.from)}; only a non-terminal run can be canceled`, { status: show(e.from) })
      : conflict(`the run is ${show(e.from)}; it cannot become ${show(e.to)}`, { status: show(e.from) }),
  RunEnded: (e, show) =>
    e.operation === "message"
      ? conflict(`the run is ${show(e.status)}; messages go to a follow-up run`, { status: show(e.status) })
      : conflict(`the run is ${show(e.status)}; only a non-terminal run can be canceled`, { status: show(e.status) }),
  RunNotEnded: (e, show) => conflict(`the run is ${show(e.status)}; feedback is for finished runs`, { status: show(e.status) }),
  RunNotExpired: () => conflict("only a run that ran out of steps (expired) can be continued; add a follow-up run instead"),
  RunNotAwaitingInput: (e, show) => conflict(`the run is ${show(e.status)}; it is not awaiting input`, { status: show(e.status) }),
  InputRequestNotFound: (e) =>
    e.field === "request_id"
      ? conflict(`no pending input request ${e.inputRequestId} on this run`, { request_id: e.inputRequestId })
      : conflict(`no input request ${e.inputRequestId} on this run`, { input_request_id: e.inputRequestId }),
  InputRequestAnswered: (e) => conflict("the input request was already answered", { input_request_id: e.inputRequestId }),
  UnknownNames: (e) =>
    e.field === "skills"
      ? new ValidationError({
        code: "unknown_skills",
        detail: `no skill named ${e.unknown.join(", ")} in this project (see /v1/projects/{pid}/skills)`,
        extra: { names: e.unknown, errors: e.unknown.map((name) => ({ loc: ["body", "skills"], msg: `no skill named ${name} in this project`, type: "value_error" })) }
      })
      : validationError(
      `unknown ${e.what}(s): ${e.unknown.join(", ")}; valid: ${e.allowed.join(", ")}`,
      e.unknown.map((name) => ({ loc: ["body", e.field], msg: `unknown ${e.what} ${name}; valid ${e.what}s: ${e.allowed.join(", ")}`, type: "enum" }))
    ),
  MissingFields: (e) =>
    validationError(
      e.fields.length === 1 && e.fields[0] === "instructions" ? "instructions are required" : `${e.fields.join(" and ")} required`,
      e.fields.map((field) => ({ loc: ["body", field], msg: field === "instructions" ? "instructions are required" : "required", type: "missing" }))
    ),
  UnknownSections: (e) =>
    validationError(`unknown section id(s): ${[...new Set(e.unknown)].join(", ")}`, e.unknown.map((id) => ({
      loc: ["body", "response", "edits"],
      msg: `no section ${id} in the outline; sections: ${e.sections.join(", ")}`,
      type: "value_error"
    }))),
  ArtifactNotFound: (e) => new NotFound({ code: "artifact_not_found", detail: `no artifact ${e.artifactId} on run ${e.runId}`, extra: {} }),
  ParentRunNotReady: (e, show) =>
    conflict(
      `the run is ${show(e.status)}; a ${e.operation === "refine" ? "refinement" : "follow-up"} needs a run that ${
        e.needs === "done" ? `finished successfully (${show("done")})` : "has ended"
      }`,
      { run_id: e.runId, status: show(e.status) }
    ),
  InvalidField: (e) => validationError(e.detail, [{ loc: ["body", ...e.field], msg: e.msg, type: e.type }]),
  MonitorNotFound: (e) => new NotFound({ code: "monitor_not_found", detail: `no monitor ${e.monitorId} in this project`, extra: {} }),
  MonitorPartNotFound: (e) =>
    new NotFound({ code: `${e.what}_not_found`, detail: `no ${e.what === "run" ? "tick run" : e.what} ${e.id} of monitor ${e.monitorId}`, extra: {} }),
  MonitorNotInAlignment: (e) =>
    new Conflict({
      code: "monitor_not_in_alignment",
      detail: e.requestId === undefined
        ? `the monitor is ${e.status}; messages and interventions are for a monitor in alignment (pending_clarification)`
        : `no open alignment question ${e.requestId} on this monitor`,
      extra: { status: e.status, ...(e.requestId === undefined ? {} : { request_id: e.requestId }) }
    }),
  MonitorActionRefused: (e) => conflict(`the monitor is ${e.status}; it cannot ${e.action}`, { status: e.status, action: e.action }),
  ControlNotAvailable: (e, show) => conflict(e.detail, { status: show(e.status) }),
  AlignmentNeedsModel: () =>
    new ValidationError({
      code: "alignment_requires_model",
      detail: "alignment mode (no schedule) needs a model to ask the clarifying questions, and none is configured; give a schedule (direct mode) or configure WA_MODEL_BASE_URL",
      extra: { errors: [{ loc: ["body", "schedule"], msg: "required when no model is configured", type: "missing" }] }
    }),
  WorkspaceNotFound: (e) => new NotFound({ code: "workspace_not_found", detail: `no workspace ${e.workspaceId} in this project`, extra: { workspace_id: e.workspaceId } }),
  WorkspaceFileNotFound: (e) =>
    new NotFound({ code: "file_not_found", detail: `no file ${JSON.stringify(e.name)} in workspace ${e.workspaceId}`, extra: { workspace_id: e.workspaceId, name: e.name } }),
  ProfileNotFound: (e) => new NotFound({ code: "profile_not_found", detail: `no profile ${e.profileId} in this project`, extra: { profile_id: e.profileId } }),
  ProfileInUse: (e) =>
    new Conflict({
      code: "profile_in_use",
      detail: `profile ${e.profileId} is in use by open session ${e.sessionId}; a profile serves one session at a time (close that session first)`,
      extra: { profile_id: e.profileId, session_id: e.sessionId }
    }),
  InsufficientCredits: (e) =>
    new PaymentRequired({
      code: "insufficient_credits",
      detail: `the project's credit balance (${usdFromMicros(e.balanceMicros)} USD) is below the ${usdFromMicros(e.requiredMicros)} USD a run needs; add credits (wa credits grant)`,
      extra: { balance_usd: usdFromMicros(e.balanceMicros), required_usd: usdFromMicros(e.requiredMicros) }
    }),
  BudgetExceeded: (e) =>
    new PaymentRequired({
      code: "budget_exceeded",
      detail: `the project spent ${usdFromMicros(e.spentMicros)} USD of its ${usdFromMicros(e.capMicros)} USD monthly budget; raise the cap (PUT /billing/budget) or wait for the next period`,
      extra: { monthly_cap_usd: usdFromMicros(e.capMicros), spent_usd: usdFromMicros(e.spentMicros) }
    }),
  LoginNotStarted: (e) =>
    new Conflict({
      code: "interactive_login_not_started",
      detail: `no interactive login for site ${e.siteId} on profile ${e.profileId}; start one with POST /profiles/login`,
      extra: { profile_id: e.profileId, site_id: e.siteId }
    }),
  ScheduleNotFound: (e) => new NotFound({ code: "schedule_not_found", detail: `no schedule ${e.scheduleId} in this project`, extra: { schedule_id: e.scheduleId } }),
  SchedulePaused: (e) =>
    new Conflict({ code: "schedule_paused", detail: `schedule ${e.scheduleId} is paused; resume it before triggering it`, extra: { schedule_id: e.scheduleId } })
}

/**
 * The envelope of a domain error; anything else is returned as it is. `convention`: that of the
 * route answering ("B" under /api/v1 names a run's `done` `succeeded`); default "A".
 */
export const toHttpError = <E>(error: E, convention: Convention = "A"): HttpErrorOf<E> =>
  (isDomainError(error)
    ? (renderers[error._tag] as (e: DomainError, show: (status: string) => string) => unknown)(error, (status) => statusIn(convention, status))
    : error) as HttpErrorOf<E>

/** Maps the domain errors of an effect to their envelopes, in the convention of the route (default "A"). */
export const httpErrors = <A, E, R>(effect: Effect.Effect<A, E, R>, convention: Convention = "A"): Effect.Effect<A, HttpErrorOf<E>, R> =>
  Effect.mapError(effect, (error) => toHttpError(error, convention))

// ---- accounts (src/accounts/errors.ts) ---------------------------------------------------------

import type { AccountError } from "../accounts/errors.ts"
import { Unauthorized } from "./errors.ts"

const accountTags = new Set<string>([
  "SsoFailed", "InvalidCredentials", "LoginThrottled", "AccountResourceNotFound", "RoleForbidden", "AccountConflict", "AccountLimitReached", "AccountInvalidField"
])

const toAccountHttpError = (e: AccountError) => {
  switch (e._tag) {
    case "SsoFailed":
      return new Unauthorized({ code: "sso_failed", detail: e.detail, extra: {} })
    case "InvalidCredentials":
      return new Unauthorized({ code: "unauthorized", detail: e.detail, extra: {} })
    case "LoginThrottled":
      return new TooManyRequests({
        code: "rate_limit_exceeded",
        detail: `too many sign-in attempts ${e.scope === "account" ? "for this account" : "from this address"}; retry after ${e.retryAfterSeconds} s`,
        extra: { scope: e.scope, limit: e.limit, retry_after_seconds: e.retryAfterSeconds }
      })
    case "AccountResourceNotFound":
      return new NotFound({
        code: `${e.what}_not_found`,
        detail: e.what === "invitation"
          ? "no invitation with this token"
          : e.what === "token"
          ? "no such link: it is not one this service mailed (to this account); ask for a new one"
          : `no ${e.what.replace("_", " ")} ${e.id} visible to you`,
        extra: {}
      })
    case "RoleForbidden":
      return new Forbidden({ code: "forbidden", detail: e.detail, extra: e.requiredRole === undefined ? {} : { required_role: e.requiredRole } })
    case "AccountConflict":
      return new Conflict({ code: e.code, detail: e.detail, extra: {} })
    case "AccountLimitReached":
      return new Conflict({ code: "limit_exceeded", detail: `the limit of ${e.limit} ${e.what} is reached`, extra: { limit: e.limit } })
    case "AccountInvalidField":
      return validationError(e.detail, [{ loc: ["body", e.field], msg: e.detail, type: "value_error" }])
  }
}

type AccountHttpErrorOf<E> = E extends AccountError ? ReturnType<typeof toAccountHttpError> : E

/** Maps the account domain errors of an effect to their envelopes (others pass unchanged). */
export const accountHttpErrors = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, AccountHttpErrorOf<E>, R> =>
  Effect.mapError(effect, (error) =>
    (typeof error === "object" && error !== null && "_tag" in error && accountTags.has(String(error._tag))
      ? toAccountHttpError(error as unknown as AccountError)
      : error) as AccountHttpErrorOf<E>)

// ---- delegation (src/delegation/errors.ts) -----------------------------------------------------

import type { DelegationError } from "../delegation/errors.ts"
import { BadRequest } from "./errors.ts"

const delegationTags = new Set<string>(["SignatureRejected", "DelegationNotFound", "DelegationConflict", "DelegationInvalid", "DelegationForbidden"])

/** The API's error for a delegation domain error; the consent page answers with the same. */
export const toDelegationHttpError = (e: DelegationError) => {
  switch (e._tag) {
    case "SignatureRejected":
      return new Unauthorized({ code: e.code, detail: e.detail, extra: {} })
    case "DelegationNotFound":
      return new NotFound({ code: `${e.what}_not_found`, detail: `no ${e.what.replace("_", " ")} ${e.id} visible to you`, extra: {} })
    case "DelegationConflict":
      return new Conflict({ code: e.code, detail: e.detail, extra: {} })
    case "DelegationInvalid":
      return e.code === "validation_error"
        ? validationError(e.detail, [{ loc: ["body", ...e.field.split(".").map((p) => /^\d+$/.test(p) ? Number(p) : p)], msg: e.detail, type: "value_error" }])
        : new BadRequest({ code: e.code, detail: e.detail, extra: { field: e.field } })
    case "DelegationForbidden":
      return new Forbidden({ code: "forbidden", detail: e.detail, extra: {} })
  }
}

type DelegationHttpErrorOf<E> = E extends DelegationError ? ReturnType<typeof toDelegationHttpError> : E

/** Maps the delegation domain errors of an effect to their envelopes (others pass unchanged). */
export const delegationHttpErrors = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, DelegationHttpErrorOf<E>, R> =>
  Effect.mapError(effect, (error) =>
    (typeof error === "object" && error !== null && "_tag" in error && delegationTags.has(String(error._tag))
      ? toDelegationHttpError(error as unknown as DelegationError)
      : error) as DelegationHttpErrorOf<E>)
