/**
 * Skills (src/domain/skill.ts): one row per project and name, and its versions (an update saves a
 * new one). A script skill's steps are a cached script's, with `{{param:name}}` where the caller's
 * arguments go and secret placeholders as written, never values.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE skills (
      id text PRIMARY KEY,
      project_id text NOT NULL,
      name text NOT NULL,
      version integer NOT NULL,
      call_count integer NOT NULL DEFAULT 0,
      last_used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (project_id, name)
    )`
  yield* sql`CREATE INDEX skills_project ON skills (project_id, id DESC)`
  yield* sql`
    CREATE TABLE skill_versions (
      skill_id text NOT NULL REFERENCES skills(id) ON DELETE CASCADE,
      version integer NOT NULL,
      description text NOT NULL,
      parameters jsonb NOT NULL,
      kind text NOT NULL CHECK (kind IN ('instructions', 'script')),
      instructions text,
      steps jsonb,
      source_run_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (skill_id, version)
    )`
})
