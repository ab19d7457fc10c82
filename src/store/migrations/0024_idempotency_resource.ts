import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The resource a keyed create made, written in the create's own transaction (src/store/keyed-create.ts),
  // and the attempt holding the claim: a retry after a crash finds the resource instead of making another.
  yield* sql`ALTER TABLE idempotency_records ADD COLUMN resource_id text, ADD COLUMN attempt text`
})
