/**
 * Durable schedules in PostgreSQL: the schedules (one per owner) and their firings (one per owner
 * and slot). Rows are decoded through Schema; the rules (which slot comes next, leases, backoff,
 * dispatch) are the Schedules service's (src/schedules/schedules.ts). Time is always passed in
 * (the Effect Clock's), never SQL's now().
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { StoredSchedule } from "../domain/schedule-spec.ts"
import { withMethodSpans } from "../observability/spans.ts"

/** Who a schedule belongs to: a product's kind (`monitor`) and the owner's id in it. */
export interface ScheduleOwner {
  readonly kind: string
  readonly id: string
}

export const FiringRow = Schema.Struct({ owner_kind: Schema.String, owner_id: Schema.String, slot_at: Schema.Date })
export type FiringRow = typeof FiringRow.Type
const decodeFiring = Schema.decodeUnknownSync(FiringRow)
const decodeRetry = Schema.decodeUnknownSync(Schema.Struct({ ...FiringRow.fields, attempts: Schema.Number }))
const decodeDueSchedule = Schema.decodeUnknownSync(Schema.Struct({
  owner_kind: Schema.String,
  owner_id: Schema.String,
  spec: StoredSchedule,
  anchor_at: Schema.Date,
  next_fire_at: Schema.Date
}))
const decodeNextDue = Schema.decodeUnknownSync(Schema.Struct({ due: Schema.NullOr(Schema.Date) }))
const ScheduleRow = Schema.Struct({
  spec: StoredSchedule,
  next_fire_at: Schema.NullOr(Schema.Date),
  paused: Schema.Boolean,
  last_slot_at: Schema.NullOr(Schema.Date),
  anchor_at: Schema.Date
})
export type ScheduleRow = typeof ScheduleRow.Type
const decodeSchedule = Schema.decodeUnknownSync(ScheduleRow)

/**
 * Records a firing for `slot` outside the timed slots (an event trigger), for the next scheduler
 * pass of any node to dispatch with the same lease and retries as a timed one: attempts 0 and
 * retry_at now, so the pass's retry claim takes it (and counts it as attempt 1). SQL only, to run
 * in the caller's transaction; a slot recorded already is left as it is.
 */
