/**
 * Project secrets (src/secrets/): values a run may type into a page without the model seeing them.
 * The value is AES-256-GCM ciphertext (src/security/state-cipher.ts, the secret's id as additional
 * data), `value_key_id` names the key it was sealed with; a TOTP secret keeps its code's shape
 * (digits, period, algorithm) beside it, so reading the metadata never opens the value.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE project_secrets (
      id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
      -- What runs name (secrets: [...]) and placeholders carry ({{secret:name}}, {{totp:name}}).
      name text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('secret', 'totp')),
      value_sealed bytea NOT NULL,
      value_key_id text NOT NULL,
      -- Origins (https://example.com, https://*.example.com) where the value may be typed.
      origins jsonb NOT NULL,
      description text,
      totp_digits int,
      totp_period int,
      totp_algorithm text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      value_updated_at timestamptz NOT NULL DEFAULT now(),
      -- When a run last took the secret (it names it and started).
      last_used_at timestamptz,
      UNIQUE (project_id, name)
    )`
  yield* sql`CREATE INDEX project_secrets_project ON project_secrets (project_id, id DESC)`
})
