/**
 * What the agent of a run asks of its session's autonomous schedule, if it has one: the bounds
 * of its next run, and a proposed next run time (done's `next_run_at`). SQL only over the
 * schedule tables, so the agent loop (src/agent/run-agent.ts) reaches it without depending on the
 * session schedules' service, which itself drives the session entity that runs the agent.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { SqlError } from "effect/sql/SqlError"
import type { Fragment } from "effect/sql/Statement"
import { recordCreate } from "./keyed-create.ts"
import { RunStatuses, type RunStatus } from "../domain/run-state.ts"
import { ProjectId, RunId, SessionId } from "../domain/run.ts"
import { ScheduleId } from "../domain/id-schemas.ts"
import { clampProposal, StoredSchedule } from "../domain/schedule-spec.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { decodeRows } from "../domain/rows.ts"

/** `schedules.owner_kind` of a session's schedule (src/do-anything/schedules.ts). */
export const SESSION_SCHEDULE_OWNER = "session_schedule"

/** The schedule a run belongs to, and its spec. */
const scheduleOfRunRows = decodeRows(Schema.Struct({ id: ScheduleId, spec: StoredSchedule }))

/** The bounds of an autonomous schedule whose firing made this run, if it did. */
export const autonomousBoundsOfRun = (runId: RunId) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* scheduleOfRunRows(sql`
      SELECT s.id, s.spec FROM runs r JOIN session_schedules s ON s.id = r.schedule_id
      WHERE r.id = ${runId}
      UNION ALL
      SELECT s.id, s.spec FROM session_schedules s WHERE s.source_run_id = ${runId}
      LIMIT 1`)
    if (row === undefined) return undefined
    const spec = row.spec
    return spec.kind === "autonomous" ? { scheduleId: row.id, min_interval_seconds: spec.min_interval_seconds, max_interval_seconds: spec.max_interval_seconds } : undefined
  }).pipe(Effect.orDie)

/**
 * The agent of an autonomous schedule's run proposed its next run (done's `next_run_at`): the
 * schedule follows it, clamped to [now + min, now + max]. Returns the time it will fire at, or
 * undefined when the run belongs to no autonomous schedule (or it is paused).
 */
export const proposeNextRun = (runId: RunId, proposed: Date) =>
  Effect.gen(function*() {
    const bounds = yield* autonomousBoundsOfRun(runId)
    if (bounds === undefined) return undefined
    const sql = yield* SqlClient.SqlClient
    const now = new Date(yield* Clock.currentTimeMillis)
    const next = clampProposal(proposed, now, bounds)
    const rows = yield* sql`
      UPDATE schedules SET next_fire_at = ${next}, updated_at = ${now}
      WHERE owner_kind = ${SESSION_SCHEDULE_OWNER} AND owner_id = ${bounds.scheduleId} AND NOT paused
      RETURNING owner_id`.pipe(Effect.orDie)
    return rows.length > 0 ? next : undefined
  })

/** A row of session_schedule_firings. */
export const SessionFiringRow = Schema.Struct({
  schedule_id: ScheduleId,
  slot_at: Schema.Date,
  trigger: Schema.String,
  payload: Schema.Unknown,
  outcome: Schema.Literals(["pending", "run_created", "skipped"]),
  reason: Schema.NullOr(Schema.Literals(["paused", "session_not_found", "scheduled_cap_reached", "previous_run_active", "insufficient_credits", "budget_exceeded"])),
  run_id: Schema.NullOr(RunId),
  created_at: Schema.Date,
  decided_at: Schema.NullOr(Schema.Date)
})
export type SessionFiringRow = typeof SessionFiringRow.Type
const decodeFiring = Schema.decodeUnknownSync(SessionFiringRow)
const firings = (rows: ReadonlyArray<unknown>) => rows.map((row) => decodeFiring(row))

