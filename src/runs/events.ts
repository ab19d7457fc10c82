/**
 * RunEvents: a run's event log as its event streams read it (the SSE of every product's runs, and
 * of Track's monitors, whose events share the run events' channel keyed by the monitor id). It
 * joins the run store's log (events after an id, whether the run has ended) and the event bus's
 * shared per-run reader (`follow`, see src/events/run-event-bus.ts), so the HTTP streams reach
 * neither the store nor the bus themselves.
 */
import { Context, Effect, Layer } from "effect"
import { isTerminal } from "../domain/run-state.ts"
import type { RunId } from "../domain/run.ts"
import { RunEventBus, type RunFeed } from "../events/run-event-bus.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { type RunEvent, RunStore } from "../store/runs.ts"

export type { RunEvent, RunFeed }

/** Reads up to `limit` events of a stream's key with ids above `afterId`. */
export type ReadEvents = (key: string, afterId: number, limit: number) => Effect.Effect<ReadonlyArray<RunEvent>>

export class RunEvents extends Context.Service<RunEvents, {
  /** Up to `limit` of the run's events with ids above `afterId`, oldest first. */
  readonly after: (runId: RunId, afterId: number, limit: number) => Effect.Effect<ReadonlyArray<RunEvent>>
  /** Whether the run has ended (or is gone): no event will follow the ones stored. */
  readonly ended: (runId: RunId) => Effect.Effect<boolean>
  /**
   * Follows a key's events (a run's, or a monitor's) through the shared reader of this process:
   * `wake` is called (it must not block) whenever the shared buffer has new events or was reset.
   */
  readonly follow: (key: string, read: ReadEvents, wake: () => void) => Effect.Effect<RunFeed>
}>()("wa/runs/RunEvents") {
  static readonly layer = Layer.effect(
    RunEvents,
    Effect.gen(function*() {
      const store = yield* RunStore
      const bus = yield* RunEventBus
      return RunEvents.of(withMethodSpans("RunEvents", {
        after: (runId: RunId, afterId: number, limit: number) => store.eventsAfter(runId, afterId, limit),
        ended: (runId: RunId) => Effect.map(store.getRun(runId), (row) => row === undefined || isTerminal(row.status)),
        follow: (key: string, read: ReadEvents, wake: () => void) => bus.follow(key, read, wake)
      }))
    })
  )
}