export const recordQueuedFiring = (owner: ScheduleOwner, slot: Date, at: Date) =>
  SqlClient.SqlClient.use((sql) =>
    sql`
      INSERT INTO schedule_firings (owner_kind, owner_id, slot_at, fired_at, attempts, retry_at)
      VALUES (${owner.kind}, ${owner.id}, ${slot}, ${at}, 0, ${at})
      ON CONFLICT DO NOTHING`
  )

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const key = (owner: ScheduleOwner) => sql`owner_kind = ${owner.kind} AND owner_id = ${owner.id}`
  return ScheduleStore.of(withMethodSpans("ScheduleStore", {
    claimDue: ({ kinds, at, batch, retryAt, nextOf }) =>
      sql.withTransaction(Effect.gen(function*() {
        const due = (yield* sql`
          SELECT owner_kind, owner_id, spec, anchor_at, next_fire_at FROM schedules
          WHERE next_fire_at <= ${at} AND owner_kind IN ${sql.in(kinds)}
          ORDER BY next_fire_at
          LIMIT ${batch}
          FOR UPDATE SKIP LOCKED`).map((row) => decodeDueSchedule(row))
        if (due.length === 0) return { claimed: 0, fresh: [], stopped: [] }
        const advanced = due.map((row) => ({
          owner_kind: row.owner_kind,
          owner_id: row.owner_id,
          slot_at: row.next_fire_at.toISOString(),
          next_fire_at: nextOf(row.spec, row.anchor_at)?.toISOString() ?? null
        }))
        // The data-modifying CTE runs whether or not the INSERT refers to it.
        const fresh = yield* sql`
          WITH u AS (
            SELECT * FROM jsonb_to_recordset(${JSON.stringify(advanced)}::jsonb)
              AS u(owner_kind text, owner_id text, slot_at timestamptz, next_fire_at timestamptz)
          ), advanced AS (
            UPDATE schedules s SET next_fire_at = u.next_fire_at, last_slot_at = u.slot_at, updated_at = ${at}
            FROM u WHERE s.owner_kind = u.owner_kind AND s.owner_id = u.owner_id
          )
          INSERT INTO schedule_firings (owner_kind, owner_id, slot_at, fired_at, retry_at)
          SELECT owner_kind, owner_id, slot_at, ${at}, ${retryAt} FROM u
          ON CONFLICT DO NOTHING
          RETURNING owner_kind, owner_id, slot_at`
        return {
          claimed: due.length,
          fresh: fresh.map((row) => decodeFiring(row)),
          stopped: advanced.filter((row) => row.next_fire_at === null).map((row) => ({ kind: row.owner_kind, id: row.owner_id }))
        }
      })).pipe(Effect.orDie),
    claimRetries: ({ kinds, at, batch, graceMs, maxBackoffExponent }) =>
      sql`
        UPDATE schedule_firings f
        SET attempts = f.attempts + 1,
          retry_at = ${at}::timestamptz + make_interval(secs => ${graceMs / 1000}::double precision * power(2, least(f.attempts, ${maxBackoffExponent})))
        FROM (
          SELECT owner_kind, owner_id, slot_at FROM schedule_firings
          WHERE dispatched_at IS NULL AND retry_at <= ${at} AND owner_kind IN ${sql.in(kinds)}
          ORDER BY retry_at
          LIMIT ${batch}
          FOR UPDATE SKIP LOCKED
        ) d
        WHERE f.owner_kind = d.owner_kind AND f.owner_id = d.owner_id AND f.slot_at = d.slot_at
        RETURNING f.owner_kind, f.owner_id, f.slot_at, f.attempts`.pipe(Effect.map((rows) => rows.map((row) => decodeRetry(row))), Effect.orDie),
    markDispatched: (firings, at) =>
      firings.length === 0 ? Effect.void : sql`
        UPDATE schedule_firings f SET dispatched_at = ${at}, last_error = NULL
        FROM jsonb_to_recordset(${JSON.stringify(firings.map((f) => ({ owner_kind: f.owner_kind, owner_id: f.owner_id, slot_at: f.slot_at.toISOString() })))}::jsonb)
          AS u(owner_kind text, owner_id text, slot_at timestamptz)
        WHERE f.owner_kind = u.owner_kind AND f.owner_id = u.owner_id AND f.slot_at = u.slot_at`.pipe(Effect.asVoid, Effect.orDie),
    markFailed: (firing, error) =>
      sql`
        UPDATE schedule_firings SET last_error = ${error}
        WHERE owner_kind = ${firing.owner_kind} AND owner_id = ${firing.owner_id} AND slot_at = ${firing.slot_at}`.pipe(Effect.asVoid, Effect.orDie),
    nextDue: (kinds) =>
      sql`
        SELECT least(
          (SELECT min(next_fire_at) FROM schedules WHERE next_fire_at IS NOT NULL AND owner_kind IN ${sql.in(kinds)}),
          (SELECT min(retry_at) FROM schedule_firings WHERE dispatched_at IS NULL AND owner_kind IN ${sql.in(kinds)})
        ) AS due`.pipe(Effect.map((rows) => rows[0] === undefined ? null : decodeNextDue(rows[0]).due), Effect.orDie),
    prune: (firedBefore, limit) =>
      sql`
        DELETE FROM schedule_firings WHERE ctid IN (
          SELECT ctid FROM schedule_firings
          WHERE fired_at < ${firedBefore} AND dispatched_at IS NOT NULL
          LIMIT ${limit}
        )`.pipe(Effect.asVoid, Effect.orDie),
    upsert: (owner, schedule) =>
      sql`
        INSERT INTO schedules (owner_kind, owner_id, spec, anchor_at, next_fire_at, paused, created_at, updated_at)
        VALUES (${owner.kind}, ${owner.id}, ${JSON.stringify(schedule.spec)}::jsonb, ${schedule.anchor}, ${schedule.next}, ${schedule.paused}, ${schedule.at}, ${schedule.at})
        ON CONFLICT (owner_kind, owner_id) DO UPDATE SET
          spec = EXCLUDED.spec, anchor_at = EXCLUDED.anchor_at, next_fire_at = EXCLUDED.next_fire_at,
          paused = EXCLUDED.paused, updated_at = EXCLUDED.updated_at`.pipe(Effect.asVoid, Effect.orDie),
    pause: (owner, at) =>
      sql`
        UPDATE schedules SET paused = true, next_fire_at = NULL, updated_at = ${at}
        WHERE ${key(owner)} RETURNING owner_id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
    unpause: (owner, next, at) =>
      sql`
        UPDATE schedules SET paused = false, next_fire_at = ${next}, updated_at = ${at}
        WHERE ${key(owner)} AND paused`.pipe(Effect.asVoid, Effect.orDie),
    remove: (owner) =>
      Effect.gen(function*() {
        yield* sql`DELETE FROM schedules WHERE ${key(owner)}`
        yield* sql`DELETE FROM schedule_firings WHERE ${key(owner)}`
      }).pipe(Effect.orDie),
    get: (owner) =>
      sql`SELECT spec, next_fire_at, paused, last_slot_at, anchor_at FROM schedules WHERE ${key(owner)}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : decodeSchedule(rows[0])),
        Effect.orDie
      )
  }))
})

