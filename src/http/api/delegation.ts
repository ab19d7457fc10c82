/**
 * Delegation (AK/SK), README "Delegation":
 *
 * - the delegation service of the spec, `POST /api/v3/eak/delegations` and `/complete`, called by
 *   an application's server with requests signed with a tenant access key (SignedRequest);
 * - access keys of a tenant, managed by its admins with a console session
 *   (`/v1/tenants/{tid}/access_keys`);
 * - the signed-in user's delegations, and their revocation (`/v1/delegations`).
 *
 * The consent page (`/v1/delegations/consent`) is HTML, served beside the API
 * (src/http/server/delegation.ts). The delegation service's fields are camelCase as the spec
 * writes them; the console endpoints are snake_case like their siblings.
 */
import { Context, Schema } from "effect"
import type { SignedCaller } from "../../domain/delegation.ts"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, Forbidden, NotFound, TooManyRequests, Unauthorized, ValidationError } from "../../domain/api-errors.ts"
import { delegationScopes } from "../../domain/delegation.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { ConsoleAuth } from "./accounts-security.ts"
import { secretField, Timestamp } from "./schemas.ts"
import { type CurrentCaller, Idempotency, RateLimit } from "./security.ts"

const strict = { errors: "all", onExcessProperty: "error" } as const
const Bounded = (min: number, max: number) => Schema.String.check(Schema.isMinCodePoints(min), Schema.isMaxCodePoints(max))
const IdParam = Schema.String.check(Schema.isMaxCodePoints(64))

/** The access key of a signed request. */
export class CurrentAccessKey extends Context.Service<CurrentAccessKey, SignedCaller>()("wa/http/CurrentAccessKey") {}

/**
 * `Authorization: WA-HMAC-SHA256 Credential=<wak_...>, Timestamp=<unix s>, Nonce=<16..64>, Signature=<hex>`.
 * 401 signature_malformed / signature_expired / signature_replayed / signature_invalid / access_key_unknown.
 */
export class SignedRequest extends HttpApiMiddleware.Service<SignedRequest, { provides: CurrentAccessKey | CurrentCaller }>()(
  "wa/http/SignedRequest",
  {
    security: { signature: HttpApiSecurity.apiKey({ key: "Authorization", in: "header" }) },
    error: [Unauthorized, TooManyRequests]
  }
) {}

export const DelegationScope = Schema.String.check(Schema.isMaxCodePoints(100)).annotate({
  description: `one of: ${delegationScopes.join(", ")}`
})

export const CreateDelegationRequest = Schema.Struct({
  mode: Schema.Literal("interactive"),
  agent: Bounded(1, 128).check(Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/u)).annotate({ description: "stable agent key shown on the consent page" }),
  scopes: Schema.Array(DelegationScope).check(Schema.isMinLength(1), Schema.isMaxLength(12)),
  redirectUri: Bounded(1, 2048).annotate({ description: "absolute https URL (http only on loopback); one of the access key's redirect_uris when it has any" }),
  state: Bounded(1, 512),
  userId: Bounded(1, 255).annotate({ description: "the application's own id of its end user; recorded on the grant and shown on the consent page" }),
  expiresIn: Schema.Int.check(Schema.isBetween({ minimum: 60, maximum: 86400 })).annotate({ description: "token lifetime in seconds, 60..86400" }),
  projectId: Schema.optional(Bounded(1, 64)).annotate({ description: "the project of the tenant the token acts on; omitted: the user picks one on the consent page" })
})

export const CreateDelegationResponse = Schema.Struct({
  grantId: Schema.String,
  authorizationUrl: Schema.String,
  expiresAt: Timestamp.annotate({ description: "the user must decide before this (10 minutes)" })
})

export const CompleteDelegationRequest = Schema.Struct({
  grantId: Bounded(1, 64),
  code: Bounded(1, 128),
  state: Bounded(1, 512)
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

const signedErrors = [ValidationError, BadRequest, NotFound, Conflict]

export class DelegationServiceApi extends HttpApiGroup.make("delegation_service")
  .add(
    HttpApiEndpoint.post("createDelegation", "/api/v3/eak/delegations", {
      payload: CreateDelegationRequest,
      success: CreateDelegationResponse.annotate({ httpApiStatus: 201 }),
      error: signedErrors
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Starts a delegation: send the user to authorizationUrl; the service redirects back to redirectUri with grantId, code and state " +
        "(or error=access_denied and state). Unknown scopes are 422."
    ),
    HttpApiEndpoint.post("completeDelegation", "/api/v3/eak/delegations/complete", {
      payload: CompleteDelegationRequest,
      success: DelegationGrantResponse,
      error: signedErrors
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Exchanges the callback's code (single use, 10 minutes) for the delegation token. Signed with the access key that started the delegation. " +
        "400 state_mismatch / invalid_code; 409 consent_pending, access_denied, code_used (the token is revoked too), code_expired."
    )
  )
  .middleware(RateLimit)
  .middleware(SignedRequest)
  .annotateMerge(OpenApi.annotations({
    title: "Delegation service",
    description: "AK/SK-signed requests of an application's server (README \"Delegation\" has the signing scheme)."
  }))
{}

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

const tenantErrors = [NotFound, Forbidden, BadRequest]

export class AccessKeysApi extends HttpApiGroup.make("access_keys")
  .add(
    HttpApiEndpoint.post("create", "/", {
      params: { tid: IdParam },
      payload: CreateAccessKeyRequest,
      success: AccessKeyCreatedResponse.annotate({ httpApiStatus: 201 }),
      error: [...tenantErrors, Conflict, ValidationError]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(OpenApi.Description, "Admins only. At most 10 live access keys per tenant (409 limit_exceeded)."),
    HttpApiEndpoint.get("list", "/", {
      params: { tid: IdParam },
      query: PageQuery,
      success: Schema.Struct({ items: Schema.Array(AccessKeyResponse), next_cursor: Schema.NullOr(Schema.String) }),
      error: tenantErrors
    }).annotate(OpenApi.Description, "Newest first, revoked ones included (revoked_at set); never the secret."),
    HttpApiEndpoint.delete("revoke", "/:access_key_id", {
      params: { tid: IdParam, access_key_id: IdParam },
      success: AccessKeyResponse,
      error: tenantErrors
    }).annotate(OpenApi.Description, "Revokes at once: its signed requests are refused; tokens it obtained stay valid until they expire or are revoked.")
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(ConsoleAuth)
  .prefix("/v1/tenants/:tid/access_keys")
  .annotateMerge(OpenApi.annotations({ title: "Access keys", description: "AK/SK pairs of a tenant for the delegation service. Needs a console session of a tenant admin." }))
{}

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

export class DelegationsApi extends HttpApiGroup.make("delegations")
  .add(
    HttpApiEndpoint.get("list", "/", {
      query: PageQuery,
      success: Schema.Struct({ items: Schema.Array(DelegationResponse), next_cursor: Schema.NullOr(Schema.String) }),
      error: BadRequest
    }).annotate(
      OpenApi.Description,
      "The delegations you decided, and every delegation of the tenants you administer, newest first."
    ),
    HttpApiEndpoint.delete("revoke", "/:grant_id", {
      params: { grant_id: IdParam },
      success: DelegationResponse,
      error: [NotFound, Forbidden, Conflict]
    }).annotate(OpenApi.Description, "By the user who approved it or an admin of its tenant; the token is refused (401) from the next request on, on every node.")
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(ConsoleAuth)
  .prefix("/v1/delegations")
  .annotateMerge(OpenApi.annotations({ title: "Delegations", description: "Needs a console session." }))
{}
