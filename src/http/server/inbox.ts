/** Handlers of /v1/projects/{pid}/inbox. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Inbox, type InboxNotificationRow } from "../../webhooks/inbox.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { notFound } from "../errors.ts"
import { DEFAULT_LIMIT, decodeCursor, toPage } from "../pagination.ts"
import { iso } from "../views/timestamps.ts"

export const inboxNotificationView = (row: InboxNotificationRow) => ({
  id: row.id,
  monitor_id: row.monitor_id,
  tick_id: row.tick_id,
  type: row.type,
  title: row.title,
  data: row.data,
  read: row.read_at !== null,
  read_at: iso(row.read_at),
  created_at: row.created_at.toISOString()
})

const missing = (id: string) => notFound("notification_not_found", `no inbox notification ${id} in this project`)

export const InboxHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "inbox",
  Effect.fn(function*(handlers) {
    const inbox = yield* Inbox
    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const limit = query.limit ?? DEFAULT_LIMIT
          const beforeId = yield* decodeCursor(query.cursor)
          const unread = query.unread === undefined ? undefined : query.unread === "true"
          const [rows, unreadCount] = yield* Effect.all([
            inbox.list(projectId, { unread, limit: limit + 1, beforeId }),
            inbox.unreadCount(projectId)
          ], { concurrency: 2 })
          const page = toPage(rows, limit)
          return { items: page.items.map(inboxNotificationView), next_cursor: page.next_cursor, unread_count: unreadCount }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const row = yield* inbox.find(projectId, params.notification_id)
          if (row === undefined) return yield* missing(params.notification_id)
          return inboxNotificationView(row)
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const row = yield* inbox.setRead(projectId, params.notification_id, payload.read)
          if (row === undefined) return yield* missing(params.notification_id)
          return inboxNotificationView(row)
        }))
  })
)
