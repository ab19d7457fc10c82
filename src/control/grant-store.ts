/**
 * Control grants in PostgreSQL (control_grants), with the run-row reads and writes a grant's
 * state change makes in the same transaction (the run's lock, its open input requests, the
 * take-over wake-up). Rows are decoded through Schema; the state machine is the TakeControl
 * service's (src/control/take-control.ts), which runs these inside `transaction`.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { RunStatuses, type RunStatus } from "../domain/run-state.ts"
import { RunId, SessionId } from "../domain/run.ts"
import { ControlGrantId } from "../domain/id-schemas.ts"
import { EVENTS_CHANNEL } from "../store/runs.ts"
import { withMethodSpans } from "../observability/spans.ts"

export const GrantStatus = Schema.Literals(["pending", "active", "released", "expired", "superseded", "ended"])
export type GrantStatus = typeof GrantStatus.Type

export interface Grant {
  readonly id: ControlGrantId
  readonly runId: RunId
  readonly sessionId: SessionId
  readonly reason: string | null
  readonly status: GrantStatus
  readonly expiresAt: Date
  readonly connectedAt: Date | null
  /** The connect that holds control now; null before anyone connected. */
  readonly controller: string | null
}

const GrantRow = Schema.Struct({
  id: ControlGrantId,
  run_id: RunId,
  session_id: SessionId,
  reason: Schema.NullOr(Schema.String),
  status: GrantStatus,
  expires_at: Schema.Date,
  connected_at: Schema.NullOr(Schema.Date),
  controller: Schema.NullOr(Schema.String)
})
const decodeGrantRow = Schema.decodeUnknownSync(GrantRow)
const decodeGrant = (row: unknown): Grant => {
  const decoded = decodeGrantRow(row)
  return {
    id: decoded.id,
    runId: decoded.run_id,
    sessionId: decoded.session_id,
    reason: decoded.reason,
    status: decoded.status,
    expiresAt: decoded.expires_at,
    connectedAt: decoded.connected_at,
    controller: decoded.controller
  }
}
const decodeRunStatus = Schema.decodeUnknownSync(Schema.Struct({ status: Schema.Literals(RunStatuses) }))
const decodeController = Schema.decodeUnknownSync(Schema.Struct({ controller: Schema.String }))
const decodeId = Schema.decodeUnknownSync(Schema.Struct({ id: ControlGrantId }))

