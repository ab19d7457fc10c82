/**
 * Domain errors on the wire: each becomes the `{code, detail, extra}` envelope of its HTTP status.
 * Each error declares its status, code, detail and extra on its own class (OnTheWire of
 * src/domain/errors.ts): those of src/domain/errors.ts, and as well those of accounts, delegation,
 * secrets, webhook endpoints, workspace files, Stripe and skills. The one mapper below reads that
 * declaration structurally (isOnTheWire), so it imports none of them and a new error needs no edit
 * here. Handlers pipe a service call through `httpErrors`; the envelope errors a handler
 * raises itself (and any error that declares nothing) pass through unchanged.
 */
import { Effect } from "effect"
import type { OnTheWire } from "../domain/errors.ts"
import { type Convention, statusIn } from "../domain/run-state.ts"
import { envelopeByStatus } from "./errors.ts"

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
