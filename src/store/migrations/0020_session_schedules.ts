/** Scheduled DoAnything sessions (src/do-anything/schedules.ts). */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // One schedule per session; its row in `schedules` is owned by (session_schedule, id). `request`
  // is the DoAnything request each firing's run is made from (the one that set the schedule,
  // without `schedule`).
  yield* sql`
    CREATE TABLE session_schedules (
      id text PRIMARY KEY,
      project_id text NOT NULL,
      session_id text NOT NULL UNIQUE,
      source_run_id text,
      spec jsonb NOT NULL,
      instructions text NOT NULL,
      request jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX session_schedules_project ON session_schedules (project_id, id DESC)`
  // What became of each firing (timed slot or event trigger), once: `pending` until the handler
  // decides, then `run_created` (run_id) or `skipped` (reason). The key makes a slot decided once.
  yield* sql`
    CREATE TABLE session_schedule_firings (
      schedule_id text NOT NULL,
      slot_at timestamptz NOT NULL,
      project_id text NOT NULL,
      trigger text NOT NULL,
      payload jsonb,
      outcome text NOT NULL,
      reason text,
      run_id text,
      created_at timestamptz NOT NULL,
      decided_at timestamptz,
      source_key text UNIQUE,
      PRIMARY KEY (schedule_id, slot_at)
    )`
  yield* sql`CREATE INDEX session_schedule_firings_run ON session_schedule_firings (run_id) WHERE run_id IS NOT NULL`
  // Decided firings older than the retention are pruned; rows come in created_at order.
  yield* sql`CREATE INDEX session_schedule_firings_created ON session_schedule_firings USING brin (created_at)`
  // The run a firing made, so `scheduled_running` is one indexed count per project.
  // A Track monitor's notification may trigger a schedule (notify_channel kind `schedule`):
  // `source_key` (tick and type) makes a notification trigger it once.
  yield* sql`ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_channel_check`
  yield* sql`ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_channel_check
    CHECK (channel IN ('callback_url', 'global_webhook', 'console_inbox', 'schedule'))`
  yield* sql`ALTER TABLE runs ADD COLUMN schedule_id text`
  yield* sql`
    CREATE INDEX runs_scheduled_active ON runs (project_id)
    WHERE schedule_id IS NOT NULL AND status IN ('pending', 'running', 'awaiting_input', 'paused')`
})
