/**
 * The console inbox on the wire: a notification, the list with its unread count and its query,
 * the update body (src/http/api/inbox.ts).
 */
import { Schema } from "effect"
import { InboxNotificationTypes } from "../delivery.ts"
import { PageQuery } from "../pagination.ts"
import { Timestamp } from "../schemas.ts"
import { MonitorTriggeredData } from "./webhook-payloads.ts"

/** What a `billing.quota_warning` notification says: the period, its cap and what was spent. */
export const QuotaWarningData = Schema.Struct({
  project_id: Schema.String,
  period_start: Timestamp,
  period_end: Timestamp,
  monthly_cap_usd: Schema.String.annotate({ description: "the monthly budget cap, a decimal USD string" }),
  spent_usd: Schema.String.annotate({ description: "the period's spend when the warning was written, a decimal USD string" }),
  warning_ratio: Schema.Number.annotate({ description: "the share of the cap at which the warning is written (0.8)" })
})
export type QuotaWarningData = typeof QuotaWarningData.Type

/** A notification's data by its type: the monitor.triggered webhook body's data, or the quota warning's. */
export const InboxNotificationData = Schema.Union([MonitorTriggeredData, QuotaWarningData])
export type InboxNotificationData = typeof InboxNotificationData.Type

export const InboxNotificationResponse = Schema.Struct({
  id: Schema.String.annotate({ description: "ntf_..." }),
  monitor_id: Schema.String,
  tick_id: Schema.String.annotate({ description: "the tick that fired it; one notification per tick and type" }),
  type: Schema.Literals(InboxNotificationTypes).annotate({
    description: "monitor.triggered (a monitor's notification, its data the monitor.triggered webhook body's) or " +
      "billing.quota_warning (the period's spend reached 80 % of the monthly budget cap; monitor_id is empty)"
  }),
  title: Schema.String,
  data: InboxNotificationData.annotate({
    description: "monitor.triggered: the same data a callback_url or global_webhook delivery carries; billing.quota_warning: the period, its cap and the spend"
  }),
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
