/**
 * Start-up recovery of the all-in-one mode. Browser contexts live in memory, so after a restart
 * no idle session still has its browser: those sessions are closed, or they would hold a slot of
 * their key's concurrent-session cap forever. Runs that were under way (of every product) are
 * handled by their persisted Execute message, which is delivered again.
 *
 * Only with the embedded database, which one process owns: with a shared database other nodes'
 * sessions are alive.
 */
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { SessionStore } from "../store/sessions.ts"
import { releaseEndedHolds } from "../billing/store/credit-holds.ts"

export const StartupRecoveryLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  const sql = yield* SqlClient.SqlClient
  const sessions = yield* SessionStore
  // Credit holds of runs and ticks that ended (or are gone) count for nothing; their rows go (any database).
  const released = yield* releaseEndedHolds(sql).pipe(Effect.orDie)
  if (released > 0) yield* Effect.logInfo("credit holds of ended runs released").pipe(Effect.annotateLogs({ holds: released }))
  if (Option.isSome(config.databaseUrl)) return
  const closed = yield* sessions.closeIdle()
  if (closed > 0) {
    yield* Effect.logInfo("recovered after restart").pipe(Effect.annotateLogs({ sessions_closed: closed }))
  }
}))
