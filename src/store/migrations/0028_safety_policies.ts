/**
 * Safety boundary per project (src/safety/): which domains a DoAnything run may browse and which
 * actions need a person's confirmation through ask_human. No row: no boundary (any domain, no
 * confirmation). Domains are stored normalised (lower case, punycode, no trailing dot, no `*.`).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE safety_policies (
      project_id text PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
      -- Empty: any domain not denied. An entry matches itself and its subdomains.
      allowed_domains jsonb NOT NULL DEFAULT '[]'::jsonb,
      -- Wins over allowed_domains.
      denied_domains jsonb NOT NULL DEFAULT '[]'::jsonb,
      -- Action categories (payment, account_deletion, send_message) a person confirms first.
      confirm_actions jsonb NOT NULL DEFAULT '[]'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
})
