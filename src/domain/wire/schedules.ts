/**
 * Schedules of DoAnything sessions on the wire: a schedule, a firing, their lists and queries,
 * and the trigger body (src/http/api/schedules.ts).
 */
import { Schema } from "effect"
import { MAX_TRIGGER_PAYLOAD_BYTES } from "../limits.ts"
import { StoredSchedule } from "../schedule-spec.ts"
import { PageQuery } from "../pagination.ts"
import { MaxString, Timestamp } from "../schemas.ts"
import { jsonBytes } from "../json-strings.ts"

export const FiringOutcome = Schema.Literals(["pending", "run_created", "skipped"])
export const SkipReason = Schema.Literals(["paused", "session_not_found", "scheduled_cap_reached", "previous_run_active", "insufficient_credits", "budget_exceeded"])

export const FiringResponse = Schema.Struct({
  schedule_id: Schema.String,
  slot_at: Timestamp.annotate({ description: "the slot fired (an event trigger's arrival time)" }),
  trigger: Schema.Literals(["schedule", "event"]),
  payload: Schema.Unknown.annotate({ description: "the trigger's payload (null for a timed slot)" }),
  outcome: FiringOutcome.annotate({ description: "pending until the scheduler decides it; run_created (run_id) or skipped (reason)" }),
  reason: Schema.NullOr(SkipReason),
  run_id: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  decided_at: Schema.NullOr(Timestamp)
})

export const ScheduleResponse = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  session_id: Schema.String,
  source_run_id: Schema.NullOr(Schema.String).annotate({ description: "the run whose request set the schedule (its instructions are the firings')" }),
  kind: Schema.Literals(["cron", "interval", "event", "autonomous"]),
  schedule: StoredSchedule.annotate({ description: "the schedule in canonical form" }),
  instructions: Schema.String,
  paused: Schema.Boolean,
  next_fire_at: Schema.NullOr(Timestamp).annotate({ description: "null while paused, and for an event schedule (it fires when triggered)" }),
  last_fired_at: Schema.NullOr(Timestamp),
  last_outcome: Schema.NullOr(FiringOutcome),
  last_reason: Schema.NullOr(SkipReason),
  last_run_id: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
})

const TriggerPayload = Schema.Unknown.check(Schema.makeFilter(
  (payload) => payload === undefined || jsonBytes(payload) <= MAX_TRIGGER_PAYLOAD_BYTES || `must be at most ${MAX_TRIGGER_PAYLOAD_BYTES} bytes of JSON`,
  { description: `any JSON value of at most ${MAX_TRIGGER_PAYLOAD_BYTES} bytes` }
))

export const TriggerRequest = Schema.Struct({
  payload: Schema.optional(TriggerPayload.annotate({ description: "handed to the run: added to its instructions as context (data, not instructions)" }))
})

export const ScheduleListResponse = Schema.Struct({ items: Schema.Array(ScheduleResponse), next_cursor: Schema.NullOr(Schema.String) })
export const FiringListResponse = Schema.Struct({ items: Schema.Array(FiringResponse), next_cursor: Schema.NullOr(Schema.String) })

const BooleanString = Schema.Literals(["true", "false"])

/** The query of the schedule list: a page, filtered by kind, paused, session and event. */
export const ListSchedulesQuery = {
  ...PageQuery,
  kind: Schema.optional(Schema.Literals(["cron", "interval", "event", "autonomous"])),
  paused: Schema.optional(BooleanString),
  session_id: Schema.optional(MaxString(64)),
  event: Schema.optional(MaxString(200))
}

/** The query of a schedule's firings: a page, of one outcome. */
export const ListFiringsQuery = { ...PageQuery, outcome: Schema.optional(FiringOutcome) }
