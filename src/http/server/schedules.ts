/** Handlers of /v1/projects/{pid}/schedules. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import type { ScheduleFiring, SessionSchedule } from "../../do-anything/schedules.ts"
import { SessionSchedules } from "../../do-anything/schedules.ts"
import { SafetyPolicies } from "../../safety/service.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { cursorCodec, cursorPage, DEFAULT_LIMIT } from "../pagination.ts"
import { iso } from "../views/timestamps.ts"
import { checkCreateSafety } from "./safety.ts"

export const firingView = (firing: ScheduleFiring) => ({
  schedule_id: firing.schedule_id,
  slot_at: firing.slot_at.toISOString(),
  trigger: firing.trigger,
  payload: firing.payload,
  outcome: firing.outcome,
  reason: firing.reason,
  run_id: firing.run_id,
  created_at: firing.created_at.toISOString(),
  decided_at: iso(firing.decided_at)
})

export const scheduleView = (schedule: SessionSchedule) => ({
  id: schedule.id,
  project_id: schedule.project_id,
  session_id: schedule.session_id,
  source_run_id: schedule.source_run_id,
  kind: schedule.spec.kind,
  schedule: schedule.spec,
  instructions: schedule.instructions,
  paused: schedule.paused,
  next_fire_at: iso(schedule.next_fire_at),
  last_fired_at: iso(schedule.last_fired_at),
  last_outcome: schedule.last_firing?.outcome ?? null,
  last_reason: schedule.last_firing?.reason ?? null,
  last_run_id: schedule.last_firing?.run_id ?? null,
  created_at: schedule.created_at.toISOString(),
  updated_at: schedule.updated_at.toISOString()
})

/** Firings are paged by slot: the cursor is the last slot returned (milliseconds), opaque. */
const slotCursor = cursorCodec("s", (position): position is number => typeof position === "number" && Number.isSafeInteger(position) && position >= 0)
const encodeSlotCursor = (slot: Date) => slotCursor.encode(slot.getTime())
const decodeSlotCursor = (cursor: string | undefined) =>
  slotCursor.decode(cursor).pipe(Effect.map((ms) => ms === undefined ? undefined : new Date(ms)))

export const SchedulesHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "schedules",
  Effect.fn(function*(handlers) {
    const schedules = yield* SessionSchedules
    const safety = yield* SafetyPolicies
    return handlers
      .handle("list", ({ query }) =>
        CurrentKey.use(({ projectId }) =>
          cursorPage(query, (limit, beforeId) =>
            schedules.list(projectId, {
              kind: query.kind,
              paused: query.paused === undefined ? undefined : query.paused === "true",
              sessionId: query.session_id,
              event: query.event
            }, limit, beforeId), scheduleView)
        ))
      .handle("get", ({ params }) => CurrentKey.use(({ projectId }) => httpErrors(schedules.find(projectId, params.schedule_id)).pipe(Effect.map(scheduleView))))
      .handle("pause", ({ params }) => CurrentKey.use(({ projectId }) => httpErrors(schedules.pause(projectId, params.schedule_id)).pipe(Effect.map(scheduleView))))
      .handle("resume", ({ params }) => CurrentKey.use(({ projectId }) => httpErrors(schedules.resume(projectId, params.schedule_id)).pipe(Effect.map(scheduleView))))
      .handle("delete", ({ params }) => CurrentKey.use(({ projectId }) => httpErrors(schedules.remove(projectId, params.schedule_id))))
      .handle("firings", ({ params, query }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const limit = query.limit ?? DEFAULT_LIMIT
          const before = yield* decodeSlotCursor(query.cursor)
          const rows = yield* httpErrors(schedules.firings(projectId, params.schedule_id, { limit: limit + 1, before, outcome: query.outcome }))
          const items = rows.slice(0, limit)
          return {
            items: items.map(firingView),
            next_cursor: rows.length > limit && items.length > 0 ? encodeSlotCursor(items[items.length - 1]!.slot_at) : null
          }
        }))
      .handle("trigger", ({ params, payload }) =>
        CurrentKey.use(({ projectId }) =>
          // The payload goes into the run's prompt: its URLs are held to the safety boundary like a create's instructions.
          checkCreateSafety(safety, projectId, { payload: JSON.stringify(payload.payload ?? null) }).pipe(
            Effect.andThen(httpErrors(schedules.trigger(projectId, params.schedule_id, payload.payload))),
            Effect.map(firingView)
          )))
  })
)
