/**
 * Live delivery of run events across processes: one LISTEN per process on the events channel,
 * fanned out to the streams that follow a run.
 *
 * - `wakeups`: a sliding queue of one that receives a value on every NOTIFY for the run (the agent
 *   uses it to notice messages and interventions).
 * - `follow`: for event streams. The run's followers in this process share one reader: on a NOTIFY
 *   it reads the new events from the database once (`eventsAfter` from the highest id it has) into
 *   a short buffer of recent events, then wakes every follower, which takes its events from that
 *   buffer. One query per wakeup instead of one per follower per event, and one copy of each event
 *   however many streams send it. A follower behind the buffer (replay, or a slow client) reads the
 *   database itself, so a slow consumer still holds no buffer of its own and never misses an event.
 *   Every node has its own listener, so events written by any node reach the streams on every node.
 */
import { PgClient } from "@effect/sql-pg"
import { Cause, Context, Effect, Layer, Queue, Schedule, type Scope } from "effect"
import { EVENTS_CHANNEL, type RunEvent } from "../store/runs.ts"
import { withMethodSpans } from "../observability/spans.ts"

/** Recent events kept per followed run; a follower further behind reads the database. */
const FEED_EVENTS = 512
/** Events read per query by the shared reader (it reads again while there are more). */
const FEED_BATCH = 200

export interface RunFeed {
  /**
   * Up to `limit` events with ids above `afterId` from the shared buffer, `[]` when the follower is
   * as far as the buffer (its `wake` is called when there is more), or undefined when the buffer
   * does not reach back to `afterId + 1` (the follower reads the database).
   */
  readonly after: (afterId: number, limit: number) => ReadonlyArray<RunEvent> | undefined
  /** Stops following; call it once, when the stream ends. */
  readonly unsubscribe: () => void
}

type ReadEvents = (runId: string, afterId: number, limit: number) => Effect.Effect<ReadonlyArray<RunEvent>>

interface Feed {
  readonly runId: string
  readonly raw: Set<Queue.Queue<void>>
  readonly followers: Set<() => void>
  read: ReadEvents | undefined
  /** Contiguous ascending events read by the shared reader; `lastId` is the id of the last one read. */
  events: Array<RunEvent>
  lastId: number | undefined
  fetching: boolean
  again: boolean
  /** The id of the newest event announced, for the first read of a fresh feed. */
  announced: number
}

