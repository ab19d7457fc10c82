/**
 * API key endpoints: `/v1/projects/{pid}/api_keys` (list, create, revoke). All of them need an
 * admin key that is not revoked (403 `forbidden` otherwise, `extra.required_scope: "admin"`).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, Forbidden, NotFound } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { OptionalNullable, MaxString, ProjectIdParam, secretField, Timestamp } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

export const ApiKeyScope = Schema.Literals(["admin", "run"]).annotate({
  description: "admin: manage API keys and read the webhook secret, plus everything run may; run: use the products (sessions, runs, research, searches)"
})

export const ApiKeyResponse = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  user_id: Schema.NullOr(Schema.String),
  prefix: Schema.String,
  name: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  disabled_at: Schema.optional(Schema.NullOr(Timestamp)),
  grace_until: Schema.optional(Schema.NullOr(Timestamp)),
  last_used_at: Schema.optional(Schema.NullOr(Timestamp)),
  scope: ApiKeyScope,
  created_by_key_id: Schema.NullOr(Schema.String).annotate({
    description: "the key that created this one over the API (audit only; revoking it does not revoke this key); null for the bootstrap and CLI keys"
  })
})

export const ApiKeyCreatedResponse = Schema.Struct({
  ...ApiKeyResponse.fields,
  secret_token: secretField(Schema.String, "the full key")
})

export const ApiKeyListResponse = Schema.Struct({
  items: Schema.Array(ApiKeyResponse),
  total: Schema.Int,
  next_cursor: Schema.NullOr(Schema.String)
})

export const CreateApiKeyRequest = Schema.Struct({
  name: OptionalNullable(MaxString(100)),
  scope: OptionalNullable(ApiKeyScope).annotate({ description: "default (absent or null): run" })
})

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
      params: { ...ProjectIdParam, key_id: Schema.String.check(Schema.isMaxCodePoints(64)) },
      success: ApiKeyResponse,
      error: [NotFound, Forbidden]
    }),
    HttpApiEndpoint.delete("revoke", "/:key_id", {
      params: { ...ProjectIdParam, key_id: Schema.String.check(Schema.isMaxCodePoints(64)) },
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
