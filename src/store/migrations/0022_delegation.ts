/**
 * Tables of delegation (src/delegation/): tenant access keys (AK/SK) with their secret sealed by
 * the service's secret key, the nonces of signed requests (replay protection shared by every node)
 * and delegation grants with their one-time code and their token (both stored as SHA-256).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE access_keys (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      name text,
      secret_sealed bytea NOT NULL,
      secret_key_id text NOT NULL,
      redirect_uris jsonb NOT NULL DEFAULT '[]',
      created_by_user_id text REFERENCES users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz,
      last_used_at timestamptz
    )`
  yield* sql`CREATE INDEX access_keys_tenant ON access_keys (tenant_id, id DESC)`
  // One row per signed request (access key, nonce), kept past the timestamp window: a replay meets it.
  yield* sql`
    CREATE TABLE signed_request_nonces (
      access_key_id text NOT NULL,
      nonce text NOT NULL,
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (access_key_id, nonce)
    )`
  yield* sql`CREATE INDEX signed_request_nonces_expiry ON signed_request_nonces (expires_at)`
  yield* sql`
    CREATE TABLE delegation_grants (
      id text PRIMARY KEY,
      access_key_id text NOT NULL REFERENCES access_keys(id) ON DELETE CASCADE,
      tenant_id text NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      agent text NOT NULL,
      scopes jsonb NOT NULL,
      redirect_uri text NOT NULL,
      state text NOT NULL,
      external_user_id text NOT NULL,
      expires_in int NOT NULL,
      requested_project_id text,
      project_id text REFERENCES projects(id) ON DELETE CASCADE,
      user_id text REFERENCES users(id) ON DELETE CASCADE,
      status text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'active', 'revoked')),
      audit_id text NOT NULL,
      consent_expires_at timestamptz NOT NULL,
      code_hash text,
      code_expires_at timestamptz,
      token_hash text UNIQUE,
      token_expires_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      decided_at timestamptz,
      completed_at timestamptz,
      revoked_at timestamptz,
      revoked_by_user_id text
    )`
  yield* sql`CREATE INDEX delegation_grants_user ON delegation_grants (user_id, id DESC)`
  yield* sql`CREATE INDEX delegation_grants_tenant ON delegation_grants (tenant_id, id DESC)`
})