export class RunEventBus extends Context.Service<RunEventBus, {
  /** A queue that receives a value whenever the run has a new event; released with the scope. */
  readonly wakeups: (runId: string) => Effect.Effect<Queue.Dequeue<void>, never, Scope.Scope>
  /**
   * Follows the run's events through the shared per-run reader (see above): `wake` is called (in
   * the listener's fiber; it must not block) whenever the shared buffer has new events or was reset.
   */
  readonly follow: (runId: string, read: ReadEvents, wake: () => void) => Effect.Effect<RunFeed>
}>()("wa/events/RunEventBus") {
  static readonly layer = Layer.effect(
    RunEventBus,
    Effect.gen(function*() {
      const pg = yield* PgClient.PgClient
      const scope = yield* Effect.scope
      const feeds = new Map<string, Feed>()

      const feedOf = (runId: string) => {
        let feed = feeds.get(runId)
        if (feed === undefined) {
          feed = { runId, raw: new Set(), followers: new Set(), read: undefined, events: [], lastId: undefined, fetching: false, again: false, announced: 0 }
          feeds.set(runId, feed)
        }
        return feed
      }
      const release = (feed: Feed) => {
        if (feed.raw.size === 0 && feed.followers.size === 0 && feeds.get(feed.runId) === feed) feeds.delete(feed.runId)
      }
      const wakeFollowers = (feed: Feed) => {
        for (const wake of [...feed.followers]) wake()
      }

      // The shared reader of one run: reads until it has everything announced, then wakes the
      // followers. A notification that comes while it reads makes it read once more.
      const refresh = (feed: Feed): Effect.Effect<void> =>
        Effect.gen(function*() {
          while (true) {
            feed.again = false
            const read = feed.read
            if (read === undefined || feed.followers.size === 0) {
              feed.fetching = false
              return
            }
            const from = feed.lastId ?? Math.max(0, feed.announced - 1)
            const events = yield* read(feed.runId, from, FEED_BATCH)
            if (feed.lastId !== undefined && feed.lastId !== from) {
              feed.again = true // reset and read by another meanwhile: read again from where it is
              continue
            }
            if (events.length > 0) {
              if (feed.lastId === undefined) feed.events = []
              feed.events.push(...events)
              if (feed.events.length > FEED_EVENTS) feed.events.splice(0, feed.events.length - FEED_EVENTS)
              feed.lastId = events[events.length - 1]!.id
              if (events.length === FEED_BATCH) feed.again = true
            }
            wakeFollowers(feed)
            // Checked and cleared with no yield in between, so a notification that comes in the
            // meantime either sees `fetching` false (and starts a read) or sets `again` (read again).
            if (!feed.again) {
              feed.fetching = false
              return
            }
          }
        }).pipe(
          Effect.catchCause((cause) =>
            Effect.sync(() => {
              // Forget the buffer: the followers read the database themselves until the next read works.
              feed.events = []
              feed.lastId = undefined
              wakeFollowers(feed)
            }).pipe(Effect.andThen(Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logWarning("reading new run events failed", cause)))
          ),
          Effect.ensuring(Effect.sync(() => {
            feed.fetching = false
          }))
        )

      const announce = (runId: string, id: number) =>
        Effect.gen(function*() {
          const feed = feeds.get(runId)
          if (feed === undefined) return
          for (const queue of feed.raw) Queue.offerUnsafe(queue, undefined)
          if (Number.isSafeInteger(id) && id > feed.announced) feed.announced = id
          if (feed.followers.size === 0 || feed.read === undefined) return
          if (feed.fetching) {
            feed.again = true
            return
          }
          feed.fetching = true
          yield* Effect.forkIn(refresh(feed), scope)
        })

      const listen = Effect.gen(function*() {
        const notifications = yield* pg.listen(EVENTS_CHANNEL)
        while (true) {
          const notification = yield* Queue.take(notifications)
          const colon = notification.payload.lastIndexOf(":")
          yield* announce(notification.payload.slice(0, colon), Number(notification.payload.slice(colon + 1)))
        }
      }).pipe(Effect.scoped)
      // The listener reconnects after a database hiccup; streams fall back to their heartbeat poll
      // meanwhile. The buffers are dropped on a reconnect, since notifications may have been missed.
      yield* listen.pipe(
        Effect.catchCause((cause) => Effect.logWarning("event listener lost its connection", cause)),
        Effect.andThen(Effect.sync(() => {
          for (const feed of feeds.values()) {
            if (feed.fetching) continue
            feed.events = []
            feed.lastId = undefined
          }
        })),
        Effect.repeat(Schedule.spaced("1 second")),
        Effect.forkScoped
      )

      return RunEventBus.of(withMethodSpans("RunEventBus", {
        wakeups: (runId) =>
          Effect.acquireRelease(
            Effect.gen(function*() {
              const queue = yield* Queue.sliding<void>(1)
              feedOf(runId).raw.add(queue)
              return queue
            }),
            (queue) =>
              Effect.sync(() => {
                const feed = feeds.get(runId)
                if (feed === undefined) return
                feed.raw.delete(queue)
                release(feed)
              })
          ),
        follow: (runId, read, wake) =>
          Effect.sync((): RunFeed => {
            const feed = feedOf(runId)
            feed.read ??= read
            feed.followers.add(wake)
            let subscribed = true
            const after = (afterId: number, limit: number): ReadonlyArray<RunEvent> | undefined => {
              const events = feed.events
              const lastId = feed.lastId
              if (lastId === undefined || events.length === 0) return undefined
              if (afterId >= lastId) return []
              const first = events[0]!.id
              if (afterId < first - 1) return undefined
              // Ids are consecutive per run; the search is only a safety net.
              let index = afterId + 1 - first
              if (events[index]?.id !== afterId + 1) index = events.findIndex((event) => event.id > afterId)
              return index === -1 ? [] : events.slice(index, index + limit)
            }
            const unsubscribe = () => {
              if (!subscribed) return
              subscribed = false
              feed.followers.delete(wake)
              if (feed.followers.size === 0) {
                feed.events = []
                feed.lastId = undefined
                feed.read = undefined
              }
              release(feed)
            }
            return { after, unsubscribe }
          })
      }))
    })
  )
}
