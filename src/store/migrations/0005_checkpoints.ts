import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The last completed step of a run, so another runner can resume it after this one died.
  // The execution that owns a run: a runner frozen past its lock expiry finds it taken over.
  yield* sql`ALTER TABLE runs ADD COLUMN executor text`
  yield* sql`
    CREATE TABLE run_checkpoints (
      run_id text PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
      step integer NOT NULL,
      history jsonb NOT NULL,
      url text,
      tabs jsonb NOT NULL DEFAULT '[]',
      dirty_form boolean NOT NULL DEFAULT false,
      storage_state jsonb,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
})