/** A session schedule with the scheduler's state of it (paused, next slot, last slot fired). */
export const SessionScheduleRow = Schema.Struct({
  id: ScheduleId,
  project_id: ProjectId,
  session_id: SessionId,
  source_run_id: Schema.NullOr(RunId),
  spec: StoredSchedule,
  instructions: Schema.String,
  /** The stored request template (src/domain/run.ts storedRequest). */
  request: Schema.Unknown,
  created_at: Schema.Date,
  updated_at: Schema.Date,
  /** Null when the scheduler has no schedule for it. */
  paused: Schema.NullOr(Schema.Boolean),
  next_fire_at: Schema.NullOr(Schema.Date),
  last_fired_at: Schema.NullOr(Schema.Date)
})
export type SessionScheduleRow = typeof SessionScheduleRow.Type
const decodeSchedule = Schema.decodeUnknownSync(SessionScheduleRow)

const decodeCount = Schema.decodeUnknownSync(Schema.Struct({ n: Schema.Number }))
const decodeTriggerLock = Schema.decodeUnknownSync(Schema.Struct({ id: ScheduleId, paused: Schema.NullOr(Schema.Boolean) }))
const decodeLatestSlot = Schema.decodeUnknownSync(Schema.Struct({ slot_at: Schema.NullOr(Schema.Date) }))
const decodeId = Schema.decodeUnknownSync(Schema.Struct({ id: ScheduleId }))
const decodeSession = Schema.decodeUnknownSync(Schema.Struct({ status: Schema.String, latest_run_id: Schema.NullOr(RunId) }))
const decodeRunStatus = Schema.decodeUnknownSync(Schema.Struct({ status: Schema.Literals(RunStatuses) }))

/** Runs of the project's schedules that are under way (`scheduled_running` of QuotaStatus). */
export const countScheduledRuns = (projectId: ProjectId) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql`
      SELECT count(*)::int AS n FROM runs
      WHERE project_id = ${projectId} AND schedule_id IS NOT NULL AND status IN ('pending', 'running', 'awaiting_input', 'paused')`
    return row === undefined ? 0 : decodeCount(row).n
  }).pipe(Effect.orDie)

/**
 * Locks the project's session schedule for an event trigger (inside a transaction); whether the
 * scheduler has it paused (null: no scheduler row). Undefined when the project has no such schedule.
 */
export const lockScheduleForTrigger = (projectId: ProjectId, scheduleId: ScheduleId) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql`
      SELECT ss.id, s.paused FROM session_schedules ss
      LEFT JOIN schedules s ON s.owner_kind = ${SESSION_SCHEDULE_OWNER} AND s.owner_id = ss.id
      WHERE ss.id = ${scheduleId} AND ss.project_id = ${projectId}
      FOR UPDATE OF ss`
    return row === undefined ? undefined : decodeTriggerLock(row)
  })

/** The firing an event with this source key (a notification's tick and type) queued, if any. */
export const firingOfSource = (sourceKey: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return firings(yield* sql`SELECT * FROM session_schedule_firings WHERE source_key = ${sourceKey}`)[0]
  })

/** The schedule's latest firing slot, if it has fired. */
export const latestFiringSlot = (scheduleId: ScheduleId) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql`SELECT max(slot_at) AS slot_at FROM session_schedule_firings WHERE schedule_id = ${scheduleId}`
    return row === undefined ? null : decodeLatestSlot(row).slot_at
  })

/** Inserts a pending event firing with its payload. */
export const insertEventFiring = (input: {
  readonly projectId: ProjectId
  readonly scheduleId: ScheduleId
  readonly slot: Date
  readonly payload: unknown
  readonly at: Date
  readonly sourceKey: string | null
}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`
      INSERT INTO session_schedule_firings (schedule_id, slot_at, project_id, trigger, payload, outcome, created_at, source_key)
      VALUES (${input.scheduleId}, ${input.slot}, ${input.projectId}, 'event', ${input.payload === undefined ? null : JSON.stringify(input.payload)}::jsonb,
        'pending', ${input.at}, ${input.sourceKey})
      RETURNING *`
    return decodeFiring(rows[0])
  })

/** Whether the project has that session schedule. */
export const sessionScheduleExists = (projectId: ProjectId, scheduleId: ScheduleId) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`SELECT 1 FROM session_schedules WHERE id = ${scheduleId} AND project_id = ${projectId}`
    return rows.length > 0
  }).pipe(Effect.orDie)

