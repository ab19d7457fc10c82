/**
 * The project's console inbox (`/v1/projects/{pid}/inbox`), the `console_inbox` notification
 * channel: monitors' notifications, newest first, each read or unread.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, NotFound } from "../../domain/api-errors.ts"
import { InboxListQuery, InboxListResponse, InboxNotificationResponse, UpdateInboxNotificationRequest } from "../../domain/wire/inbox.ts"
import { NotificationIdParam, ProjectIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const strict = { errors: "all", onExcessProperty: "error" } as const
const NotificationParams = { ...ProjectIdParam, notification_id: NotificationIdParam }

export class InboxApi extends HttpApiGroup.make("inbox")
  .add(
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: InboxListQuery,
      success: InboxListResponse,
      error: BadRequest
    }),
    HttpApiEndpoint.get("get", "/:notification_id", { params: NotificationParams, success: InboxNotificationResponse, error: NotFound }),
    HttpApiEndpoint.patch("update", "/:notification_id", {
      params: NotificationParams,
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
