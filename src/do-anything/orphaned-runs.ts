/**
 * Runs whose creating request died between its commit and the dispatch of their Execute message
 * (a crash, a SIGKILL) would stay pending, and their session busy, until the client retried with
 * its Idempotency-Key, which may never happen. Every node sweeps for them: at start, and then
 * every 30 s for runs pending more than 10 s (a run created on another node a moment ago is
 * being dispatched by that node). With the embedded database, which one process owns, the
 * start-up pass takes every such run. A run dispatched twice is handled once: the session
 * entity takes its messages one at a time and ignores an Execute for a run that has ended.
 */
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { RunId, SessionId } from "../domain/run.ts"
import { SessionEntity } from "../entities/session.ts"
import { undispatchedSessionRuns } from "../store/keyed-create.ts"

const SWEEP_EVERY = "30 seconds"
const PENDING_AT_LEAST_SECONDS = 10

export const OrphanedRunsLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  const sql = yield* SqlClient.SqlClient
  const clientFor = yield* SessionEntity.client
  const sweep = (olderThanSeconds: number) =>
    Effect.gen(function*() {
      const orphans = yield* undispatchedSessionRuns(sql, olderThanSeconds)
      yield* Effect.forEach(orphans, (run) =>
        clientFor(SessionId.make(run.session_id)).Execute({ runId: RunId.make(run.id) }, { discard: true }).pipe(
          Effect.tap(() => Effect.logInfo("undispatched run dispatched").pipe(Effect.annotateLogs({ run_id: run.id, session_id: run.session_id })))
        ), { discard: true })
    }).pipe(Effect.catchCause((cause) => Effect.logWarning("sweep for undispatched runs failed", cause)))
  const embedded = Option.isNone(config.databaseUrl)
  yield* Effect.forkScoped(
    sweep(embedded ? 0 : PENDING_AT_LEAST_SECONDS).pipe(
      Effect.andThen(sweep(PENDING_AT_LEAST_SECONDS).pipe(Effect.delay(SWEEP_EVERY), Effect.forever))
    )
  )
}))
