/**
 * Domain errors of accounts, tenants, invitations and bug reports. Each declares, on its class, how
 * it reads on the wire (OnTheWire of src/domain/errors.ts: HTTP status, code, detail and extra);
 * the HTTP layer's one mapper (httpErrors of src/http/domain-errors.ts) reads that declaration.
 */
import { Schema } from "effect"
import type { WireBody } from "../domain/errors.ts"

/** Wrong email or password (one answer for both, so it does not tell which accounts exist). */
export class InvalidCredentials extends Schema.TaggedError<InvalidCredentials>()("InvalidCredentials", {
  detail: Schema.String
}) {
  get httpStatus() { return 401 as const }
  get code() { return "unauthorized" }
  wire(): WireBody {
    return { detail: this.detail, extra: {} }
  }
}

/** Too many sign-in attempts for the account or from the address in the current window. */
export class LoginThrottled extends Schema.TaggedError<LoginThrottled>()("LoginThrottled", {
  scope: Schema.Literals(["account", "address"]),
  retryAfterSeconds: Schema.Int,
  limit: Schema.Int
}) {
  get httpStatus() { return 429 as const }
  get code() { return "rate_limit_exceeded" }
  wire(): WireBody {
    return {
      detail: `too many sign-in attempts ${this.scope === "account" ? "for this account" : "from this address"}; retry after ${this.retryAfterSeconds} s`,
      extra: { scope: this.scope, limit: this.limit, retry_after_seconds: this.retryAfterSeconds }
    }
  }
}

/** No such tenant, member or invitation visible to the caller (also: one of another tenant). */
export class AccountResourceNotFound extends Schema.TaggedError<AccountResourceNotFound>()("AccountResourceNotFound", {
  what: Schema.Literals(["tenant", "member", "invitation", "bug_report", "provider", "token"]),
  id: Schema.String
}) {
  get httpStatus() { return 404 as const }
  get code() { return `${this.what}_not_found` }
  wire(): WireBody {
    return {
      detail: this.what === "invitation"
        ? "no invitation with this token"
        : this.what === "token"
        ? "no such link: it is not one this service mailed (to this account); ask for a new one"
        : `no ${this.what.replace("_", " ")} ${this.id} visible to you`,
      extra: {}
    }
  }
}

/** The caller is known but its role (or its disabled membership) does not allow the operation. */
export class RoleForbidden extends Schema.TaggedError<RoleForbidden>()("RoleForbidden", {
  detail: Schema.String,
  requiredRole: Schema.optional(Schema.String)
}) {
  get httpStatus() { return 403 as const }
  get code() { return "forbidden" }
  wire(): WireBody {
    return { detail: this.detail, extra: this.requiredRole === undefined ? {} : { required_role: this.requiredRole } }
  }
}

/** A state that does not allow the operation (last admin, pending invitation, expired token, ...). */
export class AccountConflict extends Schema.TaggedError<AccountConflict>()("AccountConflict", {
  code: Schema.String,
  detail: Schema.String
}) {
  get httpStatus() { return 409 as const }
  wire(): WireBody {
    return { detail: this.detail, extra: {} }
  }
}

/** A per-user or per-tenant cap is reached (checked in the transaction that would pass it). */
export class AccountLimitReached extends Schema.TaggedError<AccountLimitReached>()("AccountLimitReached", {
  what: Schema.String,
  limit: Schema.Int
}) {
  get httpStatus() { return 409 as const }
  get code() { return "limit_exceeded" }
  wire(): WireBody {
    return { detail: `the limit of ${this.limit} ${this.what} is reached`, extra: { limit: this.limit } }
  }
}

/** A field's value is not acceptable beyond its schema (e.g. a screenshot that is not an image data URL). */
export class AccountInvalidField extends Schema.TaggedError<AccountInvalidField>()("AccountInvalidField", {
  field: Schema.String,
  detail: Schema.String
}) {
  get httpStatus() { return 422 as const }
  get code() { return "validation_error" }
  wire(): WireBody {
    return { detail: this.detail, extra: { errors: [{ loc: ["body", this.field], msg: this.detail, type: "value_error" }] } }
  }
}

/** An SSO sign-in that cannot complete (provider error, bad state, no verified email, ...). */
export class SsoFailed extends Schema.TaggedError<SsoFailed>()("SsoFailed", {
  detail: Schema.String
}) {
  get httpStatus() { return 401 as const }
  get code() { return "sso_failed" }
  wire(): WireBody {
    return { detail: this.detail, extra: {} }
  }
}

export type AccountError =
  | SsoFailed
  | InvalidCredentials
  | LoginThrottled
  | AccountResourceNotFound
  | RoleForbidden
  | AccountConflict
  | AccountLimitReached
  | AccountInvalidField
