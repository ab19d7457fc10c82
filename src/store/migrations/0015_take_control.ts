/** Take control (src/control/take-control.ts): one row per control URL issued for a run. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // status: pending (URL issued, nobody connected), active (a person holds control, run paused),
  // released, expired (nobody connected in time), superseded (a newer URL replaced it), ended
  // (the run ended while it was pending or active).
  yield* sql`
    CREATE TABLE control_grants (
      id text PRIMARY KEY,
      run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      session_id text NOT NULL,
      reason text,
      status text NOT NULL,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      connected_at timestamptz,
      ended_at timestamptz
    )`
  yield* sql`CREATE INDEX control_grants_run ON control_grants (run_id, id DESC)`
  yield* sql`CREATE INDEX control_grants_open ON control_grants (run_id) WHERE status IN ('pending', 'active')`
})
