/**
 * Sessions (DoAnything) in PostgreSQL: a session and its first run are created in one
 * transaction that counts the key's (and the project's) open sessions; a follow-up run is added
 * only when the session is open and its latest run has ended. The runs themselves, their events
 * and checkpoints are the run store's (src/store/runs.ts).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { BudgetExceeded, InsufficientCredits } from "../domain/errors.ts"
import { PreviousRunActive, SessionCapReached, SessionClosed } from "../domain/errors.ts"
import { makeId } from "../domain/ids.ts"
import { isTerminal } from "../domain/run-state.ts"
import { Principal, ProjectId, type Run, runFromRow, RunId, type RunRequest, type Session, sessionFromRow, SessionId, storedRequest } from "../domain/run.ts"
import type { ProfileId } from "../domain/profile.ts"
import type { WorkspaceId } from "../domain/id-schemas.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { makeRunCharges } from "../billing/store/run-charges.ts"
import { RunStartedBy } from "./run-admission.ts"
import { insertEvent, lockRun, recordCostUpdate } from "./run-log.ts"
import { decodeRows } from "../domain/rows.ts"

/** The first key of the advisory lock that serialises a project's session creates (the second is the project's hash). */
const PROJECT_SESSIONS_LOCK = 0x7761_7332 // "was2"
/** The same for the creates of one principal (an API key, or a console user: the second key is its id's hash). */
const PRINCIPAL_SESSIONS_LOCK = 0x7761_7333 // "was3"

const OpenCount = Schema.Struct({ open: Schema.Number })
/** The session row addRun locks: whether it takes a run, and whose key a scheduled run counts for. */
const LockedSession = Schema.Struct({
  status: Schema.Literals(["running", "idle", "closed"]),
  project_id: ProjectId,
  latest_run_id: Schema.NullOr(RunId),
  api_key_id: Schema.NullOr(Principal)
})

/** A DoAnything run to add to a session. */
export interface NewRun {
  readonly instructions: string | null
  readonly request: RunRequest
  readonly maxSteps: number
  readonly model: string | null
  /** Wall-clock budget of the run, from max_duration_minutes. */
  readonly maxDurationMs: number | null
  readonly parentRunId?: RunId | null
}

