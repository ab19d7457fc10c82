import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE sessions (
      id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
      api_key_id text NOT NULL,
      status text NOT NULL,
      profile_id text,
      workspace_id text,
      latest_run_id text,
      llm_cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
      browser_cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
      proxy_cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      closed_at timestamptz
    )`
  yield* sql`CREATE INDEX sessions_project ON sessions (project_id, id DESC)`
  yield* sql`CREATE INDEX sessions_key_open ON sessions (api_key_id) WHERE status <> 'closed'`
  yield* sql`
    CREATE TABLE runs (
      id text PRIMARY KEY,
      session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
      project_id text NOT NULL,
      kind text NOT NULL DEFAULT 'do_anything',
      status text NOT NULL,
      terminal_reason text,
      expired boolean NOT NULL DEFAULT false,
      instructions text,
      request jsonb NOT NULL,
      output jsonb,
      error_code text,
      error_detail text,
      step_count integer NOT NULL DEFAULT 0,
      max_steps integer NOT NULL,
      model text,
      parent_run_id text,
      llm_cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
      feedback jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz,
      deadline_at timestamptz
    )`
  yield* sql`CREATE INDEX runs_session ON runs (session_id, id)`
  // The append-only event log: ids are per run and increase by one, written with the state change.
  yield* sql`
    CREATE TABLE run_events (
      run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      id bigint NOT NULL,
      type text NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (run_id, id)
    )`
  yield* sql`
    CREATE TABLE run_messages (
      id bigserial PRIMARY KEY,
      run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      content text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      consumed_at timestamptz
    )`
  yield* sql`
    CREATE TABLE input_requests (
      id text PRIMARY KEY,
      run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      prompt text NOT NULL,
      schema jsonb,
      status text NOT NULL DEFAULT 'pending',
      response jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      resolved_at timestamptz
    )`
  yield* sql`
    CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      project_id text NOT NULL,
      run_id text,
      url text NOT NULL,
      event_type text NOT NULL,
      payload jsonb NOT NULL,
      status text NOT NULL DEFAULT 'pending',
      attempts integer NOT NULL DEFAULT 0,
      last_status_code integer,
      last_error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      delivered_at timestamptz
    )`
})
