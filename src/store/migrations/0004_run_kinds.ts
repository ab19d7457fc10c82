import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // WebSearch and DeepResearch runs need no browser session.
  yield* sql`ALTER TABLE runs ALTER COLUMN session_id DROP NOT NULL`
  yield* sql`CREATE INDEX runs_project_kind ON runs (project_id, kind, id DESC)`
})
