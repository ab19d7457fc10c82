/**
 * The firings of scheduled DoAnything sessions (session_schedule_firings), and the SQL-only
 * operations other parts reach without the session schedules' service: queue an event firing (the
 * Track notification channel of kind `schedule`), check that a schedule exists, and count the
 * scheduled runs under way (the quota). The service that decides firings is
 * src/do-anything/schedules.ts.
 */
import { Clock, Effect } from "effect"
import type { ProjectId, RunId } from "../domain/run.ts"
import type { ScheduleId } from "../domain/id-schemas.ts"
import {
  countScheduledRuns,
  firingOfSource,
  insertEventFiring,
  latestFiringSlot,
  lockScheduleForTrigger,
  SESSION_SCHEDULE_OWNER,
  type SessionFiringRow,
  sessionScheduleExists
} from "../store/autonomous-schedules.ts"
import { recordQueuedFiring } from "./schedule-store.ts"

/** The scheduler's owner of a session schedule. */
export const owner = (id: string) => ({ kind: SESSION_SCHEDULE_OWNER, id })

export type FiringOutcome = "pending" | "run_created" | "skipped"
export type SkipReason = "paused" | "session_not_found" | "scheduled_cap_reached" | "previous_run_active" | "insufficient_credits" | "budget_exceeded"

export interface ScheduleFiring {
  readonly schedule_id: ScheduleId
  readonly slot_at: Date
  readonly trigger: "schedule" | "event"
  readonly payload: unknown
  readonly outcome: FiringOutcome
  readonly reason: SkipReason | null
  readonly run_id: RunId | null
  readonly created_at: Date
  readonly decided_at: Date | null
}

/** A row of session_schedule_firings (decoded by the store). */
export type FiringRow = SessionFiringRow

export const firingFromRow = (row: FiringRow): ScheduleFiring => ({
  schedule_id: row.schedule_id,
  slot_at: row.slot_at,
  trigger: row.trigger === "event" ? "event" : "schedule",
  payload: row.payload ?? null,
  outcome: row.outcome,
  reason: row.reason,
  run_id: row.run_id,
  created_at: row.created_at,
  decided_at: row.decided_at
})

/** Runs of the project's schedules that are under way (`scheduled_running` of QuotaStatus). */
export const scheduledRunning = countScheduledRuns

/**
 * Queues an event firing of a schedule now, with `payload`: the firing (outcome pending) and the
 * scheduler's record of it (dispatched by the next pass of any node). SQL only, so the Track
 * notification channel can call it too; run it in a transaction. `sourceKey` (a notification's
 * tick and type) makes a second call with the same key return the first firing.
 */
export const queueTrigger = (projectId: ProjectId, scheduleId: ScheduleId, payload: unknown, sourceKey?: string) =>
  Effect.gen(function*() {
    const row = yield* lockScheduleForTrigger(projectId, scheduleId)
    if (row === undefined) return { _tag: "not_found" as const }
    if (sourceKey !== undefined) {
      const existing = yield* firingOfSource(sourceKey)
      if (existing !== undefined) return { _tag: "queued" as const, firing: firingFromRow(existing) }
    }
    if (row.paused !== false) return { _tag: "paused" as const }
    // The slot of an event is its arrival, made unique per schedule (the row lock orders them).
    const at = new Date(yield* Clock.currentTimeMillis)
    const latest = yield* latestFiringSlot(scheduleId)
    const slot = new Date(Math.max(at.getTime(), (latest?.getTime() ?? 0) + 1))
    const firing = yield* insertEventFiring({ projectId, scheduleId, slot, payload, at, sourceKey: sourceKey ?? null })
    yield* recordQueuedFiring(owner(scheduleId), slot, at)
    return { _tag: "queued" as const, firing: firingFromRow(firing) }
  })

/** Whether the project has that schedule (a notify_channel of kind schedule names one). */
export const scheduleExists = sessionScheduleExists