export class GrantStore extends Context.Service<GrantStore, {
  /** Runs `effect` in one transaction (an SqlError is a defect). */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Locks the run's row (inside a transaction); its status, undefined when it is gone. */
  readonly lockRun: (runId: RunId) => Effect.Effect<RunStatus | undefined>
  readonly runStatus: (runId: RunId) => Effect.Effect<RunStatus | undefined>
  readonly grant: (grantId: ControlGrantId, forUpdate?: boolean) => Effect.Effect<Grant | undefined>
  /** The run's latest grant. */
  readonly latest: (runId: RunId) => Effect.Effect<Grant | undefined>
  /** The run's pending grants past their deadline, locked. */
  readonly due: (runId: RunId) => Effect.Effect<ReadonlyArray<Grant>>
  /** The run's pending and active grants. */
  readonly open: (runId: RunId) => Effect.Effect<ReadonlyArray<Grant>>
  readonly setStatus: (grantId: ControlGrantId, status: GrantStatus) => Effect.Effect<void>
  /** Supersedes the run's pending grants. */
  readonly supersedePending: (runId: RunId) => Effect.Effect<void>
  readonly insert: (grant: { readonly id: ControlGrantId; readonly runId: RunId; readonly sessionId: SessionId | null; readonly reason: string | null; readonly expiresAt: Date }) => Effect.Effect<void>
  /** Releases the run's active grant. */
  readonly releaseActive: (runId: RunId) => Effect.Effect<void>
  /** Ends the grant if it is pending or active. */
  readonly endIfOpen: (grantId: ControlGrantId) => Effect.Effect<void>
  /** Stamps a connect (the clock of the database, to the microsecond); returns the new controller token. */
  readonly stamp: (grantId: ControlGrantId) => Effect.Effect<string>
  /** Wakes the run's listeners on every node (delivered at commit): a page taken over notices. */
  readonly wakeRun: (runId: RunId) => Effect.Effect<void>
  /** Withdraws the run's pending input requests; their ids. */
  readonly withdrawInputRequests: (runId: RunId) => Effect.Effect<ReadonlyArray<string>>
}>()("wa/control/GrantStore") {
  static readonly layer = Layer.effect(
    GrantStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // connected_at to the microsecond, as text: a JS Date would merge two connects of one millisecond.
      const controllerColumn = sql`(extract(epoch FROM connected_at) * 1000000)::bigint::text AS controller`
      const grants = (rows: ReadonlyArray<unknown>) => rows.map(decodeGrant)
      const status = (rows: ReadonlyArray<unknown>) => rows[0] === undefined ? undefined : decodeRunStatus(rows[0]).status
      return GrantStore.of(withMethodSpans("GrantStore", {
        transaction: (effect) => sql.withTransaction(effect).pipe(Effect.catchTag("SqlError", Effect.die)),
        lockRun: (runId) => sql`SELECT status FROM runs WHERE id = ${runId} FOR UPDATE`.pipe(Effect.map(status), Effect.orDie),
        runStatus: (runId) => sql`SELECT status FROM runs WHERE id = ${runId}`.pipe(Effect.map(status), Effect.orDie),
        grant: (grantId, forUpdate = false) =>
          sql`SELECT *, ${controllerColumn} FROM control_grants WHERE id = ${grantId} ${forUpdate ? sql`FOR UPDATE` : sql``}`.pipe(
            Effect.map((rows) => grants(rows)[0]),
            Effect.orDie
          ),
        latest: (runId) =>
          sql`SELECT *, ${controllerColumn} FROM control_grants WHERE run_id = ${runId} ORDER BY id DESC LIMIT 1`.pipe(
            Effect.map((rows) => grants(rows)[0]),
            Effect.orDie
          ),
        due: (runId) =>
          sql`SELECT *, ${controllerColumn} FROM control_grants WHERE run_id = ${runId} AND status = 'pending' AND expires_at <= now() FOR UPDATE`.pipe(
            Effect.map(grants),
            Effect.orDie
          ),
        open: (runId) =>
          sql`SELECT *, ${controllerColumn} FROM control_grants WHERE run_id = ${runId} AND status IN ('pending', 'active') ORDER BY id`.pipe(
            Effect.map(grants),
            Effect.orDie
          ),
        setStatus: (grantId, to) =>
          sql`UPDATE control_grants SET status = ${to},
                ended_at = CASE WHEN ${to} IN ('pending', 'active') THEN NULL ELSE now() END,
                connected_at = CASE WHEN ${to} = 'active' THEN coalesce(connected_at, now()) ELSE connected_at END
              WHERE id = ${grantId}`.pipe(Effect.asVoid, Effect.orDie),
        supersedePending: (runId) =>
          sql`UPDATE control_grants SET status = 'superseded', ended_at = now() WHERE run_id = ${runId} AND status = 'pending'`.pipe(Effect.asVoid, Effect.orDie),
        insert: (grant) =>
          sql`
            INSERT INTO control_grants (id, run_id, session_id, reason, status, expires_at)
            VALUES (${grant.id}, ${grant.runId}, ${grant.sessionId}, ${grant.reason}, 'pending', ${grant.expiresAt})`.pipe(Effect.asVoid, Effect.orDie),
        releaseActive: (runId) =>
          sql`UPDATE control_grants SET status = 'released', ended_at = now() WHERE run_id = ${runId} AND status = 'active'`.pipe(Effect.asVoid, Effect.orDie),
        endIfOpen: (grantId) =>
          sql`UPDATE control_grants SET status = 'ended', ended_at = now() WHERE id = ${grantId} AND status IN ('pending', 'active')`.pipe(Effect.asVoid, Effect.orDie),
        stamp: (grantId) =>
          sql`UPDATE control_grants SET connected_at = clock_timestamp() WHERE id = ${grantId} RETURNING ${controllerColumn}`.pipe(
            Effect.map((rows) => decodeController(rows[0]).controller),
            Effect.orDie
          ),
        wakeRun: (runId) => sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${`${runId}:0`})`.pipe(Effect.asVoid, Effect.orDie),
        withdrawInputRequests: (runId) =>
          sql`
            UPDATE input_requests SET status = 'withdrawn', resolved_at = now()
            WHERE run_id = ${runId} AND status = 'pending' RETURNING id`.pipe(
            Effect.map((rows) => rows.map((row) => decodeId(row).id)),
            Effect.orDie
          )
      }))
    })
  )
}
