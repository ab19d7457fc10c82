/**
 * Canceling a run, the kernel's, the same way for every product: the state change (with its
 * events), then the entity executing it is told to stop (`interrupt`, the product's: its entity's
 * `Interrupt` message), then the run's end is announced (callback). The entity's own end of a run
 * announces it too; the outbox records one delivery per run and event.
 */
import { Effect } from "effect"
import { RunEnded } from "../domain/errors.ts"
import { cancellable } from "../domain/run-state.ts"
import type { Run } from "../domain/run.ts"
import type { RunStore } from "../store/runs.ts"
import type { RunNotifier } from "../webhooks/run-notifier.ts"

export const cancelRun = (
  store: RunStore["Service"],
  notifier: RunNotifier["Service"],
  interrupt: (run: Run) => Effect.Effect<void, unknown>
) =>
  Effect.fn("cancelRun")(function*(run: Run, reason: string | null) {
    if (!cancellable.includes(run.status)) return yield* new RunEnded({ runId: run.id, status: run.status, operation: "cancel" })
    const canceled = yield* store.transition(run.id, "canceled", { terminalReason: "canceled", data: { reason } })
    yield* interrupt(run).pipe(Effect.ignore)
    yield* notifier.terminal(run.id)
    return canceled
  })
