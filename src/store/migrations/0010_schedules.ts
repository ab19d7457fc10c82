import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // One schedule per owner (a monitor, a scheduled session). `spec` is the canonical form of
  // src/domain/schedule-spec.ts; interval slots are anchor_at + k * interval. next_fire_at is the slot
  // the scheduler fires next; NULL while paused.
  yield* sql`
    CREATE TABLE schedules (
      owner_kind text NOT NULL,
      owner_id text NOT NULL,
      spec jsonb NOT NULL,
      anchor_at timestamptz NOT NULL,
      next_fire_at timestamptz,
      paused boolean NOT NULL DEFAULT false,
      last_slot_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (owner_kind, owner_id)
    )`
  yield* sql`CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE next_fire_at IS NOT NULL`
  // A firing per (owner, slot), recorded in the transaction that advances next_fire_at: the key
  // makes a slot fire once whatever the number of schedulers. Until dispatched_at is set, any
  // scheduler may dispatch it again from retry_at on (its lease, then its backoff).
  yield* sql`
    CREATE TABLE schedule_firings (
      owner_kind text NOT NULL,
      owner_id text NOT NULL,
      slot_at timestamptz NOT NULL,
      fired_at timestamptz NOT NULL,
      attempts integer NOT NULL DEFAULT 1,
      retry_at timestamptz NOT NULL,
      dispatched_at timestamptz,
      last_error text,
      PRIMARY KEY (owner_kind, owner_id, slot_at)
    )`
  yield* sql`CREATE INDEX schedule_firings_undispatched ON schedule_firings (retry_at) WHERE dispatched_at IS NULL`
  // Rows are appended in fired_at order, so a BRIN index finds the old ones to prune at little cost.
  yield* sql`CREATE INDEX schedule_firings_fired ON schedule_firings USING brin (fired_at)`
})
