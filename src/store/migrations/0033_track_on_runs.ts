/**
 * Track on the shared run tables (issue 26): a monitor's tick is a row of `runs` (kind
 * `track_tick`) and a monitor's event log is in `run_events`, the one event log. The rows of
 * `monitor_runs` and `monitor_events` move over, and the two tables become read-only views of the
 * same rows in their old shape (for operators' queries and bench/track-scale.ts).
 *
 * A tick as a run:
 * - `request` is what the tick was asked: `{monitor_id, trigger, slot_at}` (`slot_at` as the ISO
 *   text JavaScript writes, so one schedule slot has one tick run: unique per monitor and slot);
 * - `output` is what it found: `{n, changed, fired, snapshot_id, pages}` (`n` from its start on);
 * - its status is a run status: `running` from its creation (its start is `started_at`), `done`,
 *   `failed`, and `canceled` with terminal_reason `skipped` for a tick that did not run (the
 *   wire's `skipped`; src/track/monitor-store.ts);
 * - its model cost and fee are `llm_cost_usd` and `service_cost_usd`, like every run's.
 *
 * `run_events.run_id` names the log an event belongs to: a run's, or a monitor's (its id; the
 * monitor's ticks write there). So its reference to `runs` goes; a monitor's events and tick runs
 * are deleted with the monitor (src/track/monitor-store.ts `remove`).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE run_events DROP CONSTRAINT IF EXISTS run_events_run_id_fkey`
  yield* sql`
    INSERT INTO runs (id, session_id, project_id, kind, status, terminal_reason, request, output, error_code, error_detail,
      max_steps, llm_cost_usd, service_cost_usd, created_at, updated_at, started_at, finished_at)
    SELECT id, NULL, project_id, 'track_tick',
      CASE WHEN status = 'skipped' THEN 'canceled' ELSE status END,
      CASE WHEN status = 'skipped' THEN 'skipped' END,
      jsonb_build_object('monitor_id', monitor_id, 'trigger', trigger,
        'slot_at', to_char(slot_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
      jsonb_build_object('n', n, 'changed', changed, 'fired', fired, 'snapshot_id', snapshot_id, 'pages', pages),
      error_code, error_detail, 0, llm_cost_micros / 1000000.0, service_cost_micros / 1000000.0,
      created_at, coalesce(finished_at, started_at, created_at), started_at, finished_at
    FROM monitor_runs`
  yield* sql`
    INSERT INTO run_events (run_id, id, type, data, created_at)
    SELECT monitor_id, id, type, data, created_at FROM monitor_events`
  yield* sql`DROP TABLE monitor_events`
  yield* sql`DROP TABLE monitor_runs`
  // One tick run per schedule slot (run_now ticks have no slot), and a monitor's ticks newest first.
  yield* sql`
    CREATE UNIQUE INDEX runs_track_tick_slot ON runs ((request->>'monitor_id'), (request->>'slot_at'))
    WHERE kind = 'track_tick'`
  yield* sql`CREATE INDEX runs_track_tick_monitor ON runs ((request->>'monitor_id'), id DESC) WHERE kind = 'track_tick'`
  // The old tables' shape, read-only.
  yield* sql`
    CREATE VIEW monitor_runs AS
    SELECT id, request->>'monitor_id' AS monitor_id, project_id, (output->>'n')::int AS n, request->>'trigger' AS trigger,
      (request->>'slot_at')::timestamptz AS slot_at,
      CASE status WHEN 'canceled' THEN 'skipped' ELSE status END AS status,
      (output->>'changed')::boolean AS changed, (output->>'fired')::boolean AS fired, output->>'snapshot_id' AS snapshot_id,
      coalesce(output->'pages', '[]'::jsonb) AS pages, error_code, error_detail,
      round(llm_cost_usd * 1000000)::bigint AS llm_cost_micros, round(service_cost_usd * 1000000)::bigint AS service_cost_micros,
      created_at, started_at, finished_at
    FROM runs WHERE kind = 'track_tick'`
  yield* sql`
    CREATE VIEW monitor_events AS
    SELECT e.run_id AS monitor_id, e.id, e.type, e.data, e.created_at
    FROM run_events e WHERE e.run_id LIKE 'mon\\_%'`
})
