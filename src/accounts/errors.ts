/**
 * Domain errors of accounts, tenants, invitations and bug reports. The HTTP layer maps them to the
 * envelope in src/http/domain-errors.ts (accountHttpErrors).
 */
import { Schema } from "effect"

/** Wrong email or password (one answer for both, so it does not tell which accounts exist). */
export class InvalidCredentials extends Schema.TaggedError<InvalidCredentials>()("InvalidCredentials", {
  detail: Schema.String
}) {}

/** Too many sign-in attempts for the account or from the address in the current window. */
export class LoginThrottled extends Schema.TaggedError<LoginThrottled>()("LoginThrottled", {
  scope: Schema.Literals(["account", "address"]),
  retryAfterSeconds: Schema.Int,
  limit: Schema.Int
}) {}

/** No such tenant, member or invitation visible to the caller (also: one of another tenant). */
export class AccountResourceNotFound extends Schema.TaggedError<AccountResourceNotFound>()("AccountResourceNotFound", {
  what: Schema.Literals(["tenant", "member", "invitation", "bug_report", "provider", "token"]),
  id: Schema.String
}) {}

/** The caller is known but its role (or its disabled membership) does not allow the operation. */
export class RoleForbidden extends Schema.TaggedError<RoleForbidden>()("RoleForbidden", {
  detail: Schema.String,
  requiredRole: Schema.optional(Schema.String)
}) {}

/** A state that does not allow the operation (last admin, pending invitation, expired token, ...). */
export class AccountConflict extends Schema.TaggedError<AccountConflict>()("AccountConflict", {
  code: Schema.String,
  detail: Schema.String
}) {}

/** A per-user or per-tenant cap is reached (checked in the transaction that would pass it). */
export class AccountLimitReached extends Schema.TaggedError<AccountLimitReached>()("AccountLimitReached", {
  what: Schema.String,
  limit: Schema.Int
}) {}

/** A field's value is not acceptable beyond its schema (e.g. a screenshot that is not an image data URL). */
export class AccountInvalidField extends Schema.TaggedError<AccountInvalidField>()("AccountInvalidField", {
  field: Schema.String,
  detail: Schema.String
}) {}

/** An SSO sign-in that cannot complete (provider error, bad state, no verified email, ...). */
export class SsoFailed extends Schema.TaggedError<SsoFailed>()("SsoFailed", {
  detail: Schema.String
}) {}

export type AccountError =
  | SsoFailed
  | InvalidCredentials
  | LoginThrottled
  | AccountResourceNotFound
  | RoleForbidden
  | AccountConflict
  | AccountLimitReached
  | AccountInvalidField
