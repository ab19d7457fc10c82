/**
 * The project's console inbox: the `console_inbox` notification channel. A notification is
 * recorded once per (tick, type), however many times the tick runs; it is read or unread.
 */
import { Context, Effect, Layer } from "effect"
import { type InboxAddInput, type InboxNotificationRow, InboxStore } from "./inbox-store.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { ProjectId } from "../domain/run.ts"
import type { NotificationId } from "../domain/id-schemas.ts"

export type { InboxAddInput, InboxNotificationRow }

export class Inbox extends Context.Service<Inbox, {
  /** Records the notification, or returns the one the tick already has for that type. */
  readonly add: (input: InboxAddInput) => Effect.Effect<InboxNotificationRow>
  /** Newest first; `unread` keeps only unread (true) or read (false) ones. */
  readonly list: (projectId: ProjectId, filter: {
    readonly unread?: boolean | undefined
    readonly limit: number
    readonly beforeId?: string | undefined
  }) => Effect.Effect<ReadonlyArray<InboxNotificationRow>>
  readonly unreadCount: (projectId: ProjectId) => Effect.Effect<number>
  readonly find: (projectId: ProjectId, id: NotificationId) => Effect.Effect<InboxNotificationRow | undefined>
  /** Marks it read (keeping the first read time) or unread; undefined when there is none. */
  readonly setRead: (projectId: ProjectId, id: NotificationId, read: boolean) => Effect.Effect<InboxNotificationRow | undefined>
}>()("wa/webhooks/Inbox") {
  static readonly layer = Layer.effect(
    Inbox,
    Effect.gen(function*() {
      const store = yield* InboxStore
      return Inbox.of({
        ...withMethodSpans("Inbox", {
          list: store.list,
          unreadCount: store.unreadCount,
          find: store.find,
          setRead: store.setRead
        }),
        add: Effect.fn("Inbox.add")(function*(input: InboxAddInput) {
          const inserted = yield* store.insert(input)
          if (inserted !== undefined) return inserted
          return (yield* store.byTick(input.tickId, input.type))!
        })
      })
    })
  ).pipe(Layer.provide(InboxStore.layer))
}
