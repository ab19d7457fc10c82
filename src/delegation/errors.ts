/**
 * Domain errors of delegation. Each declares, on its class, how it reads on the wire (OnTheWire of
 * src/domain/errors.ts); the API's one mapper (httpErrors of src/http/domain-errors.ts) and the
 * consent page read that declaration.
 */
import { Schema } from "effect"
import type { WireBody } from "../domain/errors.ts"

/** A signed request that is refused: malformed, stale, replayed, wrong signature or unknown/revoked key. */
export class SignatureRejected extends Schema.TaggedError<SignatureRejected>()("SignatureRejected", {
  code: Schema.Literals(["signature_malformed", "signature_expired", "signature_replayed", "signature_invalid", "access_key_unknown"]),
  detail: Schema.String
}) {
  get httpStatus() { return 401 as const }
  wire(): WireBody {
    return { detail: this.detail, extra: {} }
  }
}

/** No such access key or grant visible to the caller. */
export class DelegationNotFound extends Schema.TaggedError<DelegationNotFound>()("DelegationNotFound", {
  what: Schema.Literals(["access_key", "grant"]),
  id: Schema.String
}) {
  get httpStatus() { return 404 as const }
  get code() { return `${this.what}_not_found` }
  wire(): WireBody {
    return { detail: `no ${this.what.replace("_", " ")} ${this.id} visible to you`, extra: {} }
  }
}

/** The grant's state does not allow the operation (consent pending, denied, code used or expired, ...). */
export class DelegationConflict extends Schema.TaggedError<DelegationConflict>()("DelegationConflict", {
  code: Schema.String,
  detail: Schema.String
}) {
  get httpStatus() { return 409 as const }
  wire(): WireBody {
    return { detail: this.detail, extra: {} }
  }
}

/** A request value that passes its schema but not the rules (redirectUri, projectId, code, state). */
export class DelegationInvalid extends Schema.TaggedError<DelegationInvalid>()("DelegationInvalid", {
  code: Schema.String,
  field: Schema.String,
  detail: Schema.String
}) {
  /** 422 validation_error names the body field (`scopes.0` is `["body", "scopes", 0]`); another code is a 400 naming it in extra. */
  get httpStatus() { return this.code === "validation_error" ? 422 as const : 400 as const }
  wire(): WireBody {
    return this.code === "validation_error"
      ? {
        detail: this.detail,
        extra: {
          errors: [{ loc: ["body", ...this.field.split(".").map((p) => /^\d+$/.test(p) ? Number(p) : p)], msg: this.detail, type: "value_error" }]
        }
      }
      : { detail: this.detail, extra: { field: this.field } }
  }
}

/** The caller may not do this (not an admin of the tenant, not the grant's user). */
export class DelegationForbidden extends Schema.TaggedError<DelegationForbidden>()("DelegationForbidden", {
  detail: Schema.String
}) {
  get httpStatus() { return 403 as const }
  get code() { return "forbidden" }
  wire(): WireBody {
    return { detail: this.detail, extra: {} }
  }
}

export type DelegationError = SignatureRejected | DelegationNotFound | DelegationConflict | DelegationInvalid | DelegationForbidden
