import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE projects (
      id text PRIMARY KEY,
      name text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE api_keys (
      id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
      user_id text,
      prefix text NOT NULL,
      name text,
      secret_hash text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now(),
      disabled_at timestamptz,
      grace_until timestamptz,
      last_used_at timestamptz
    )`
  yield* sql`CREATE INDEX api_keys_project ON api_keys (project_id, id DESC)`
  // One row per (project, key, Idempotency-Key): the first request's response, replayed for 24 h.
  yield* sql`
    CREATE TABLE idempotency_records (
      project_id text NOT NULL,
      api_key_id text NOT NULL,
      idempotency_key text NOT NULL,
      request_hash text NOT NULL,
      status integer,
      response_headers jsonb,
      response_body text,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, api_key_id, idempotency_key)
    )`
  yield* sql`CREATE INDEX idempotency_records_created ON idempotency_records (created_at)`
})
