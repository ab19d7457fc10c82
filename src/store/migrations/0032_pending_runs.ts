/**
 * Pending runs by age: the sweep that dispatches a run whose creating request died between its
 * commit and its Execute message (src/runs/undispatched.ts) reads only these few rows.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX runs_pending ON runs (created_at) WHERE status = 'pending'`
})
