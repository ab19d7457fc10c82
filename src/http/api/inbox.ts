/**
 * The project's console inbox (`/v1/projects/{pid}/inbox`), the `console_inbox` notification
 * channel: monitors' notifications, newest first, each read or unread.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, NotFound } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { MaxString, ProjectIdParam, Timestamp } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

export const InboxNotificationResponse = Schema.Struct({
  id: Schema.String.annotate({ description: "ntf_..." }),
  monitor_id: Schema.String,
  tick_id: Schema.String.annotate({ description: "the tick that fired it; one notification per tick and type" }),
  type: Schema.String.annotate({ description: "the event type, e.g. monitor.change_detected" }),
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

const strict = { errors: "all", onExcessProperty: "error" } as const
const NotificationIdParam = { ...ProjectIdParam, notification_id: MaxString(64) }

export class InboxApi extends HttpApiGroup.make("inbox")
  .add(
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: {
        ...PageQuery,
        unread: Schema.optional(Schema.Literals(["true", "false"])).annotate({
          description: "true: unread only; false: read only; absent: all"
        })
      },
      success: InboxListResponse,
      error: BadRequest
    }),
    HttpApiEndpoint.get("get", "/:notification_id", { params: NotificationIdParam, success: InboxNotificationResponse, error: NotFound }),
    HttpApiEndpoint.patch("update", "/:notification_id", {
      params: NotificationIdParam,
      payload: UpdateInboxNotificationRequest,
      success: InboxNotificationResponse,
      error: NotFound
    }).annotate(HttpApi.PayloadParseOptions, strict)
      .annotate(OpenApi.Description, "Marks the notification read ({read: true}; the first read time is kept) or unread ({read: false}).")
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/inbox")
  .annotateMerge(OpenApi.annotations({
    title: "Inbox",
    description: "Notifications of monitors whose notify_channel is console_inbox, newest first, with the unread count."
  }))
{}
