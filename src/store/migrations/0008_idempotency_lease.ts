import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Until when an in-flight Idempotency-Key claim holds; the request renews it while it runs, so
  // a claim left by a dead process expires quickly instead of blocking the key for 24 hours.
  yield* sql`ALTER TABLE idempotency_records ADD COLUMN locked_until timestamptz`
})
