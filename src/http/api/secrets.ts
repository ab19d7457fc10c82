/**
 * Project secrets (`/v1/projects/{pid}/secrets`): values a DoAnything run types into pages while
 * the model sees only placeholders (`{{secret:name}}`, `{{totp:name}}`). Values are write-only:
 * no response carries one. Admin keys only.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { SecretName } from "../../domain/run.ts"
import { MAX_ORIGIN_LENGTH, MAX_ORIGINS, MAX_SECRETS, MAX_VALUE_LENGTH } from "../../domain/limits.ts"
import { BadRequest, Conflict, Forbidden, NotFound, ValidationError } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { MaxString, OptionalNullable, ProjectIdParam, SECRET_FIELD_ANNOTATION, Timestamp } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

export const SecretKind = Schema.Literals(["secret", "totp"]).annotate({
  description: "secret (default): a value typed as it is (a password, a user name, an API token); " +
    "totp: an otpauth://totp/ URI or a base32 seed, typed as its current one-time code"
})

/**
 * The value: write-only (`writeOnly` in the OpenAPI document) and marked as a secret field. The
 * length is checked by the service, so a refusal never repeats the value.
 */
const SecretValue = Schema.String.annotate({
  [SECRET_FIELD_ANNOTATION]: true,
  writeOnly: true,
  description: `write-only, 1 to ${MAX_VALUE_LENGTH} characters; never returned. For kind totp: an otpauth://totp/... URI or a base32 seed (SHA-1, 6 digits, 30 s)`
})

const Origins = Schema.Array(MaxString(MAX_ORIGIN_LENGTH)).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_ORIGINS)).annotate({
  description: "where the value may be typed: origins such as https://example.com or http://127.0.0.1:8080, or https://*.example.com " +
    "for any subdomain (not the domain itself). A placeholder typed into a field of any other origin is refused and the step fails."
})

export const SecretResponse = Schema.Struct({
  id: Schema.String.annotate({ description: "sec_..." }),
  name: Schema.String.annotate({ description: "what runs name in secrets and placeholders carry" }),
  kind: SecretKind,
  origins: Schema.Array(Schema.String),
  description: Schema.NullOr(Schema.String),
  totp: Schema.NullOr(Schema.Struct({ digits: Schema.Int, period: Schema.Int, algorithm: Schema.String })).annotate({
    description: "for kind totp: the shape of its codes"
  }),
  placeholder: Schema.String.annotate({ description: "what the model writes for it: {{secret:name}} or {{totp:name}}" }),
  created_at: Timestamp,
  updated_at: Timestamp,
  value_updated_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp).annotate({ description: "when a run naming it last started" })
})

export const CreateSecretRequest = Schema.Struct({
  name: SecretName,
  kind: Schema.optional(SecretKind),
  value: SecretValue,
  origins: Origins,
  description: OptionalNullable(MaxString(500).annotate({ description: "shown to the model with the placeholder (what the value is for); not secret" }))
})

export const UpdateSecretRequest = Schema.Struct({
  value: Schema.optional(SecretValue),
  origins: Schema.optional(Origins),
  description: OptionalNullable(MaxString(500))
})

const strict = { errors: "all", onExcessProperty: "error" } as const
const SecretIdParam = { ...ProjectIdParam, secret_id: MaxString(64) }

export class SecretsApi extends HttpApiGroup.make("secrets")
  .add(
    HttpApiEndpoint.post("create", "/", {
      params: ProjectIdParam,
      payload: CreateSecretRequest,
      success: SecretResponse.annotate({ httpApiStatus: 201 }),
      error: [Forbidden, Conflict, ValidationError]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      `Admin keys only. The value is sealed at rest (WA_SECRET_KEY) and never returned. Names are unique in a project ` +
        `(409 secret_name_taken); a project holds at most ${MAX_SECRETS} secrets (409 secret_limit_reached).`
    ),
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: PageQuery,
      success: Schema.Struct({ items: Schema.Array(SecretResponse), next_cursor: Schema.NullOr(Schema.String) }),
      error: [BadRequest, Forbidden]
    }).annotate(OpenApi.Description, "Admin keys only. Metadata, newest first; never a value."),
    HttpApiEndpoint.get("get", "/:secret_id", { params: SecretIdParam, success: SecretResponse, error: [NotFound, Forbidden] })
      .annotate(OpenApi.Description, "Admin keys only. Metadata; never the value."),
    HttpApiEndpoint.patch("update", "/:secret_id", {
      params: SecretIdParam,
      payload: UpdateSecretRequest,
      success: SecretResponse,
      error: [NotFound, Forbidden, ValidationError]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Admin keys only. Replaces the value (rotation), the origins and/or the description; name and kind stay. Runs that already started keep the value they took."
    ),
    HttpApiEndpoint.delete("delete", "/:secret_id", {
      params: SecretIdParam,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Forbidden]
    }).annotate(OpenApi.Description, "Admin keys only. A run naming it that has not started fails with secret_unavailable.")
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/secrets")
  .annotateMerge(OpenApi.annotations({
    title: "Secrets",
    description: "Project secrets a DoAnything run may type (run field secrets: [name, ...]) without the model seeing them: " +
      "the model writes {{secret:name}} or {{totp:name}} and the browser tools substitute the value in the page, on the secret's origins only. " +
      "Values never appear in model requests, events, logs, recordings (the field is masked) or outputs."
  }))
{}
