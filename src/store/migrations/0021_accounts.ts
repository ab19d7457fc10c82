/**
 * Tables of console accounts (src/accounts/): users and their sign-in identities, console
 * sessions, tenants and their members, invitations, login throttling counters, and bug reports.
 * Projects now belong to a tenant: every existing project (and every project made without naming
 * one, e.g. `wa projects create` and the first-start bootstrap) goes to the `default` tenant.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** The tenant every existing project and user joins. */
const DEFAULT_TENANT_ID = "ten_default"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE users (
      id text PRIMARY KEY,
      email text NOT NULL,
      display_name text,
      password_hash text,
      created_at timestamptz NOT NULL DEFAULT now(),
      password_changed_at timestamptz NOT NULL DEFAULT now()
    )`
  // Emails compare case-insensitively: one account per address however it is typed.
  yield* sql`CREATE UNIQUE INDEX users_email ON users (lower(email))`
  // How a user signs in: 'password' (subject: the email) now; an SSO provider id later.
  yield* sql`
    CREATE TABLE auth_identities (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      provider text NOT NULL,
      subject text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (provider, subject)
    )`
  yield* sql`CREATE INDEX auth_identities_user ON auth_identities (user_id)`
  // Only the SHA-256 of a session token is stored.
  yield* sql`
    CREATE TABLE console_sessions (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      token_hash text NOT NULL UNIQUE,
      kind text NOT NULL CHECK (kind IN ('cookie', 'bearer')),
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      revoked_at timestamptz
    )`
  yield* sql`CREATE INDEX console_sessions_user ON console_sessions (user_id) WHERE revoked_at IS NULL`
  yield* sql`
    CREATE TABLE tenants (
      id text PRIMARY KEY,
      name text NOT NULL,
      created_by_user_id text REFERENCES users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX tenants_creator ON tenants (created_by_user_id)`
  yield* sql`INSERT INTO tenants (id, name) VALUES (${DEFAULT_TENANT_ID}, 'default')`
  yield* sql`
    CREATE TABLE tenant_members (
      tenant_id text NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      auth_identity_id text REFERENCES auth_identities(id) ON DELETE SET NULL,
      role text NOT NULL CHECK (role IN ('admin', 'member')),
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
      invited_by_user_id text REFERENCES users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, user_id)
    )`
  yield* sql`CREATE INDEX tenant_members_user ON tenant_members (user_id)`
  // Only the SHA-256 of an invitation token is stored; status 'expired' is derived on read.
  yield* sql`
    CREATE TABLE invitations (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      email text NOT NULL,
      role text NOT NULL CHECK (role IN ('admin', 'member')),
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'revoked')),
      token_hash text NOT NULL UNIQUE,
      invited_by text REFERENCES users(id) ON DELETE SET NULL,
      expires_at timestamptz NOT NULL,
      accepted_at timestamptz,
      accepted_by_user_id text REFERENCES users(id) ON DELETE SET NULL,
      revoked_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX invitations_tenant ON invitations (tenant_id, id DESC)`
  // Sign-in attempts per account and per address in fixed windows (src/accounts/login-throttle.ts).
  yield* sql`
    CREATE TABLE login_attempts (
      scope_key text NOT NULL,
      window_start timestamptz NOT NULL,
      attempts int NOT NULL DEFAULT 0,
      PRIMARY KEY (scope_key, window_start)
    )`
  // SSO sign-ins under way (src/accounts/sso.ts): one row per started authorization, used once.
  yield* sql`
    CREATE TABLE sso_logins (
      state text PRIMARY KEY,
      provider_id text NOT NULL,
      code_verifier text NOT NULL,
      nonce text NOT NULL,
      return_to text NOT NULL,
      expires_at timestamptz NOT NULL
    )`
  yield* sql`ALTER TABLE projects ADD COLUMN tenant_id text NOT NULL DEFAULT 'ten_default' REFERENCES tenants(id)`
  yield* sql`CREATE INDEX projects_tenant ON projects (tenant_id, id DESC)`
  yield* sql`ALTER TABLE api_keys ADD CONSTRAINT api_keys_user FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE SET NULL`
  yield* sql`
    CREATE TABLE bug_reports (
      id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
      user_id text REFERENCES users(id) ON DELETE SET NULL,
      api_key_id text,
      message text NOT NULL,
      page_path text NOT NULL,
      screenshot_data_url text,
      input_method text NOT NULL,
      viewport_width int,
      viewport_height int,
      user_agent text,
      status text NOT NULL DEFAULT 'open',
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX bug_reports_project ON bug_reports (project_id, id DESC)`
})
