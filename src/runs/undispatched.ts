/**
 * Runs whose creating request died between its commit and the dispatch of their Execute message
 * (a crash, a SIGKILL) would stay pending (a DoAnything session busy with it) until the client
 * retried with its Idempotency-Key, which may never happen. Every node sweeps for them, for every
 * kind of run: at start, and then every 30 s for runs pending more than 10 s (a run created on
 * another node a moment ago is being dispatched by that node). With the embedded database, which
 * one process owns, the start-up pass takes every such run. A run dispatched twice is handled
 * once: its entity takes messages one at a time and ignores an Execute for a run that has ended.
 */
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { ResearchEntity } from "../entities/research.ts"
import { SessionEntity } from "../entities/session.ts"
import { WebSearchEntity } from "../entities/web-search.ts"
import { type UndispatchedRun, undispatchedRuns } from "../store/keyed-create.ts"

const SWEEP_EVERY = "30 seconds"
const PENDING_AT_LEAST_SECONDS = 10

export const UndispatchedRunsLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  const sql = yield* SqlClient.SqlClient
  const sessions = yield* SessionEntity.client
  const research = yield* ResearchEntity.client
  const searches = yield* WebSearchEntity.client
  const dispatch = (run: UndispatchedRun) => {
    const runId = run.id
    const execute = run.kind === "do_anything" && run.session_id !== null
      ? sessions(run.session_id).Execute({ runId }, { discard: true })
      : run.kind === "deep_research"
      ? research(run.id).Execute({ runId }, { discard: true })
      : run.kind === "web_search"
      ? searches(run.id).Execute({ runId }, { discard: true })
      : Effect.void
    return execute.pipe(
      Effect.tap(() => Effect.logInfo("undispatched run dispatched").pipe(Effect.annotateLogs({ run_id: run.id, kind: run.kind })))
    )
  }
  const sweep = (olderThanSeconds: number) =>
    undispatchedRuns(sql, olderThanSeconds).pipe(
      Effect.flatMap((runs) => Effect.forEach(runs, dispatch, { discard: true })),
      Effect.catchCause((cause) => Effect.logWarning("sweep for undispatched runs failed", cause))
    )
  const embedded = Option.isNone(config.databaseUrl)
  yield* Effect.forkScoped(
    sweep(embedded ? 0 : PENDING_AT_LEAST_SECONDS).pipe(
      Effect.andThen(sweep(PENDING_AT_LEAST_SECONDS).pipe(Effect.delay(SWEEP_EVERY), Effect.forever))
    )
  )
}))
