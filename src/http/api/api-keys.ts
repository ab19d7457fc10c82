/** API key endpoints: `/v1/projects/{pid}/api_keys` (list, create, revoke). */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, NotFound } from "../../domain/errors.ts"
import { PageQuery } from "../pagination.ts"
import { OptionalNullable, MaxString, ProjectIdParam, Timestamp } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

export const ApiKeyResponse = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  user_id: Schema.NullOr(Schema.String),
  prefix: Schema.String,
  name: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  disabled_at: Schema.optional(Schema.NullOr(Timestamp)),
  grace_until: Schema.optional(Schema.NullOr(Timestamp)),
  last_used_at: Schema.optional(Schema.NullOr(Timestamp))
})

export const ApiKeyCreatedResponse = Schema.Struct({
  ...ApiKeyResponse.fields,
  secret_token: Schema.String
})

export const ApiKeyListResponse = Schema.Struct({
  items: Schema.Array(ApiKeyResponse),
  total: Schema.Int,
  next_cursor: Schema.NullOr(Schema.String)
})

export const CreateApiKeyRequest = Schema.Struct({
  name: OptionalNullable(MaxString(100))
})

const strict = { errors: "all", onExcessProperty: "error" } as const

export class ApiKeysApi extends HttpApiGroup.make("api_keys")
  .add(
    HttpApiEndpoint.get("list", "/", { params: ProjectIdParam, query: PageQuery, success: ApiKeyListResponse, error: BadRequest }),
    HttpApiEndpoint.post("create", "/", {
      params: ProjectIdParam,
      payload: CreateApiKeyRequest,
      success: ApiKeyCreatedResponse.annotate({ httpApiStatus: 201 })
    }).annotate(HttpApi.PayloadParseOptions, strict),
    HttpApiEndpoint.get("get", "/:key_id", {
      params: { ...ProjectIdParam, key_id: Schema.String.check(Schema.isMaxLength(64)) },
      success: ApiKeyResponse,
      error: NotFound
    }),
    HttpApiEndpoint.delete("revoke", "/:key_id", {
      params: { ...ProjectIdParam, key_id: Schema.String.check(Schema.isMaxLength(64)) },
      success: ApiKeyResponse,
      error: NotFound
    })
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/api_keys")
  .annotateMerge(OpenApi.annotations({
    title: "API keys",
    description: "Keys are scoped to one project; the secret is returned once. Revoking starts a one-hour grace window."
  }))
{}
