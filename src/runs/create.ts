/**
 * Creating a standalone run (DeepResearch, WebSearch: no session) and handing it to its entity,
 * once per create, for every such product. Admission is the store's, in the insert's transaction
 * (caps and the credit hold, src/store/runs.ts `createStandaloneRun`); `Budget.admit` answers 402
 * before anything is written. Under an Idempotency-Key the run is recorded as the create's in the
 * same transaction (src/store/keyed-create.ts), and the retry of a create whose first attempt
 * committed before its process died gets that run, dispatched now if it never was.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Budget } from "../billing/budget.ts"
import type { BudgetExceeded, InsufficientCredits } from "../domain/errors.ts"
import { type ProjectId, type Run, RunId } from "../domain/run.ts"
import { earlierCreate, messageSent, recordCreate } from "../store/keyed-create.ts"
import { RunStore } from "../store/runs.ts"

export const makeStandaloneCreate = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const store = yield* RunStore
  const budget = yield* Budget
  return <E>(options: {
    readonly projectId: ProjectId
    /** The entity type whose persisted Execute dispatches the run ("DeepResearch", "WebSearch"). */
    readonly entityType: string
    /** The run's insert, and what else belongs in its transaction (a derived run's first checkpoint). */
    readonly insert: Effect.Effect<Run, E>
    /** Sends the run's persisted Execute (fire-and-forget: it reaches the entity even if this request is gone). */
    readonly dispatch: (runId: RunId) => Effect.Effect<void>
  }): Effect.Effect<Run, E | BudgetExceeded | InsufficientCredits> =>
    Effect.gen(function*() {
      const earlier = yield* earlierCreate((id) =>
        store.getRun(RunId.make(id)).pipe(Effect.map((run) => run?.project_id === options.projectId ? run : undefined))
      )
      if (earlier !== undefined) {
        if (earlier.status === "pending" && !(yield* messageSent(sql, options.entityType, earlier.id, "Execute"))) yield* options.dispatch(earlier.id)
        return earlier
      }
      yield* budget.admit(options.projectId)
      const run = yield* sql.withTransaction(Effect.tap(options.insert, (run) => recordCreate(sql, run.id))).pipe(Effect.catchTag("SqlError", Effect.die))
      yield* options.dispatch(run.id)
      return run
    })
})
