import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Deliveries are an outbox: a dispatcher on any node claims the due ones (SKIP LOCKED) and
  // records each attempt, so retries survive a restart and a failed delivery can be retried.
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN next_attempt_at timestamptz`
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now()`
  // Rows left pending by the in-process retries of earlier versions are due now.
  yield* sql`UPDATE webhook_deliveries SET next_attempt_at = now() WHERE status IN ('pending', 'retrying')`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status IN ('pending', 'retrying')`
  yield* sql`CREATE INDEX webhook_deliveries_project ON webhook_deliveries (project_id, id DESC)`
})
