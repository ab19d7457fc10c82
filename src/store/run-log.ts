/**
 * A run's event log and row locks: the primitives every transaction on a run is built of, shared
 * by the run store (src/store/runs.ts), the session store (src/store/sessions.ts) and the run
 * charges (src/billing/store/run-charges.ts). A run's events are numbered one by one per run while the run
 * row is locked, and each is announced with NOTIFY at commit so SSE streams on any node wake up.
 *
 * `run_events` is the one event log: besides runs' logs it holds each Track monitor's, under the
 * monitor's id (its ticks are runs; src/track/monitor-store.ts numbers those events from the
 * monitor row). `eventsAfter` reads either.
 */
import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { EventData, RunEventType } from "../domain/events.ts"
import { ProjectId, RunId, RunStatus, SessionId } from "../domain/run.ts"
import { ExecutionToken } from "../domain/id-schemas.ts"
import { decodeRows } from "../domain/rows.ts"

export const EVENTS_CHANNEL = "wa_run_events"

/**
 * The execution writing to a run was superseded by another (its runner was presumed dead and the
 * run resumed elsewhere). Raised as a defect: the stale execution must stop, not recover.
 */
export class SupersededExecution extends Error {
  override readonly name = "SupersededExecution"
  readonly runId: RunId
  constructor(runId: RunId) {
    super(`run ${runId} is executed elsewhere now`)
    this.runId = runId
  }
}

/** Columns of a run row the store itself looks at while it holds the row's lock. */
const LockedRun = Schema.Struct({
  id: RunId,
  project_id: ProjectId,
  session_id: Schema.NullOr(SessionId),
  status: RunStatus,
  phase: Schema.NullOr(Schema.String),
  executor: Schema.NullOr(ExecutionToken)
})
export type LockedRun = typeof LockedRun.Type
const decodeLocked = Schema.decodeUnknownEffect(Schema.Array(LockedRun))

export interface RunEvent {
  readonly id: number
  readonly type: string
  readonly data: Record<string, unknown>
  readonly created_at: Date
}

/** An event's id as written (`id::text`: the column is a bigint). */
const WrittenEvent = Schema.Struct({ id: Schema.String })
/** An event as read: its id as text (a bigint), its jsonb payload and its time. */
const StoredEvent = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  data: Schema.Record(Schema.String, Schema.Unknown),
  created_at: Schema.Date
})

/**
 * Locks the session of a run (if it has one) before the run itself. Every transaction that
 * locks both takes them in this order, session then run (addRun, a schedule's firing, a run's
 * end, its charges), so adding a run while the previous one ends cannot deadlock.
 */
export const lockSessionOfRun = (sql: SqlClient.SqlClient, runId: RunId) =>
  sql`SELECT id FROM sessions WHERE id = (SELECT session_id FROM runs WHERE id = ${runId}) FOR UPDATE`

/** Locks the run's row; with an `executor`, an execution that no longer owns the run dies (SupersededExecution). */
export const lockRun = (sql: SqlClient.SqlClient, runId: RunId, executor?: ExecutionToken) =>
  sql`SELECT id, project_id, session_id, status, phase, executor FROM runs WHERE id = ${runId} FOR UPDATE`.pipe(
    // A row that does not decode is a defect: the store wrote it.
    Effect.flatMap((raw) => Effect.orDie(decodeLocked(raw))),
    Effect.flatMap((rows) => {
      const row = rows[0]
      return executor !== undefined && row !== undefined && row.executor !== executor
        ? Effect.die(new SupersededExecution(runId))
        : Effect.succeed(row)
    })
  )

/** Appends an event to the run's log. Must run inside a transaction that holds the run row lock. */
export const insertEvent = <T extends RunEventType>(sql: SqlClient.SqlClient, runId: RunId, type: T, data: EventData<T>) =>
  Effect.gen(function*() {
    const rows = yield* decodeRows(WrittenEvent)(sql`
      INSERT INTO run_events (run_id, id, type, data)
      SELECT ${runId}, coalesce(max(id), 0) + 1, ${type}, ${JSON.stringify(data)}::jsonb
      FROM run_events WHERE run_id = ${runId}
      RETURNING id::text`)
    const id = Number(rows[0]!.id)
    // Delivered at commit, so listeners never see an event before it is readable.
    yield* sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${`${runId}:${id}`})`
    return id
  })

/** A run's run.cost_update event, written by billing's charges in the caller's transaction (src/billing/store/run-charges.ts). */
export const recordCostUpdate = (sql: SqlClient.SqlClient, runId: RunId, data: EventData<"run.cost_update">) =>
  insertEvent(sql, runId, "run.cost_update", data)

/** The events of a log (a run's, or a monitor's) after `afterId`, oldest first. */
export const eventsAfter = (sql: SqlClient.SqlClient, logId: string, afterId: number, limit: number) =>
  // Order by the bigint column: the `id::text` output alias would sort "10" before "7".
  decodeRows(StoredEvent)(sql`
    SELECT id::text, type, data, created_at FROM run_events
    WHERE run_id = ${logId} AND id > ${afterId} ORDER BY run_events.id LIMIT ${limit}`).pipe(
    Effect.map((rows): ReadonlyArray<RunEvent> => rows.map((row) => ({ ...row, id: Number(row.id) })))
  )
