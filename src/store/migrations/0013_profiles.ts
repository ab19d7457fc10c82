/** Migration 0013: profiles (browser identities with encrypted saved state) and their interactive logins. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // `storage_state` is AES-256-GCM ciphertext (src/security/state-cipher.ts), `storage_key_id` names
  // the key it was sealed with. Nothing of the state is stored in clear.
  yield* sql`
    CREATE TABLE profiles (
      id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
      name text,
      customer_user_id text,
      state text NOT NULL DEFAULT 'active',
      last_used_at timestamptz,
      last_alive_at timestamptz,
      last_failure_reason text,
      proxy_country_code text,
      storage_state bytea,
      storage_key_id text,
      storage_saved_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX profiles_project ON profiles (project_id, id DESC)`
  yield* sql`CREATE INDEX profiles_customer ON profiles (project_id, customer_user_id) WHERE customer_user_id IS NOT NULL`
  // The lease: a profile is held by the open session that names it (checked under the profile's row lock).
  yield* sql`CREATE INDEX sessions_profile_open ON sessions (profile_id) WHERE profile_id IS NOT NULL AND status <> 'closed'`
  // One interactive login per (profile, site): where it starts, how its probe decides, what it found.
  yield* sql`
    CREATE TABLE profile_logins (
      profile_id text NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
      site_id text NOT NULL,
      start_url text NOT NULL,
      display_label text,
      session_id text,
      logged_in_selector text,
      logged_out_selector text,
      probe_result text,
      probed_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (profile_id, site_id)
    )`
})
