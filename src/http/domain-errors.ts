/**
 * Domain errors (src/domain/errors.ts) on the wire: each becomes the `{code, detail, extra}`
 * envelope of its HTTP status. Each error declares its status, code, detail and extra on its own
 * class (OnTheWire); the one mapper below reads that declaration, so a new domain error needs no
 * edit here. Handlers pipe a service call through `httpErrors`; the envelope errors a handler
 * raises itself (and any error that declares nothing) pass through unchanged.
 */
import { Effect } from "effect"
import type { OnTheWire } from "../domain/errors.ts"
import { type Convention, statusIn } from "../domain/run-state.ts"
import { BadRequest, Conflict, envelopeByStatus, Forbidden, NotFound, TooManyRequests, Unauthorized, validationError } from "./errors.ts"

type Envelopes = typeof envelopeByStatus

/** The envelope class each domain error becomes: the one of the status it declares; anything else is itself. */
export type HttpErrorOf<E> = E extends OnTheWire ? InstanceType<Envelopes[E["httpStatus"]]> : E

/** A domain error: it declares its status (one of an envelope class, not 500), its code and its wire body. */
export const isOnTheWire = (error: unknown): error is OnTheWire =>
  typeof error === "object" && error !== null &&
  "httpStatus" in error && typeof error.httpStatus === "number" && error.httpStatus !== 500 && Object.hasOwn(envelopeByStatus, error.httpStatus) &&
  "code" in error && typeof error.code === "string" &&
  "wire" in error && typeof error.wire === "function"

/**
 * The envelope of a domain error; anything else is returned as it is. `convention`: that of the
 * route answering ("B" under /api/v1 names a run's `done` `succeeded`, in `extra.status` and in the
 * detail alike); default "A".
 */
export const toHttpError = <E>(error: E, convention: Convention = "A"): HttpErrorOf<E> => {
  if (!isOnTheWire(error)) return error as HttpErrorOf<E>
  const { detail, extra } = error.wire((status) => statusIn(convention, status))
  const Envelope = envelopeByStatus[error.httpStatus] as new(props: { code: string; detail: string; extra: Record<string, unknown> }) => unknown
  return new Envelope({ code: error.code, detail, extra }) as HttpErrorOf<E>
}

/** Maps the domain errors of an effect to their envelopes, in the convention of the route (default "A"). */
export const httpErrors = <A, E, R>(effect: Effect.Effect<A, E, R>, convention: Convention = "A"): Effect.Effect<A, HttpErrorOf<E>, R> =>
  Effect.mapError(effect, (error) => toHttpError(error, convention))

// ---- accounts (src/accounts/errors.ts) ---------------------------------------------------------

import type { AccountError } from "../accounts/errors.ts"

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
