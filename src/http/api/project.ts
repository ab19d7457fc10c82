/** Project-level settings: the secret that signs the project's callbacks (admin keys only). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Forbidden } from "../../domain/api-errors.ts"
import { WebhookSecretResponse } from "../../domain/wire/project.ts"
import { ProjectIdParam } from "./schemas.ts"
import { Authentication, RateLimit } from "./security.ts"

export class ProjectApi extends HttpApiGroup.make("project")
  .add(
    HttpApiEndpoint.get("webhookSecret", "/webhook_secret", {
      params: ProjectIdParam,
      success: WebhookSecretResponse,
      error: Forbidden
    }).annotate(OpenApi.Description, "Needs an admin key that is not revoked (403 forbidden otherwise).")
  )
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid")
  .annotateMerge(OpenApi.annotations({ title: "Project" }))
{}
