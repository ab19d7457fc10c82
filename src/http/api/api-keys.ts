/**
 * API key endpoints: `/v1/projects/{pid}/api_keys` (list, create, revoke). All of them need an
 * admin key that is not revoked (403 `forbidden` otherwise, `extra.required_scope: "admin"`).
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, Forbidden, NotFound } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { ApiKeyCreatedResponse, ApiKeyListResponse, ApiKeyResponse, CreateApiKeyRequest } from "../../domain/wire/api-keys.ts"
import { ApiKeyIdParam, ProjectIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const strict = { errors: "all", onExcessProperty: "error" } as const

export class ApiKeysApi extends HttpApiGroup.make("api_keys")
  .add(
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: PageQuery,
      success: ApiKeyListResponse,
      error: [BadRequest, Forbidden]
    }),
    HttpApiEndpoint.post("create", "/", {
      params: ProjectIdParam,
      payload: CreateApiKeyRequest,
      success: ApiKeyCreatedResponse.annotate({ httpApiStatus: 201 }),
      error: Forbidden
    }).annotate(HttpApi.PayloadParseOptions, strict),
    HttpApiEndpoint.get("get", "/:key_id", {
      params: { ...ProjectIdParam, key_id: ApiKeyIdParam },
      success: ApiKeyResponse,
      error: [NotFound, Forbidden]
    }),
    HttpApiEndpoint.delete("revoke", "/:key_id", {
      params: { ...ProjectIdParam, key_id: ApiKeyIdParam },
      success: ApiKeyResponse,
      error: [NotFound, Forbidden]
    })
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/api_keys")
  .annotateMerge(OpenApi.annotations({
    title: "API keys",
    description: "Keys are scoped to one project; the secret is returned once. Revoking starts a one-hour grace window. " +
      "Managing keys needs an admin key that is not revoked (403 forbidden otherwise); a run key, or a revoked key in its " +
      "grace window, may use the products only. New keys are run keys unless the request says scope admin; a key created " +
      "by another one is independent of it, so rotation is: create the new key, deploy it, revoke the old one."
  }))
{}
