import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // What a key may do: `admin` (manage keys, read the webhook secret, and everything `run` may) or
  // `run` (the products only). Every key before this migration could manage keys, so existing rows
  // become `admin`; afterwards a row inserted without a scope gets the least privilege.
  yield* sql`ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'admin' CHECK (scope IN ('admin', 'run'))`
  yield* sql`ALTER TABLE api_keys ALTER COLUMN scope SET DEFAULT 'run'`
  // Audit only: the key that minted this one (null for the bootstrap and CLI keys). A minted key
  // does not depend on it: revoking the creator leaves the keys it created working.
  yield* sql`ALTER TABLE api_keys ADD COLUMN created_by_key_id text REFERENCES api_keys(id) ON DELETE SET NULL`
})
