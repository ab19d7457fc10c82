/**
 * Waiting in the in-process tier without sleeps: on the run's NOTIFY wake-ups (RunEventBus, the
 * same channel the SSE streams use) and the stored event log (RunStore.eventsAfter). Subscribing
 * comes before the first read, so an event written in between still wakes the wait. No timeout of
 * its own: the test's timeout bounds it, and under TestClock an Effect timeout would never fire.
 */
import { type Duration, Effect, Queue } from "effect"
import { TestClock } from "effect/testing"
import type { RunStatus } from "../../src/domain/run-state.ts"
import type { Run, RunId } from "../../src/domain/run.ts"
import { RunEventBus } from "../../src/events/run-event-bus.ts"
import { type RunEvent, RunStore } from "../../src/store/runs.ts"

export const TERMINAL: ReadonlyArray<RunStatus> = ["done", "failed", "canceled"]

/** Waits until `probe` returns a value, re-reading after every new event of the run. */
const untilEvent = <A>(runId: RunId, probe: Effect.Effect<A | undefined, never, RunStore>) =>
  Effect.scoped(Effect.gen(function*() {
    const bus = yield* RunEventBus
    const wakeups = yield* bus.wakeups(runId)
    while (true) {
      const found = yield* probe
      if (found !== undefined) return found
      yield* Queue.take(wakeups)
    }
  }))

/** The run, once its status is one of `statuses`. */
export const awaitStatus = (runId: RunId, statuses: ReadonlyArray<RunStatus>) =>
  untilEvent<Run>(runId, RunStore.use((store) => store.getRun(runId)).pipe(
    Effect.map((run) => run !== undefined && statuses.includes(run.status) ? run : undefined)
  ))

/** The run's events so far. */
export const eventsOf = (runId: RunId) => RunStore.use((store) => store.eventsAfter(runId, 0, 10_000))

/** The first event of `type` (matching `where`), once the run has written it. */
export const awaitEvent = (runId: RunId, type: string, where: (data: Record<string, unknown>) => boolean = () => true) =>
  untilEvent<RunEvent>(runId, eventsOf(runId).pipe(Effect.map((events) => events.find((e) => e.type === type && where(e.data)))))

/** A promise the scripted model can block on until the test opens it, and one telling it got there. */
export const gate = () => {
  let open: () => void = () => {}
  let arrived: () => void = () => {}
  const opened = new Promise<void>((resolve) => (open = resolve))
  const reached = new Promise<void>((resolve) => (arrived = resolve))
  return {
    /** Called by the script: marks the gate reached and waits for it to open. */
    pass: () => {
      arrived()
      return opened
    },
    /** The script has reached the gate. */
    reached: Effect.promise(() => reached),
    open: Effect.sync(() => open())
  }
}

/**
 * For state no event announces (a session closed by its entity's finalizer). Under TestClock:
 * checks, advancing virtual time by `step` between checks, up to `virtualSteps` steps (so the
 * state is shown to come within that much virtual time); then, without advancing it further,
 * goes on checking while the work that virtual time set off finishes its real I/O (closing a
 * browser context, a write). Each check is a database read, which paces the loop.
 */
export const awaitState = <A, R>(
  what: string,
  check: Effect.Effect<A | undefined, never, R>,
  options: { readonly step: Duration.Input; readonly virtualSteps: number; readonly settleChecks?: number }
) =>
  Effect.gen(function*() {
    const settle = options.settleChecks ?? 5_000
    for (let i = 0; i < options.virtualSteps + settle; i++) {
      const found = yield* check
      if (found !== undefined) return found
      yield* i < options.virtualSteps ? TestClock.adjust(options.step) : Effect.yieldNow
    }
    return yield* Effect.die(new Error(`${what}: not reached within ${options.virtualSteps} steps of ${String(options.step)} and ${settle} further checks`))
  })
