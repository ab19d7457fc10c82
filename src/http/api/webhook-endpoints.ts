/**
 * Project webhook endpoints (`/v1/projects/{pid}/webhooks`), the `global_webhook` notification
 * channel: a URL with its own signing secret, shown once at creation. Monitors name one by id.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { MAX_WEBHOOK_ENDPOINTS } from "../../domain/limits.ts"
import { BadRequest, Conflict, Forbidden, NotFound, ValidationError } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import {
  CreateWebhookEndpointRequest,
  WebhookEndpointCreatedResponse,
  WebhookEndpointListResponse,
  WebhookEndpointResponse
} from "../../domain/wire/webhook-endpoints.ts"
import { ProjectIdParam, WebhookEndpointIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const strict = { errors: "all", onExcessProperty: "error" } as const
const WebhookIdParam = { ...ProjectIdParam, webhook_id: WebhookEndpointIdParam }

export class WebhookEndpointsApi extends HttpApiGroup.make("webhook_endpoints")
  .add(
    HttpApiEndpoint.post("create", "/", {
      params: ProjectIdParam,
      payload: CreateWebhookEndpointRequest,
      success: WebhookEndpointCreatedResponse.annotate({ httpApiStatus: 201 }),
      error: [Forbidden, Conflict, ValidationError]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      `Admin keys only. The url must be public (unless the service allows private networks), as a callback_url; ` +
        `a project holds at most ${MAX_WEBHOOK_ENDPOINTS} endpoints (409 webhook_endpoint_limit_reached).`
    ),
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: PageQuery,
      success: WebhookEndpointListResponse,
      error: [BadRequest, Forbidden]
    }).annotate(OpenApi.Description, "Admin keys only (run keys and console members: 403)."),
    HttpApiEndpoint.get("get", "/:webhook_id", { params: WebhookIdParam, success: WebhookEndpointResponse, error: [NotFound, Forbidden] })
      .annotate(OpenApi.Description, "Admin keys only (run keys and console members: 403)."),
    HttpApiEndpoint.delete("delete", "/:webhook_id", {
      params: WebhookIdParam,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Forbidden]
    }).annotate(
      OpenApi.Description,
      "Admin keys only. Deliveries already recorded keep going to the URL; a monitor still naming the endpoint records its next notifications as failed deliveries."
    )
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/webhooks")
  .annotateMerge(OpenApi.annotations({
    title: "Webhook endpoints",
    description: "Project-level webhook endpoints: the global_webhook notification channel of monitors. Each has its own " +
      "Standard Webhooks secret (webhook-id, webhook-timestamp, webhook-signature: v1,<base64 HMAC-SHA256>), shown once."
  }))
{}
