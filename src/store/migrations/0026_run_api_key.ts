/**
 * The API key that started a run (src/store/run-admission.ts): runs in flight are capped per key
 * (WA_MAX_CONCURRENT_RUNS_PER_KEY) as well as per project. Null for runs from before (they count
 * for their project only) and for runs no key started (a schedule's firing, a monitor's tick).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE runs ADD COLUMN api_key_id text`
  // The admission's count of a key's standalone runs in flight.
  yield* sql`CREATE INDEX runs_api_key_in_flight ON runs (api_key_id, kind) WHERE api_key_id IS NOT NULL`
})
