/**
 * Project secrets (`/v1/projects/{pid}/secrets`): values a DoAnything run types into pages while
 * the model sees only placeholders (`{{secret:name}}`, `{{totp:name}}`). Values are write-only:
 * no response carries one. Admin keys only.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { MAX_SECRETS } from "../../domain/limits.ts"
import { BadRequest, Conflict, Forbidden, NotFound, ValidationError } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { CreateSecretRequest, SecretListResponse, SecretResponse, UpdateSecretRequest } from "../../domain/wire/secrets.ts"
import { ProjectIdParam, SecretIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const strict = { errors: "all", onExcessProperty: "error" } as const
const SecretParams = { ...ProjectIdParam, secret_id: SecretIdParam }

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
      success: SecretListResponse,
      error: [BadRequest, Forbidden]
    }).annotate(OpenApi.Description, "Admin keys only. Metadata, newest first; never a value."),
    HttpApiEndpoint.get("get", "/:secret_id", { params: SecretParams, success: SecretResponse, error: [NotFound, Forbidden] })
      .annotate(OpenApi.Description, "Admin keys only. Metadata; never the value."),
    HttpApiEndpoint.patch("update", "/:secret_id", {
      params: SecretParams,
      payload: UpdateSecretRequest,
      success: SecretResponse,
      error: [NotFound, Forbidden, ValidationError]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Admin keys only. Replaces the value (rotation), the origins and/or the description; name and kind stay. Runs that already started keep the value they took."
    ),
    HttpApiEndpoint.delete("delete", "/:secret_id", {
      params: SecretParams,
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
