/**
 * The console inbox on the wire: a notification, the list with its unread count and its query,
 * the update body (src/http/api/inbox.ts).
 */
import { Schema } from "effect"
import { InboxNotificationTypes } from "../delivery.ts"
import { PageQuery } from "../pagination.ts"
import { Timestamp } from "../schemas.ts"

export const InboxNotificationResponse = Schema.Struct({
  id: Schema.String.annotate({ description: "ntf_..." }),
  monitor_id: Schema.String,
  tick_id: Schema.String.annotate({ description: "the tick that fired it; one notification per tick and type" }),
  type: Schema.Literals(InboxNotificationTypes).annotate({
    description: "monitor.triggered (a monitor's notification, its data the monitor.triggered webhook body's) or " +
      "billing.quota_warning (the period's spend reached 80 % of the monthly budget cap; monitor_id is empty)"
  }),
  title: Schema.String,
  data: Schema.Unknown.annotate({ description: "the same data a callback_url or global_webhook delivery carries" }),
  read: Schema.Boolean,
  read_at: Schema.NullOr(Timestamp),
  created_at: Timestamp
})

export const InboxListResponse = Schema.Struct({
  items: Schema.Array(InboxNotificationResponse),
  next_cursor: Schema.NullOr(Schema.String),
  unread_count: Schema.Int.annotate({ description: "unread notifications in the whole inbox, whatever the filter" })
})

export const UpdateInboxNotificationRequest = Schema.Struct({
  read: Schema.Boolean
})

/** The query of the inbox: a page, unread or read only. */
export const InboxListQuery = {
  ...PageQuery,
  unread: Schema.optional(Schema.Literals(["true", "false"])).annotate({
    description: "true: unread only; false: read only; absent: all"
  })
}
