/**
 * The project's console inbox: the `console_inbox` notification channel. A notification is
 * recorded once per (tick, type), however many times the tick runs; it is read or unread.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { makeId } from "../domain/ids.ts"

export interface InboxNotificationRow {
  readonly id: string
  readonly project_id: string
  readonly monitor_id: string
  readonly tick_id: string
  readonly type: string
  readonly title: string
  readonly data: unknown
  readonly read_at: Date | null
  readonly created_at: Date
}

export interface InboxAddInput {
  readonly projectId: string
  readonly monitorId: string
  readonly tickId: string
  readonly type: string
  readonly title: string
  readonly data: unknown
}

const columns = "id, project_id, monitor_id, tick_id, type, title, data, read_at, created_at"

export class Inbox extends Context.Service<Inbox, {
  /** Records the notification, or returns the one the tick already has for that type. */
  readonly add: (input: InboxAddInput) => Effect.Effect<InboxNotificationRow>
  /** Newest first; `unread` keeps only unread (true) or read (false) ones. */
  readonly list: (projectId: string, filter: {
    readonly unread?: boolean | undefined
    readonly limit: number
    readonly beforeId?: string | undefined
  }) => Effect.Effect<ReadonlyArray<InboxNotificationRow>>
  readonly unreadCount: (projectId: string) => Effect.Effect<number>
  readonly find: (projectId: string, id: string) => Effect.Effect<InboxNotificationRow | undefined>
  /** Marks it read (keeping the first read time) or unread; undefined when there is none. */
  readonly setRead: (projectId: string, id: string, read: boolean) => Effect.Effect<InboxNotificationRow | undefined>
}>()("wa/webhooks/Inbox") {
  static readonly layer = Layer.effect(
    Inbox,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const cols = sql.literal(columns)
      return Inbox.of({
        add: Effect.fn("Inbox.add")(function*(input: InboxAddInput) {
          const id = makeId("ntf")
          const inserted = yield* sql<InboxNotificationRow>`
            INSERT INTO inbox_notifications (id, project_id, monitor_id, tick_id, type, title, data)
            VALUES (${id}, ${input.projectId}, ${input.monitorId}, ${input.tickId}, ${input.type}, ${input.title},
              ${JSON.stringify(input.data ?? null)}::jsonb)
            ON CONFLICT (tick_id, type) DO NOTHING
            RETURNING ${cols}`
          if (inserted[0] !== undefined) return inserted[0]
          const existing = yield* sql<InboxNotificationRow>`
            SELECT ${cols} FROM inbox_notifications WHERE tick_id = ${input.tickId} AND type = ${input.type}`
          return existing[0]!
        }, Effect.orDie),
        list: (projectId, filter) =>
          sql<InboxNotificationRow>`
            SELECT ${cols} FROM inbox_notifications
            WHERE project_id = ${projectId}
              ${filter.unread === undefined ? sql`` : filter.unread ? sql`AND read_at IS NULL` : sql`AND read_at IS NOT NULL`}
              ${filter.beforeId === undefined ? sql`` : sql`AND id < ${filter.beforeId}`}
            ORDER BY id DESC LIMIT ${filter.limit}`.pipe(Effect.orDie),
        unreadCount: (projectId) =>
          sql<{ n: number }>`SELECT count(*)::int AS n FROM inbox_notifications WHERE project_id = ${projectId} AND read_at IS NULL`.pipe(
            Effect.map((rows) => rows[0]?.n ?? 0),
            Effect.orDie
          ),
        find: (projectId, id) =>
          sql<InboxNotificationRow>`SELECT ${cols} FROM inbox_notifications WHERE project_id = ${projectId} AND id = ${id}`.pipe(
            Effect.map((rows) => rows[0]),
            Effect.orDie
          ),
        setRead: (projectId, id, read) =>
          sql<InboxNotificationRow>`
            UPDATE inbox_notifications
            SET read_at = CASE WHEN ${read} THEN COALESCE(read_at, now()) ELSE NULL END
            WHERE project_id = ${projectId} AND id = ${id}
            RETURNING ${cols}`.pipe(
            Effect.map((rows) => rows[0]),
            Effect.orDie
          )
      })
    })
  )
}
