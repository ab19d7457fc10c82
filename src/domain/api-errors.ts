/**
 * The error envelope of the contract: every non-2xx response is `{code, detail, extra}` and clients
 * branch on `code`. One class per HTTP status; `code` carries the spec's finer name
 * (`run_not_found`, `monitor_not_in_alignment`, ...). Part of the contract: the API's endpoints
 * declare them and the SDK reads them (src/http/errors.ts adds the server's response helpers).
 */
import { Schema } from "effect"
import { PayloadTooLarge } from "./wire/workspaces.ts"

const envelope = {
  code: Schema.String,
  detail: Schema.String,
  extra: Schema.Record(Schema.String, Schema.Unknown)
}

type Extra = Record<string, unknown>

export class BadRequest extends Schema.Error<BadRequest>("BadRequest")(envelope, {
  httpApiStatus: 400,
  description: "bad_request: the request is malformed"
}) {}

export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(envelope, {
  httpApiStatus: 401,
  description: "unauthorized: key missing, malformed, unknown, expired or revoked past its grace window"
}) {}

export class PaymentRequired extends Schema.Error<PaymentRequired>("PaymentRequired")(envelope, {
  httpApiStatus: 402,
  description: "insufficient_credits or budget_exceeded"
}) {}

export class Forbidden extends Schema.Error<Forbidden>("Forbidden")(envelope, {
  httpApiStatus: 403,
  description: "forbidden: the key is valid but not for this project"
}) {}

export class NotFound extends Schema.Error<NotFound>("NotFound")(envelope, {
  httpApiStatus: 404,
  description: "not_found, run_not_found, session_not_found, ...: wrong id or deleted resource"
}) {}

export class Conflict extends Schema.Error<Conflict>("Conflict")(envelope, {
  httpApiStatus: 409,
  description: "conflict: state mismatch, or the same Idempotency-Key is still in flight"
}) {}

/** One refused field of a 422: where (`["body", "schedule", "kind"]`), why, and the kind of failure. */
export const FieldErrorSchema = Schema.Struct({
  loc: Schema.Array(Schema.Union([Schema.String, Schema.Int])),
  msg: Schema.String,
  type: Schema.String.annotate({
    description: "what is wrong, Pydantic style: missing, extra_forbidden, type_error, value_error, or a value_error.* naming the " +
      "rule (value_error.webhook_not_found, ...); an open set that grows with the checks"
  })
})

/** A 422's `extra`: `errors[]` always, and whatever else the code carries (`names` of unknown_skills, ...). */
const validationEnvelope = {
  ...envelope,
  extra: Schema.StructWithRest(Schema.Struct({ errors: Schema.Array(FieldErrorSchema) }), [Schema.Record(Schema.String, Schema.Unknown)])
}

export class ValidationError extends Schema.Error<ValidationError>("ValidationError")(validationEnvelope, {
  httpApiStatus: 422,
  description: "validation_error: schema failure; extra.errors[] lists {loc, msg, type}"
}) {}

export class TooManyRequests extends Schema.Error<TooManyRequests>("TooManyRequests")(envelope, {
  httpApiStatus: 429,
  description: "rate_limit_exceeded, too_many_concurrent_sessions or too_many_concurrent_runs; honour Retry-After"
}) {}

export class InternalError extends Schema.Error<InternalError>("InternalError")(envelope, {
  httpApiStatus: 500,
  description: "internal_error: retry with backoff"
}) {}

export const notFound = (code: string, detail: string, extra: Extra = {}) => new NotFound({ code, detail, extra })
export const conflict = (detail: string, extra: Extra = {}, code = "conflict") => new Conflict({ code, detail, extra })
export const unauthorized = (detail: string) => new Unauthorized({ code: "unauthorized", detail, extra: {} })
export const forbidden = (detail: string) => new Forbidden({ code: "forbidden", detail, extra: {} })
export const badRequest = (detail: string, extra: Extra = {}) => new BadRequest({ code: "bad_request", detail, extra })

export interface FieldError {
  readonly loc: ReadonlyArray<string | number>
  readonly msg: string
  readonly type: string
}

export const validationError = (detail: string, errors: ReadonlyArray<FieldError>) =>
  new ValidationError({ code: "validation_error", detail, extra: { errors } })

/** The envelope class of each HTTP status (the server's domain-error mapper picks by it, statusOf reads it back). */
export const envelopeByStatus = {
  400: BadRequest,
  401: Unauthorized,
  402: PaymentRequired,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  // An upload larger than its limit (a streamed body, so a domain error rather than a request limit).
  413: PayloadTooLarge,
  422: ValidationError,
  429: TooManyRequests,
  500: InternalError
} as const

const statusByClass = new Map<Function, number>(Object.entries(envelopeByStatus).map(([status, envelope]) => [envelope, Number(status)]))

export type ApiError = BadRequest | Unauthorized | PaymentRequired | Forbidden | NotFound | Conflict | PayloadTooLarge | ValidationError | TooManyRequests | InternalError

/** The HTTP status of one of the envelope errors, or undefined for anything else. */
export const statusOf = (error: unknown): number | undefined =>
  typeof error === "object" && error !== null ? statusByClass.get(error.constructor) : undefined
