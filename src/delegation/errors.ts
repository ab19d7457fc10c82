/** Domain errors of delegation; src/http/domain-errors.ts (delegationHttpErrors) maps them to the envelope. */
import { Schema } from "effect"

/** A signed request that is refused: malformed, stale, replayed, wrong signature or unknown/revoked key. */
export class SignatureRejected extends Schema.TaggedError<SignatureRejected>()("SignatureRejected", {
  code: Schema.Literals(["signature_malformed", "signature_expired", "signature_replayed", "signature_invalid", "access_key_unknown"]),
  detail: Schema.String
}) {}

/** No such access key or grant visible to the caller. */
export class DelegationNotFound extends Schema.TaggedError<DelegationNotFound>()("DelegationNotFound", {
  what: Schema.Literals(["access_key", "grant"]),
  id: Schema.String
}) {}

/** The grant's state does not allow the operation (consent pending, denied, code used or expired, ...). */
export class DelegationConflict extends Schema.TaggedError<DelegationConflict>()("DelegationConflict", {
  code: Schema.String,
  detail: Schema.String
}) {}

/** A request value that passes its schema but not the rules (redirectUri, projectId, code, state). */
export class DelegationInvalid extends Schema.TaggedError<DelegationInvalid>()("DelegationInvalid", {
  code: Schema.String,
  field: Schema.String,
  detail: Schema.String
}) {}

/** The caller may not do this (not an admin of the tenant, not the grant's user). */
export class DelegationForbidden extends Schema.TaggedError<DelegationForbidden>()("DelegationForbidden", {
  detail: Schema.String
}) {}

export type DelegationError = SignatureRejected | DelegationNotFound | DelegationConflict | DelegationInvalid | DelegationForbidden
