/**
 * Webhook deliveries on the wire: a delivery of a callback or a monitor's notification, their
 * list and its query (src/http/api/webhook-deliveries.ts).
 */
import { Schema } from "effect"
import { DeliveryChannel, DeliveryEventTypes, DeliveryStatus } from "../delivery.ts"
import { PageQuery } from "../pagination.ts"
import { MaxString, Timestamp } from "../schemas.ts"

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
  event_type: Schema.Literals(DeliveryEventTypes).annotate({
    description: "the message's type (the body's `type`): run.completed (a run's callback) or monitor.triggered (a monitor's notification)"
  }),
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

export const DeliveryListResponse = Schema.Struct({ items: Schema.Array(DeliveryResponse), next_cursor: Schema.NullOr(Schema.String) })

/** The query of the delivery list: of one run, one monitor, or by status. */
export const ListDeliveriesQuery = {
  ...PageQuery,
  run_id: Schema.optional(MaxString(64)),
  monitor_id: Schema.optional(MaxString(64)),
  status: Schema.optional(DeliveryStatus)
}
