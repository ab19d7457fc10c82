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
import { Context } from "effect"
import type { SignedCaller } from "../../domain/delegation.ts"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, Forbidden, NotFound, TooManyRequests, Unauthorized, ValidationError } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import {
  AccessKeyCreatedResponse,
  AccessKeyListResponse,
  AccessKeyResponse,
  CompleteDelegationRequest,
  CreateAccessKeyRequest,
  CreateDelegationRequest,
  CreateDelegationResponse,
  DelegationGrantResponse,
  DelegationListResponse,
  DelegationResponse
} from "../../domain/wire/delegation.ts"
import { ConsoleAuth } from "./accounts-security.ts"
import { type CurrentCaller, Idempotency, RateLimit } from "./security.ts"
import { AccessKeyIdParam, DelegationGrantIdParam, TenantIdParam } from "./schemas.ts"

const strict = { errors: "all", onExcessProperty: "error" } as const

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

const tenantErrors = [NotFound, Forbidden, BadRequest]

export class AccessKeysApi extends HttpApiGroup.make("access_keys")
  .add(
    HttpApiEndpoint.post("create", "/", {
      params: { tid: TenantIdParam },
      payload: CreateAccessKeyRequest,
      success: AccessKeyCreatedResponse.annotate({ httpApiStatus: 201 }),
      error: [...tenantErrors, Conflict, ValidationError]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(OpenApi.Description, "Admins only. At most 10 live access keys per tenant (409 limit_exceeded)."),
    HttpApiEndpoint.get("list", "/", {
      params: { tid: TenantIdParam },
      query: PageQuery,
      success: AccessKeyListResponse,
      error: tenantErrors
    }).annotate(OpenApi.Description, "Newest first, revoked ones included (revoked_at set); never the secret."),
    HttpApiEndpoint.delete("revoke", "/:access_key_id", {
      params: { tid: TenantIdParam, access_key_id: AccessKeyIdParam },
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

export class DelegationsApi extends HttpApiGroup.make("delegations")
  .add(
    HttpApiEndpoint.get("list", "/", {
      query: PageQuery,
      success: DelegationListResponse,
      error: BadRequest
    }).annotate(
      OpenApi.Description,
      "The delegations you decided, and every delegation of the tenants you administer, newest first."
    ),
    HttpApiEndpoint.delete("revoke", "/:grant_id", {
      params: { grant_id: DelegationGrantIdParam },
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
