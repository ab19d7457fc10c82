/**
 * Delegation on the wire: the delegation service's bodies (camelCase, as the spec writes them),
 * a tenant's access keys and the delegations a user decided (src/http/api/delegation.ts).
 */
import { Schema } from "effect"
import { delegationScopes } from "../delegation.ts"
import { Timestamp } from "../schemas.ts"
import { ProjectId } from "../run.ts"
import { DelegationGrantId } from "../id-schemas.ts"
import { secretField } from "./common.ts"

const Bounded = (min: number, max: number) => Schema.String.check(Schema.isMinCodePoints(min), Schema.isMaxCodePoints(max))

export const DelegationScope = Schema.String.check(Schema.isMaxCodePoints(100)).annotate({
  description: `one of: ${delegationScopes.join(", ")}`
})

export const CreateDelegationRequest = Schema.Struct({
  mode: Schema.Literal("interactive"),
  agent: Bounded(1, 128).check(Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/u)).annotate({ description: "stable agent key shown on the consent page" }),
  scopes: Schema.Array(DelegationScope).check(Schema.isMinLength(1), Schema.isMaxLength(12)),
  redirectUri: Bounded(1, 2048).annotate({ description: "absolute https URL (http only on loopback); one of the access key's redirect_uris when it has any" }),
  state: Bounded(1, 512).annotate({ description: "the application's opaque value (OAuth style), sent back unchanged with the redirect after the user decides" }),
  userId: Bounded(1, 255).annotate({ description: "the application's own id of its end user; recorded on the grant and shown on the consent page" }),
  expiresIn: Schema.Int.check(Schema.isBetween({ minimum: 60, maximum: 86400 })).annotate({ description: "token lifetime in seconds, 60..86400" }),
  projectId: Schema.optional(ProjectId.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(64))).annotate({ description: "the project of the tenant the token acts on; omitted: the user picks one on the consent page" })
})

export const CreateDelegationResponse = Schema.Struct({
  grantId: Schema.String,
  authorizationUrl: Schema.String,
  expiresAt: Timestamp.annotate({ description: "the user must decide before this (10 minutes)" })
})

export const CompleteDelegationRequest = Schema.Struct({
  grantId: DelegationGrantId.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(64)),
  code: Bounded(1, 128),
  state: Bounded(1, 512).annotate({ description: "the state the redirect carried (the one given when the delegation was created)" })
})

export const DelegationGrantResponse = Schema.Struct({
  grantId: Schema.String,
  delegationToken: Schema.String.annotate({ description: "wad_...; send as Authorization: Bearer on the project's endpoints its scopes allow" }),
  tokenType: Schema.Literal("Bearer"),
  expiresIn: Schema.Int,
  expiresAt: Timestamp,
  scopes: Schema.Array(Schema.String),
  auditId: Schema.String,
  projectId: Schema.String,
  userId: Schema.String.annotate({ description: "the userId of the request" }),
  consentUserId: Schema.String.annotate({ description: "the console user who approved; the token acts for them" }),
  agent: Schema.String
})

export const AccessKeyResponse = Schema.Struct({
  id: Schema.String,
  tenant_id: Schema.String,
  name: Schema.NullOr(Schema.String),
  redirect_uris: Schema.Array(Schema.String),
  created_by_user_id: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  revoked_at: Schema.NullOr(Timestamp),
  last_used_at: Schema.NullOr(Timestamp)
})
export const AccessKeyCreatedResponse = Schema.Struct({
  ...AccessKeyResponse.fields,
  secret_key: secretField(Schema.String, "wask_...; keep it on your server only")
})
export const CreateAccessKeyRequest = Schema.Struct({
  name: Schema.optional(Schema.NullOr(Bounded(1, 100))),
  redirect_uris: Schema.optional(Schema.Array(Bounded(1, 2048)).check(Schema.isMaxLength(10))).annotate({
    description: "when given, a delegation's redirectUri must be one of them exactly"
  })
})

export const DelegationResponse = Schema.Struct({
  id: Schema.String,
  tenant_id: Schema.String,
  access_key_id: Schema.String,
  agent: Schema.String,
  scopes: Schema.Array(Schema.String),
  status: Schema.Literals(["pending", "approved", "denied", "active", "revoked"]),
  user_id: Schema.NullOr(Schema.String),
  external_user_id: Schema.String,
  project_id: Schema.NullOr(Schema.String),
  audit_id: Schema.String,
  expires_in: Schema.Int,
  token_expires_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
  revoked_at: Schema.NullOr(Timestamp)
})

export const AccessKeyListResponse = Schema.Struct({ items: Schema.Array(AccessKeyResponse), next_cursor: Schema.NullOr(Schema.String) })
export const DelegationListResponse = Schema.Struct({ items: Schema.Array(DelegationResponse), next_cursor: Schema.NullOr(Schema.String) })
