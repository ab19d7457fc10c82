/**
 * What the agent of a run asks of its session's autonomous schedule, if it has one: the bounds
 * of its next run, and a proposed next run time (done's `next_run_at`). SQL only over the
 * schedule tables, so the agent loop (src/agent/run-agent.ts) reaches it without depending on the
 * session schedules' service, which itself drives the session entity that runs the agent.
 */
import { Clock, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { clampProposal, StoredSchedule } from "../domain/schedule-spec.ts"

/** `schedules.owner_kind` of a session's schedule (src/do-anything/schedules.ts). */
export const SESSION_SCHEDULE_OWNER = "session_schedule"

const decodeSpec = Schema.decodeUnknownSync(StoredSchedule)

/** The bounds of an autonomous schedule whose firing made this run, if it did. */
export const autonomousBoundsOfRun = (runId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ id: string; spec: unknown }>`
      SELECT s.id, s.spec FROM runs r JOIN session_schedules s ON s.id = r.schedule_id
      WHERE r.id = ${runId}
      UNION ALL
      SELECT s.id, s.spec FROM session_schedules s WHERE s.source_run_id = ${runId}
      LIMIT 1`
    if (row === undefined) return undefined
    const spec = decodeSpec(row.spec)
    return spec.kind === "autonomous" ? { scheduleId: row.id, min_interval_seconds: spec.min_interval_seconds, max_interval_seconds: spec.max_interval_seconds } : undefined
  }).pipe(Effect.orDie)

/**
 * The agent of an autonomous schedule's run proposed its next run (done's `next_run_at`): the
 * schedule follows it, clamped to [now + min, now + max]. Returns the time it will fire at, or
 * undefined when the run belongs to no autonomous schedule (or it is paused).
 */
export const proposeNextRun = (runId: string, proposed: Date) =>
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
