/**
 * Live delivery of run events across processes: one LISTEN per process on the events channel,
 * fanned out to the streams that follow a run. A subscriber only gets a wake-up (a sliding queue of
 * one), then reads the events from the database, so a slow consumer holds no buffer and never
 * misses an event.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Queue, Schedule } from "effect"
import { EVENTS_CHANNEL } from "../store/runs.ts"

export class RunEventBus extends Context.Service<RunEventBus, {
  /** A queue that receives a value whenever the run has a new event; released with the scope. */
  readonly wakeups: (runId: string) => Effect.Effect<Queue.Dequeue<void>, never, import("effect").Scope.Scope>
}>()("wa/events/RunEventBus") {
  static readonly layer = Layer.effect(
    RunEventBus,
    Effect.gen(function*() {
      const pg = yield* PgClient.PgClient
      const subscribers = new Map<string, Set<Queue.Queue<void>>>()

      const listen = Effect.gen(function*() {
        const notifications = yield* pg.listen(EVENTS_CHANNEL)
        while (true) {
          const notification = yield* Queue.take(notifications)
          const runId = notification.payload.slice(0, notification.payload.lastIndexOf(":"))
          const queues = subscribers.get(runId)
          if (queues !== undefined) for (const queue of queues) Queue.offerUnsafe(queue, undefined)
        }
      }).pipe(Effect.scoped)
      // The listener reconnects after a database hiccup; streams fall back to their heartbeat poll meanwhile.
      yield* listen.pipe(
        Effect.catchCause((cause) => Effect.logWarning("event listener lost its connection", cause)),
        Effect.repeat(Schedule.spaced("1 second")),
        Effect.forkScoped
      )

      return RunEventBus.of({
        wakeups: (runId) =>
          Effect.acquireRelease(
            Effect.gen(function*() {
              const queue = yield* Queue.sliding<void>(1)
              let set = subscribers.get(runId)
              if (set === undefined) subscribers.set(runId, set = new Set())
              set.add(queue)
              return queue
            }),
            (queue) =>
              Effect.sync(() => {
                const set = subscribers.get(runId)
                set?.delete(queue)
                if (set?.size === 0) subscribers.delete(runId)
              })
          )
      })
    })
  )
}
