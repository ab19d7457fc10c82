/** Tables of Track: monitors, their event log, tick runs and snapshots. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE monitors (
      id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects(id),
      created_by_key_id text,
      status text NOT NULL,
      status_reason text,
      intent_text text NOT NULL,
      notify_channel jsonb NOT NULL,
      notify_secret text NOT NULL,
      schedule jsonb,
      target_urls jsonb,
      extraction_schema jsonb,
      trigger_dsl jsonb,
      stop_condition_dsl jsonb,
      profile_id text,
      baseline_extracted jsonb,
      baseline_extracted_at timestamptz,
      last_tick_at timestamptz,
      last_tick_n integer NOT NULL DEFAULT 0,
      consecutive_failures integer NOT NULL DEFAULT 0,
      last_snapshot_id text,
      alignment jsonb NOT NULL DEFAULT '[]',
      pending_question jsonb,
      -- The id of the monitor's newest event: an event takes the next one in the statement that
      -- writes it (the row update serializes writers without a separate lock).
      event_seq bigint NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX monitors_project ON monitors (project_id, id DESC)`
  // The monitor's append-only event log: ids per monitor, increasing by one (SSE Last-Event-ID).
  yield* sql`
    CREATE TABLE monitor_events (
      monitor_id text NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
      id bigint NOT NULL,
      type text NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (monitor_id, id)
    )`
  // A tick run: one per schedule slot (unique), any number by run_now (slot_at null).
  yield* sql`
    CREATE TABLE monitor_runs (
      id text PRIMARY KEY,
      monitor_id text NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
      project_id text NOT NULL,
      n integer,
      trigger text NOT NULL,
      slot_at timestamptz,
      status text NOT NULL DEFAULT 'running',
      changed boolean,
      fired boolean,
      snapshot_id text,
      pages jsonb NOT NULL DEFAULT '[]',
      error_code text,
      error_detail text,
      llm_cost_micros bigint NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz,
      UNIQUE (monitor_id, slot_at)
    )`
  yield* sql`CREATE INDEX monitor_runs_monitor ON monitor_runs (monitor_id, id DESC)`
  yield* sql`
    CREATE TABLE monitor_snapshots (
      id text PRIMARY KEY,
      monitor_id text NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
      run_id text NOT NULL UNIQUE,
      n integer NOT NULL,
      content_hash text NOT NULL,
      extracted jsonb,
      text text NOT NULL,
      pages jsonb NOT NULL,
      diff jsonb,
      changed boolean NOT NULL,
      fetched_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX monitor_snapshots_monitor ON monitor_snapshots (monitor_id, id DESC)`
})