export class ScheduleStore extends Context.Service<ScheduleStore, {
  /**
   * Claims due schedules of `kinds` (FOR UPDATE SKIP LOCKED, at most `batch`), records a firing per
   * schedule for its slot (leased until `retryAt`; a slot recorded already is not returned) and
   * advances next_fire_at to `nextOf` (null: the schedule stops, listed in `stopped`), in one
   * transaction.
   */
  readonly claimDue: (input: {
    readonly kinds: ReadonlyArray<string>
    readonly at: Date
    readonly batch: number
    readonly retryAt: Date
    readonly nextOf: (spec: StoredSchedule, anchorAt: Date) => Date | undefined | null
  }) => Effect.Effect<{ readonly claimed: number; readonly fresh: ReadonlyArray<FiringRow>; readonly stopped: ReadonlyArray<ScheduleOwner> }>
  /** Leases again the undispatched firings whose lease ran out, with backoff grace * 2^min(attempts, max). */
  readonly claimRetries: (input: {
    readonly kinds: ReadonlyArray<string>
    readonly at: Date
    readonly batch: number
    readonly graceMs: number
    readonly maxBackoffExponent: number
  }) => Effect.Effect<ReadonlyArray<FiringRow & { readonly attempts: number }>>
  /** Marks firings dispatched, in one statement. */
  readonly markDispatched: (firings: ReadonlyArray<FiringRow>, at: Date) => Effect.Effect<void>
  readonly markFailed: (firing: FiringRow, error: string) => Effect.Effect<void>
  /** The next slot or lease end of `kinds`, if any. */
  readonly nextDue: (kinds: ReadonlyArray<string>) => Effect.Effect<Date | null>
  /** Deletes dispatched firings fired before `firedBefore`, at most `limit`. */
  readonly prune: (firedBefore: Date, limit: number) => Effect.Effect<void>
  /** Creates or replaces the owner's schedule (joins the caller's transaction). */
  readonly upsert: (owner: ScheduleOwner, schedule: {
    readonly spec: StoredSchedule
    readonly anchor: Date
    readonly next: Date | null
    readonly paused: boolean
    readonly at: Date
  }) => Effect.Effect<void>
  /** Pauses (next_fire_at NULL); false when the owner has no schedule. */
  readonly pause: (owner: ScheduleOwner, at: Date) => Effect.Effect<boolean>
  /** Unpauses a paused schedule with its next slot. */
  readonly unpause: (owner: ScheduleOwner, next: Date | null, at: Date) => Effect.Effect<void>
  /** Deletes the schedule and its firings. */
  readonly remove: (owner: ScheduleOwner) => Effect.Effect<void>
  readonly get: (owner: ScheduleOwner) => Effect.Effect<ScheduleRow | undefined>
}>()("wa/schedules/ScheduleStore") {
  /** The store on the SqlClient in context (what the scheduler builds itself with). */
  static readonly make = make
  static readonly layer = Layer.effect(ScheduleStore, make)
}
