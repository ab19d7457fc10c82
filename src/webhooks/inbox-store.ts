/**
 * The console inbox in PostgreSQL (inbox_notifications): one notification per (tick, type), read
 * or unread. Rows are decoded through InboxNotificationRow; the rules are the Inbox service's
 * (src/webhooks/inbox.ts).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { type InboxNotificationType, InboxNotificationTypes } from "../domain/delivery.ts"
import { makeId } from "../domain/ids.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { ProjectId } from "../domain/run.ts"
import { MonitorId, TickRunId } from "../domain/monitor.ts"
import { NotificationId } from "../domain/id-schemas.ts"
import { InboxNotificationData } from "../domain/wire/inbox.ts"

export const InboxNotificationRow = Schema.Struct({
  id: NotificationId,
  project_id: ProjectId,
  monitor_id: MonitorId,
  tick_id: TickRunId,
  type: Schema.Literals(InboxNotificationTypes),
  title: Schema.String,
  data: InboxNotificationData,
  read_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date
})
export type InboxNotificationRow = typeof InboxNotificationRow.Type
const decodeRow = Schema.decodeUnknownSync(InboxNotificationRow)
const decodeCount = Schema.decodeUnknownSync(Schema.Struct({ n: Schema.Number }))

export interface InboxAddInput {
  readonly projectId: ProjectId
  readonly monitorId: MonitorId
  readonly tickId: TickRunId
  readonly type: InboxNotificationType
  readonly title: string
  readonly data: InboxNotificationData
}

const columns = "id, project_id, monitor_id, tick_id, type, title, data, read_at, created_at"

export class InboxStore extends Context.Service<InboxStore, {
  /** Inserts the notification; undefined when the tick already has one of that type. */
  readonly insert: (input: InboxAddInput) => Effect.Effect<InboxNotificationRow | undefined>
  readonly byTick: (tickId: TickRunId, type: string) => Effect.Effect<InboxNotificationRow | undefined>
  readonly list: (projectId: ProjectId, filter: {
    readonly unread?: boolean | undefined
    readonly limit: number
    readonly beforeId?: string | undefined
  }) => Effect.Effect<ReadonlyArray<InboxNotificationRow>>
  readonly unreadCount: (projectId: ProjectId) => Effect.Effect<number>
  readonly find: (projectId: ProjectId, id: NotificationId) => Effect.Effect<InboxNotificationRow | undefined>
  /** Marks it read (keeping the first read time) or unread; undefined when there is none. */
  readonly setRead: (projectId: ProjectId, id: NotificationId, read: boolean) => Effect.Effect<InboxNotificationRow | undefined>
}>()("wa/webhooks/InboxStore") {
  static readonly layer = Layer.effect(
    InboxStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const cols = sql.literal(columns)
      const first = (rows: ReadonlyArray<unknown>) => rows[0] === undefined ? undefined : decodeRow(rows[0])
      return InboxStore.of(withMethodSpans("InboxStore", {
        insert: (input) =>
          sql`
            INSERT INTO inbox_notifications (id, project_id, monitor_id, tick_id, type, title, data)
            VALUES (${makeId("ntf")}, ${input.projectId}, ${input.monitorId}, ${input.tickId}, ${input.type}, ${input.title},
              ${JSON.stringify(input.data ?? null)}::jsonb)
            ON CONFLICT (tick_id, type) DO NOTHING
            RETURNING ${cols}`.pipe(Effect.map(first), Effect.orDie),
        byTick: (tickId, type) =>
          sql`SELECT ${cols} FROM inbox_notifications WHERE tick_id = ${tickId} AND type = ${type}`.pipe(Effect.map(first), Effect.orDie),
        list: (projectId, filter) =>
          sql`
            SELECT ${cols} FROM inbox_notifications
            WHERE project_id = ${projectId}
              ${filter.unread === undefined ? sql`` : filter.unread ? sql`AND read_at IS NULL` : sql`AND read_at IS NOT NULL`}
              ${filter.beforeId === undefined ? sql`` : sql`AND id < ${filter.beforeId}`}
            ORDER BY id DESC LIMIT ${filter.limit}`.pipe(Effect.map((rows) => rows.map((row) => decodeRow(row))), Effect.orDie),
        unreadCount: (projectId) =>
          sql`SELECT count(*)::int AS n FROM inbox_notifications WHERE project_id = ${projectId} AND read_at IS NULL`.pipe(
            Effect.map((rows) => rows[0] === undefined ? 0 : decodeCount(rows[0]).n),
            Effect.orDie
          ),
        find: (projectId, id) =>
          sql`SELECT ${cols} FROM inbox_notifications WHERE project_id = ${projectId} AND id = ${id}`.pipe(Effect.map(first), Effect.orDie),
        setRead: (projectId, id, read) =>
          sql`
            UPDATE inbox_notifications
            SET read_at = CASE WHEN ${read} THEN COALESCE(read_at, now()) ELSE NULL END
            WHERE project_id = ${projectId} AND id = ${id}
            RETURNING ${cols}`.pipe(Effect.map(first), Effect.orDie)
      }))
    })
  )
}
