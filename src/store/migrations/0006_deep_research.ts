import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The phase of a DeepResearch run while it runs (brief, plan, hitl_outline, gather, ...).
  yield* sql`ALTER TABLE runs ADD COLUMN phase text`
  // Final files of a run (final.md, citations.json, confidence.json), one per name.
  yield* sql`
    CREATE TABLE run_artifacts (
      id text PRIMARY KEY,
      run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      name text NOT NULL,
      content_type text NOT NULL,
      content text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (run_id, name)
    )`
})
