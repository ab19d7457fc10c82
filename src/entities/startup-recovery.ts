/**
 * Start-up recovery of the all-in-one mode. Browser contexts live in memory, so after a restart
 * no idle session still has its browser: those sessions are closed, or they would hold a slot of
 * their key's concurrent-session cap forever. Runs that were under way are handled by their
 * persisted Execute message, which is delivered again and fails them with `runner_restarted`.
 *
 * Only with the embedded database, which one process owns: with a shared database other nodes'
 * sessions are alive.
 */
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { RunStore } from "../store/runs.ts"

export const StartupRecoveryLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  if (Option.isSome(config.databaseUrl)) return
  const sql = yield* SqlClient.SqlClient
  const closed = yield* sql`
    UPDATE sessions SET status = 'closed', closed_at = now(), updated_at = now()
    WHERE status = 'idle'
    RETURNING id`.pipe(Effect.orDie)
  // Web searches run in the process that accepted them; one that was under way is lost. It ends
  // through the store, so its event stream gets the terminal event too.
  const store = yield* RunStore
  const failed = yield* sql<{ id: string }>`SELECT id FROM runs WHERE kind = 'web_search' AND status IN ('pending', 'running')`.pipe(Effect.orDie)
  for (const { id } of failed) {
    yield* store.transition(id, "failed", {
      terminalReason: "failed",
      errorCode: "runner_restarted",
      errorDetail: "the service restarted while this search ran; start it again"
    }).pipe(Effect.ignore)
  }
  if (closed.length > 0 || failed.length > 0) {
    yield* Effect.logInfo("recovered after restart").pipe(Effect.annotateLogs({ sessions_closed: closed.length, searches_failed: failed.length }))
  }
}))
