/**
 * Cached scripts (src/cache/): one row per project and task key (normalised instructions, start
 * origin, output_schema), and its versions (a healed replay saves a new one). Steps hold secret
 * placeholders as written, never values.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE cache_scripts (
      id text PRIMARY KEY,
      project_id text NOT NULL,
      cache_key text NOT NULL,
      instructions text NOT NULL,
      start_origin text,
      output_schema jsonb,
      version integer NOT NULL,
      hit_count integer NOT NULL DEFAULT 0,
      heal_count integer NOT NULL DEFAULT 0,
      last_used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (project_id, cache_key)
    )`
  yield* sql`CREATE INDEX cache_scripts_project ON cache_scripts (project_id, id DESC)`
  yield* sql`
    CREATE TABLE cache_script_versions (
      script_id text NOT NULL REFERENCES cache_scripts(id) ON DELETE CASCADE,
      version integer NOT NULL,
      steps jsonb NOT NULL,
      source_run_id text,
      -- Steps the model took again in the replay that made this version (0 for the first).
      healed_steps integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (script_id, version)
    )`
})