/** Filters of a project's session schedules. */
export interface SessionScheduleFilter {
  readonly kind?: StoredSchedule["kind"] | undefined
  readonly paused?: boolean | undefined
  readonly sessionId?: string | undefined
  readonly event?: string | undefined
}

/**
 * Session schedules (session_schedules, with the scheduler's state from `schedules`) and their
 * firings (session_schedule_firings), for the SessionSchedules service (src/do-anything/
 * schedules.ts), and the session and run rows a firing's decision reads and writes in the same
 * transaction. Every method joins the caller's transaction; `transaction` makes one.
 */
export class SessionScheduleStore extends Context.Service<SessionScheduleStore, {
  /**
   * Runs `effect` in one transaction, with this store's client as the SqlClient (for the SQL-only
   * functions above); an SqlError is a defect.
   */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, Exclude<E, SqlError>, Exclude<R, SqlClient.SqlClient>>
  /** Records the created resource on the request's Idempotency-Key claim (src/store/keyed-create.ts), in the caller's transaction. */
  readonly recordCreate: (id: string) => Effect.Effect<void>
  readonly find: (projectId: ProjectId, scheduleId: ScheduleId) => Effect.Effect<SessionScheduleRow | undefined>
  readonly ofSession: (sessionId: SessionId) => Effect.Effect<SessionScheduleRow | undefined>
  /** Newest first, `limit` before the id `beforeId`. */
  readonly list: (projectId: ProjectId, filter: SessionScheduleFilter, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<SessionScheduleRow>>
  /** The schedule, its row locked (undefined: deleted). */
  readonly lock: (scheduleId: ScheduleId) => Effect.Effect<SessionScheduleRow | undefined>
  /** The ids of the session's schedules. */
  readonly idsOfSession: (sessionId: SessionId) => Effect.Effect<ReadonlyArray<ScheduleId>>
  /** Creates or replaces the session's schedule; its id. */
  readonly upsert: (input: {
    readonly id: ScheduleId
    readonly projectId: ProjectId
    readonly sessionId: SessionId
    readonly sourceRunId: RunId
    readonly spec: StoredSchedule
    readonly instructions: string
    readonly request: unknown
    readonly at: Date
  }) => Effect.Effect<ScheduleId>
  /** Deletes the schedule and its firings. */
  readonly remove: (scheduleId: ScheduleId) => Effect.Effect<void>
  /** The latest firing of each schedule. */
  readonly lastFirings: (scheduleIds: ReadonlyArray<ScheduleId>) => Effect.Effect<ReadonlyArray<SessionFiringRow>>
  /** Firings, newest slot first, before `before`. */
  readonly firings: (scheduleId: ScheduleId, options: { readonly limit: number; readonly before?: Date | undefined; readonly outcome?: string | undefined }) => Effect.Effect<ReadonlyArray<SessionFiringRow>>
  readonly firingAt: (projectId: ProjectId, scheduleId: ScheduleId, slot: Date) => Effect.Effect<SessionFiringRow | undefined>
  /** Records the slot's firing (pending) unless it is recorded already, and returns it locked. */
  readonly lockFiring: (input: { readonly projectId: ProjectId; readonly scheduleId: ScheduleId; readonly slot: Date; readonly at: Date }) => Effect.Effect<SessionFiringRow>
  readonly decideFiring: (scheduleId: ScheduleId, slot: Date, decision: {
    readonly outcome: string
    readonly reason: string | null
    readonly runId: RunId | null
    readonly at: Date
  }) => Effect.Effect<void>
  /** Deletes decided firings older than `days`, at most `limit`. */
  readonly pruneFirings: (days: number, limit: number) => Effect.Effect<void>
  /** Locks the session's row; its status and latest run, undefined when it is gone. */
  readonly lockSession: (sessionId: SessionId) => Effect.Effect<{ readonly status: string; readonly latest_run_id: RunId | null } | undefined>
  readonly runStatus: (runId: RunId) => Effect.Effect<RunStatus | undefined>
  /** Serialises the project's scheduled-run admissions until the transaction ends (on every node). */
  readonly lockScheduledCap: (projectId: ProjectId) => Effect.Effect<void>
  readonly countScheduledRuns: (projectId: ProjectId) => Effect.Effect<number>
  /** Opens a closed session again (idle). */
  readonly reopenSession: (sessionId: SessionId) => Effect.Effect<void>
  /** Marks a run as made by the schedule. */
  readonly tagRun: (runId: RunId, scheduleId: ScheduleId) => Effect.Effect<void>
}>()("wa/store/SessionScheduleStore") {
  static readonly layer = Layer.effect(
    SessionScheduleStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const select = (where: Fragment, limit?: number) =>
        sql`
          SELECT ss.*, s.paused, s.next_fire_at, s.last_slot_at AS last_fired_at
          FROM session_schedules ss
          LEFT JOIN schedules s ON s.owner_kind = ${SESSION_SCHEDULE_OWNER} AND s.owner_id = ss.id
          WHERE ${where}
          ORDER BY ss.id DESC
          ${limit === undefined ? sql`` : sql`LIMIT ${limit}`}`.pipe(Effect.map((rows) => rows.map((row) => decodeSchedule(row))), Effect.orDie)
      return SessionScheduleStore.of(withMethodSpans("SessionScheduleStore", {
        transaction: (effect) =>
          sql.withTransaction(effect).pipe(
            Effect.provideService(SqlClient.SqlClient, sql),
            Effect.catchIf((error): error is SqlError => error instanceof SqlError, Effect.die, Effect.fail)
          ),
        recordCreate: (id) => recordCreate(sql, id),
        find: (projectId, scheduleId) => select(sql`ss.id = ${scheduleId} AND ss.project_id = ${projectId}`).pipe(Effect.map((rows) => rows[0])),
        ofSession: (sessionId) => select(sql`ss.session_id = ${sessionId}`).pipe(Effect.map((rows) => rows[0])),
        list: (projectId, filter, limit, beforeId) =>
          select(
            sql`ss.project_id = ${projectId}
            ${beforeId === undefined ? sql`` : sql`AND ss.id < ${beforeId}`}
            ${filter.kind === undefined ? sql`` : sql`AND ss.spec->>'kind' = ${filter.kind}`}
            ${filter.event === undefined ? sql`` : sql`AND ss.spec->>'event' = ${filter.event}`}
            ${filter.sessionId === undefined ? sql`` : sql`AND ss.session_id = ${filter.sessionId}`}
            ${filter.paused === undefined ? sql`` : sql`AND coalesce(s.paused, false) = ${filter.paused}`}`,
            limit
          ),
        lock: (scheduleId) =>
          sql`
            SELECT ss.*, s.paused, s.next_fire_at, s.last_slot_at AS last_fired_at
            FROM session_schedules ss
            LEFT JOIN schedules s ON s.owner_kind = ${SESSION_SCHEDULE_OWNER} AND s.owner_id = ss.id
            WHERE ss.id = ${scheduleId}
            FOR UPDATE OF ss`.pipe(Effect.map((rows) => rows[0] === undefined ? undefined : decodeSchedule(rows[0])), Effect.orDie),
        idsOfSession: (sessionId) =>
          sql`SELECT id FROM session_schedules WHERE session_id = ${sessionId}`.pipe(Effect.map((rows) => rows.map((row) => decodeId(row).id)), Effect.orDie),
        upsert: (input) =>
          sql`
            INSERT INTO session_schedules (id, project_id, session_id, source_run_id, spec, instructions, request, created_at, updated_at)
            VALUES (${input.id}, ${input.projectId}, ${input.sessionId}, ${input.sourceRunId}, ${JSON.stringify(input.spec)}::jsonb,
              ${input.instructions}, ${JSON.stringify(input.request)}::jsonb, ${input.at}, ${input.at})
            ON CONFLICT (session_id) DO UPDATE SET source_run_id = EXCLUDED.source_run_id, spec = EXCLUDED.spec,
              instructions = EXCLUDED.instructions, request = EXCLUDED.request, updated_at = EXCLUDED.updated_at
            RETURNING id`.pipe(Effect.map((rows) => decodeId(rows[0]).id), Effect.orDie),
        remove: (scheduleId) =>
          Effect.gen(function*() {
            yield* sql`DELETE FROM session_schedule_firings WHERE schedule_id = ${scheduleId}`
            yield* sql`DELETE FROM session_schedules WHERE id = ${scheduleId}`
          }).pipe(Effect.orDie),
        lastFirings: (scheduleIds) =>
          scheduleIds.length === 0 ? Effect.succeed([]) : sql`
            SELECT DISTINCT ON (schedule_id) * FROM session_schedule_firings
            WHERE schedule_id IN ${sql.in(scheduleIds)}
            ORDER BY schedule_id, slot_at DESC`.pipe(Effect.map(firings), Effect.orDie),
        firings: (scheduleId, options) =>
          sql`
            SELECT * FROM session_schedule_firings
            WHERE schedule_id = ${scheduleId}
              ${options.before === undefined ? sql`` : sql`AND slot_at < ${options.before}`}
              ${options.outcome === undefined ? sql`` : sql`AND outcome = ${options.outcome}`}
            ORDER BY slot_at DESC LIMIT ${options.limit}`.pipe(Effect.map(firings), Effect.orDie),
        firingAt: (projectId, scheduleId, slot) =>
          sql`
            SELECT * FROM session_schedule_firings WHERE schedule_id = ${scheduleId} AND project_id = ${projectId} AND slot_at = ${slot}`.pipe(
            Effect.map((rows) => firings(rows)[0]),
            Effect.orDie
          ),
        lockFiring: ({ projectId, scheduleId, slot, at }) =>
          Effect.gen(function*() {
            yield* sql`
              INSERT INTO session_schedule_firings (schedule_id, slot_at, project_id, trigger, outcome, created_at)
              VALUES (${scheduleId}, ${slot}, ${projectId}, 'schedule', 'pending', ${at})
              ON CONFLICT DO NOTHING`
            const rows = yield* sql`
              SELECT * FROM session_schedule_firings WHERE schedule_id = ${scheduleId} AND slot_at = ${slot} FOR UPDATE`
            return decodeFiring(rows[0])
          }).pipe(Effect.orDie),
        decideFiring: (scheduleId, slot, decision) =>
          sql`
            UPDATE session_schedule_firings SET outcome = ${decision.outcome}, reason = ${decision.reason},
              run_id = ${decision.runId}, decided_at = ${decision.at}
            WHERE schedule_id = ${scheduleId} AND slot_at = ${slot}`.pipe(Effect.asVoid, Effect.orDie),
        pruneFirings: (days, limit) =>
          sql`
            DELETE FROM session_schedule_firings WHERE ctid IN (
              SELECT ctid FROM session_schedule_firings
              WHERE created_at < now() - make_interval(days => ${days}) AND outcome <> 'pending'
              LIMIT ${limit}
            )`.pipe(Effect.asVoid, Effect.orDie),
        lockSession: (sessionId) =>
          sql`SELECT status, latest_run_id FROM sessions WHERE id = ${sessionId} FOR UPDATE`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : decodeSession(rows[0])),
            Effect.orDie
          ),
        runStatus: (runId) =>
          sql`SELECT status FROM runs WHERE id = ${runId}`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : decodeRunStatus(rows[0]).status),
            Effect.orDie
          ),
        lockScheduledCap: (projectId) =>
          sql`SELECT pg_advisory_xact_lock(hashtext(${`wa_scheduled_cap:${projectId}`}))`.pipe(Effect.asVoid, Effect.orDie),
        countScheduledRuns: (projectId) => countScheduledRuns(projectId).pipe(Effect.provideService(SqlClient.SqlClient, sql)),
        reopenSession: (sessionId) =>
          sql`UPDATE sessions SET status = 'idle', closed_at = NULL, updated_at = now() WHERE id = ${sessionId}`.pipe(Effect.asVoid, Effect.orDie),
        tagRun: (runId, scheduleId) => sql`UPDATE runs SET schedule_id = ${scheduleId} WHERE id = ${runId}`.pipe(Effect.asVoid, Effect.orDie)
      }))
    })
  )
}
