/**
 * Deliveries of the project's callbacks and monitor notifications
 * (`/v1/projects/{pid}/webhook_deliveries`, next to the webhook secret): list them (of one run,
 * one monitor, or by status), read one, retry a failed one.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, NotFound } from "../../domain/api-errors.ts"
import { DeliveryListResponse, DeliveryResponse, ListDeliveriesQuery } from "../../domain/wire/webhook-deliveries.ts"
import { DeliveryIdParam, ProjectIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const DeliveryParams = { ...ProjectIdParam, delivery_id: DeliveryIdParam }

export class WebhookDeliveriesApi extends HttpApiGroup.make("webhook_deliveries")
  .add(
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: ListDeliveriesQuery,
      success: DeliveryListResponse,
      error: BadRequest
    }),
    HttpApiEndpoint.get("get", "/:delivery_id", { params: DeliveryParams, success: DeliveryResponse, error: NotFound }),
    HttpApiEndpoint.post("retry", "/:delivery_id/retry", {
      params: DeliveryParams,
      success: DeliveryResponse.annotate({ httpApiStatus: 202 }),
      error: [NotFound, Conflict]
    }).annotate(OpenApi.Description, "Makes a failed delivery due again (409 unless it failed and has an HTTP target); attempts go on counting.")
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/webhook_deliveries")
  .annotateMerge(OpenApi.annotations({
    title: "Webhook deliveries",
    description: "Every callback is a delivery: signed, retried with backoff (persisted, so retries survive restarts), listed here, and retryable once failed."
  }))
{}