export class SessionStore extends Context.Service<SessionStore, {
  readonly createSession: (input: {
    readonly projectId: ProjectId
    /** The acting principal (an API key, a console user, a delegation grant): the per-key cap counts by it. */
    readonly apiKeyId: Principal
    readonly profileId: ProfileId | null
    readonly workspaceId: WorkspaceId | null
    readonly run: NewRun
    /** Open sessions the key may hold; the count and the insert are one transaction. */
    readonly maxOpenSessions: number
    /** Open sessions the whole project may hold (its plan's), counted in the same transaction. */
    readonly maxProjectSessions?: number
  }) => Effect.Effect<{ readonly session: Session; readonly run: Run }, SessionCapReached | InsufficientCredits | BudgetExceeded>
  /** Billing on: the run is admitted against its estimated charge, held (src/billing/store/credit-holds.ts), in the transaction that inserts it. */
  readonly addRun: (sessionId: SessionId, run: NewRun) => Effect.Effect<Run, SessionClosed | PreviousRunActive | InsufficientCredits | BudgetExceeded>
  /** A lookup by any id (as getRun): one that names no session of the project finds nothing. */
  readonly getSession: (projectId: ProjectId, sessionId: SessionId) => Effect.Effect<Session | undefined>
  readonly listSessions: (projectId: ProjectId, status: string | undefined, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<Session>>
  readonly runsOfSession: (sessionId: SessionId) => Effect.Effect<ReadonlyArray<Run>>
  readonly setSessionStatus: (sessionId: SessionId, status: Session["status"]) => Effect.Effect<void>
  /** The first session that held the profile (ids are ordered by time), open or closed since; null when none did. */
  readonly firstHolderOf: (profileId: ProfileId) => Effect.Effect<SessionId | null>
  /** Closes every idle session (start-up recovery of the all-in-one mode: no browser survived the restart); how many. */
  readonly closeIdle: () => Effect.Effect<number>
}>()("wa/store/SessionStore") {
  static readonly layer = Layer.effect(
    SessionStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { holdFor } = yield* makeRunCharges(recordCostUpdate)

  // `apiKeyId`: the key (or console user) that started it (migration 0026).
  const insertRun = (sessionId: SessionId, projectId: ProjectId, run: NewRun, apiKeyId: Principal | null) =>
    sql`
      INSERT INTO runs (id, session_id, project_id, status, instructions, request, max_steps, model, parent_run_id, deadline_at, api_key_id)
      VALUES (
        ${makeId("run")}, ${sessionId}, ${projectId}, 'pending', ${run.instructions},
        ${JSON.stringify(storedRequest(run.request))}::jsonb, ${run.maxSteps}, ${run.model}, ${run.parentRunId ?? null},
        ${run.maxDurationMs === null ? null : new Date(Date.now() + run.maxDurationMs)}, ${apiKeyId}
      )
      RETURNING *`.pipe(Effect.map((rows) => runFromRow(rows[0]!)))

  const createSession: SessionStore["Service"]["createSession"] = (input) =>
    sql.withTransaction(Effect.gen(function*() {
      // The session, its run and the run's first event are written first; the caps are counted
      // after. The locks that make a count exact (a principal's creates, then a project's, one at
      // a time on every node: 50 parallel creates against a cap of 5 give 5) are held from there
      // to the commit only, so concurrent creates queue behind two counts instead of the whole
      // transaction. The credit hold comes after the caps (a create over a cap says so, not 402);
      // with billing on it locks the project's balance, which serialises its creates anyway.
      // A create refused by a cap or the balance rolls back all it wrote.
      // The store mints ids: a new one is branded where it is made.
      const sessionId = makeId("sess")
      yield* sql`
        INSERT INTO sessions (id, project_id, api_key_id, status, profile_id, workspace_id)
        VALUES (${sessionId}, ${input.projectId}, ${input.apiKeyId}, 'running', ${input.profileId}, ${input.workspaceId})`
      const run = yield* insertRun(sessionId, input.projectId, input.run, input.apiKeyId)
      const sessions = yield* sql`
        UPDATE sessions SET latest_run_id = ${run.id} WHERE id = ${sessionId} RETURNING *`
      yield* insertEvent(sql, run.id, "run.status_changed", { run_id: run.id, from: null, status: "pending" })
      // An advisory lock on the principal's id, not its api_keys row: a console user has no such
      // row, and a key's row is also updated by authentication (last_used_at).
      yield* sql`SELECT pg_advisory_xact_lock(${PRINCIPAL_SESSIONS_LOCK}, hashtext(${input.apiKeyId}))`
      // The counts see this transaction's own session: the others are one fewer.
      const [counted] = yield* decodeRows(OpenCount)(sql`
        SELECT count(*)::int - 1 AS open FROM sessions WHERE api_key_id = ${input.apiKeyId} AND status <> 'closed'`)
      if (counted!.open >= input.maxOpenSessions) return yield* new SessionCapReached({ open: counted!.open, limit: input.maxOpenSessions, scope: "key" })
      if (input.maxProjectSessions !== undefined) {
        yield* sql`SELECT pg_advisory_xact_lock(${PROJECT_SESSIONS_LOCK}, hashtext(${input.projectId}))`
        const [project] = yield* decodeRows(OpenCount)(sql`
          SELECT count(*)::int - 1 AS open FROM sessions WHERE project_id = ${input.projectId} AND status <> 'closed'`)
        if (project!.open >= input.maxProjectSessions) {
          return yield* new SessionCapReached({ open: project!.open, limit: input.maxProjectSessions, scope: "project" })
        }
      }
      yield* holdFor(run)
      return { session: sessionFromRow(sessions[0]), run }
    })).pipe(Effect.catchTag("SqlError", Effect.die))

  const addRun: SessionStore["Service"]["addRun"] = (sessionId, run) =>
    sql.withTransaction(Effect.gen(function*() {
      const sessions = yield* decodeRows(LockedSession)(sql`
        SELECT status, project_id, latest_run_id, api_key_id FROM sessions WHERE id = ${sessionId} FOR UPDATE`)
      const session = sessions[0]!
      if (session.status === "closed") return yield* new SessionClosed({ sessionId })
      if (session.latest_run_id !== null) {
        const latest = yield* lockRun(sql, session.latest_run_id)
        if (latest !== undefined && !isTerminal(latest.status)) {
          return yield* new PreviousRunActive({ runId: latest.id, status: latest.status })
        }
      }
      // Started by the calling key; a schedule's firing (no caller) counts for the session's key.
      const created = yield* insertRun(sessionId, session.project_id, run, (yield* RunStartedBy) ?? session.api_key_id)
      yield* holdFor(created)
      yield* sql`UPDATE sessions SET latest_run_id = ${created.id}, status = 'running', updated_at = now() WHERE id = ${sessionId}`
      yield* insertEvent(sql, created.id, "run.status_changed", { run_id: created.id, from: null, status: "pending" })
      return created
    })).pipe(Effect.catchTag("SqlError", Effect.die))

      return SessionStore.of(withMethodSpans("SessionStore", {
        createSession,
        addRun,
        getSession: (projectId, sessionId) =>
          sql`SELECT * FROM sessions WHERE id = ${sessionId} AND project_id = ${projectId}`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : sessionFromRow(rows[0])),
            Effect.orDie
          ),
        listSessions: (projectId, status, limit, beforeId) =>
          sql`
            SELECT * FROM sessions
            WHERE project_id = ${projectId}
              ${status === undefined ? sql`` : sql`AND status = ${status}`}
              ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`.pipe(Effect.orDie, Effect.map((rows) => rows.map(sessionFromRow))),
        runsOfSession: (sessionId) =>
          sql`SELECT * FROM runs WHERE session_id = ${sessionId} ORDER BY id`.pipe(Effect.orDie, Effect.map((rows) => rows.map(runFromRow))),
        setSessionStatus: (sessionId, status) =>
          sql`UPDATE sessions SET status = ${status}, updated_at = now(),
                closed_at = CASE WHEN ${status} = 'closed' THEN now() ELSE closed_at END
              WHERE id = ${sessionId}`.pipe(Effect.asVoid, Effect.orDie),
        firstHolderOf: (profileId) =>
          decodeRows(Schema.Struct({ id: SessionId }))(sql`SELECT id FROM sessions WHERE profile_id = ${profileId} ORDER BY id LIMIT 1`).pipe(
            Effect.map((rows) => rows[0]?.id ?? null)
          ),
        closeIdle: () =>
          sql`UPDATE sessions SET status = 'closed', closed_at = now(), updated_at = now() WHERE status = 'idle' RETURNING id`.pipe(
            Effect.map((rows) => rows.length),
            Effect.orDie
          )
      }))
    })
  )
}
