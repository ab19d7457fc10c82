/**
 * Deliveries of the project's callbacks and monitor notifications
 * (`/v1/projects/{pid}/webhook_deliveries`, next to the webhook secret): list them (of one run,
 * one monitor, or by status), read one, retry a failed one.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { DeliveryChannel, DeliveryStatus } from "../../domain/delivery.ts"
import { BadRequest, Conflict, NotFound } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { MaxString, ProjectIdParam, Timestamp } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

export const DeliveryResponse = Schema.Struct({
  id: Schema.String,
  run_id: Schema.NullOr(Schema.String).annotate({ description: "the run, or for a monitor's notification the tick, the delivery is about" }),
  monitor_id: Schema.NullOr(Schema.String).annotate({ description: "the monitor whose notification this is; null for a run's callback" }),
  channel: DeliveryChannel.annotate({
    description: "callback_url (the run's or monitor's URL, signed with the project's webhook secret or the monitor's notify_secret), " +
      "global_webhook (a project webhook endpoint, signed with its secret), console_inbox (recorded in the project inbox, not sent over HTTP), " +
      "schedule (triggers a DoAnything schedule of the project; url is its firings path)"
  }),
  url: Schema.String.annotate({
    description: "the target; for console_inbox the notification's API path (/v1/projects/{pid}/inbox/{id}), " +
      "for a global_webhook whose endpoint did not exist the endpoint's API path"
  }),
  event_type: Schema.String,
  status: DeliveryStatus,
  attempts: Schema.Int,
  last_status_code: Schema.NullOr(Schema.Int),
  last_error: Schema.NullOr(Schema.String),
  payload: Schema.Unknown.annotate({ description: "the signed JSON body: {type, timestamp, data}" }),
  created_at: Timestamp,
  updated_at: Timestamp,
  delivered_at: Schema.NullOr(Timestamp),
  next_attempt_at: Schema.NullOr(Timestamp).annotate({ description: "when the next attempt is due (pending or retrying)" })
})

const DeliveryIdParam = { ...ProjectIdParam, delivery_id: MaxString(64) }

export class WebhookDeliveriesApi extends HttpApiGroup.make("webhook_deliveries")
  .add(
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: {
        ...PageQuery,
        run_id: Schema.optional(MaxString(64)),
        monitor_id: Schema.optional(MaxString(64)),
        status: Schema.optional(DeliveryStatus)
      },
      success: Schema.Struct({ items: Schema.Array(DeliveryResponse), next_cursor: Schema.NullOr(Schema.String) }),
      error: BadRequest
    }),
    HttpApiEndpoint.get("get", "/:delivery_id", { params: DeliveryIdParam, success: DeliveryResponse, error: NotFound }),
    HttpApiEndpoint.post("retry", "/:delivery_id/retry", {
      params: DeliveryIdParam,
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
