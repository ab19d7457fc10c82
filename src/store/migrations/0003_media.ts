import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Secrets shared by every node (URL signing); generated once by the database itself.
  yield* sql`CREATE TABLE service_secrets (name text PRIMARY KEY, value text NOT NULL)`
  yield* sql`INSERT INTO service_secrets (name, value) VALUES ('url_signing', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''))`
  // The Standard Webhooks secret a project's callbacks are signed with (whsec_ + base64 key).
  yield* sql`ALTER TABLE projects ADD COLUMN webhook_secret text NOT NULL
    DEFAULT 'whsec_' || encode(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'), 'base64')`
  // One terminal callback per run, however many paths report the end.
  yield* sql`CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (run_id, event_type) WHERE run_id IS NOT NULL`
  yield* sql`
    CREATE TABLE screenshots (
      id text PRIMARY KEY,
      run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      data bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
})
