/**
 * Schema migrations, applied in order inside one transaction each at start and by `wa migrate`.
 * Add a new entry for every change; never edit one that has shipped.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Migrator } from "effect/sql"
import { m0010_schedules, m0020_session_schedules } from "./migrations/schedules.ts"
import { m0012_track } from "./migrations/track.ts"
import { m0015_take_control } from "./migrations/take-control.ts"
import { m0011_notification_channels } from "./migrations/notification-channels.ts"
import { m0013_profiles } from "./migrations/profiles.ts"
import { m0014_workspaces } from "./migrations/workspaces.ts"
import { m0016_recordings } from "./migrations/recordings.ts"
import { m0017_billing } from "./migrations/billing.ts"
import { m0018_charges } from "./migrations/charges.ts"
import { m0019_plans } from "./migrations/plans.ts"
import { m0025_credit_holds } from "./migrations/credit-holds.ts"
import { m0021_accounts } from "./migrations/accounts.ts"
import { m0022_delegation } from "./migrations/delegation.ts"
import { m0023_email_verification } from "./migrations/email-verification.ts"

const m0001_foundation = Effect.gen(function*() {
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

const m0002_do_anything = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE sessions (
      id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
      api_key_id text NOT NULL,
      status text NOT NULL,
      profile_id text,
      workspace_id text,
      latest_run_id text,
      llm_cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
      browser_cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
      proxy_cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      closed_at timestamptz
    )`
  yield* sql`CREATE INDEX sessions_project ON sessions (project_id, id DESC)`
  yield* sql`CREATE INDEX sessions_key_open ON sessions (api_key_id) WHERE status <> 'closed'`
  yield* sql`
    CREATE TABLE runs (
      id text PRIMARY KEY,
      session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
      project_id text NOT NULL,
      kind text NOT NULL DEFAULT 'do_anything',
      status text NOT NULL,
      terminal_reason text,
      expired boolean NOT NULL DEFAULT false,
      instructions text,
      request jsonb NOT NULL,
      output jsonb,
      error_code text,
      error_detail text,
      step_count integer NOT NULL DEFAULT 0,
      max_steps integer NOT NULL,
      model text,
      parent_run_id text,
      llm_cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
      feedback jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz,
      deadline_at timestamptz
    )`
  yield* sql`CREATE INDEX runs_session ON runs (session_id, id)`
  // The append-only event log: ids are per run and increase by one, written with the state change.
  yield* sql`
    CREATE TABLE run_events (
      run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      id bigint NOT NULL,
      type text NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (run_id, id)
    )`
  yield* sql`
    CREATE TABLE run_messages (
      id bigserial PRIMARY KEY,
      run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      content text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      consumed_at timestamptz
    )`
  yield* sql`
    CREATE TABLE input_requests (
      id text PRIMARY KEY,
      run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      prompt text NOT NULL,
      schema jsonb,
      status text NOT NULL DEFAULT 'pending',
      response jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      resolved_at timestamptz
    )`
  yield* sql`
    CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      project_id text NOT NULL,
      run_id text,
      url text NOT NULL,
      event_type text NOT NULL,
      payload jsonb NOT NULL,
      status text NOT NULL DEFAULT 'pending',
      attempts integer NOT NULL DEFAULT 0,
      last_status_code integer,
      last_error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      delivered_at timestamptz
    )`
})

const m0003_media = Effect.gen(function*() {
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

const m0004_run_kinds = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // WebSearch and DeepResearch runs need no browser session.
  yield* sql`ALTER TABLE runs ALTER COLUMN session_id DROP NOT NULL`
  yield* sql`CREATE INDEX runs_project_kind ON runs (project_id, kind, id DESC)`
})

const m0005_checkpoints = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The last completed step of a run, so another runner can resume it after this one died.
  // The execution that owns a run: a runner frozen past its lock expiry finds it taken over.
  yield* sql`ALTER TABLE runs ADD COLUMN executor text`
  yield* sql`
    CREATE TABLE run_checkpoints (
      run_id text PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
      step integer NOT NULL,
      history jsonb NOT NULL,
      url text,
      tabs jsonb NOT NULL DEFAULT '[]',
      dirty_form boolean NOT NULL DEFAULT false,
      storage_state jsonb,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
})

const m0006_deep_research = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The phase of a DeepResearch run while it runs (brief, plan, hitl_outline, gather, ...).
  yield* sql`ALTER TABLE runs ADD COLUMN phase text`
  // Final files of a run (final.md, citations.json, confidence.json), one per name.
  yield* sql`
    CREATE TABLE run_artifacts (
      id text PRIMARY KEY,
      run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      name text NOT NULL,
      content_type text NOT NULL,
      content text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (run_id, name)
    )`
})

const m0007_key_scopes = Effect.gen(function*() {
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

const m0008_idempotency_lease = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Until when an in-flight Idempotency-Key claim holds; the request renews it while it runs, so
  // a claim left by a dead process expires quickly instead of blocking the key for 24 hours.
  yield* sql`ALTER TABLE idempotency_records ADD COLUMN locked_until timestamptz`
})

const m0024_idempotency_resource = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The resource a keyed create made, written in the create's own transaction (src/store/keyed-create.ts),
  // and the attempt holding the claim: a retry after a crash finds the resource instead of making another.
  yield* sql`ALTER TABLE idempotency_records ADD COLUMN resource_id text, ADD COLUMN attempt text`
})

const m0009_delivery_outbox = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Deliveries are an outbox: a dispatcher on any node claims the due ones (SKIP LOCKED) and
  // records each attempt, so retries survive a restart and a failed delivery can be retried.
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN next_attempt_at timestamptz`
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now()`
  // Rows left pending by the in-process retries of earlier versions are due now.
  yield* sql`UPDATE webhook_deliveries SET next_attempt_at = now() WHERE status IN ('pending', 'retrying')`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status IN ('pending', 'retrying')`
  yield* sql`CREATE INDEX webhook_deliveries_project ON webhook_deliveries (project_id, id DESC)`
})

const all = {
  "0001_foundation": m0001_foundation,
  "0002_do_anything": m0002_do_anything,
  "0003_media": m0003_media,
  "0004_run_kinds": m0004_run_kinds,
  "0005_checkpoints": m0005_checkpoints,
  "0006_deep_research": m0006_deep_research,
  "0007_key_scopes": m0007_key_scopes,
  "0008_idempotency_lease": m0008_idempotency_lease,
  "0009_delivery_outbox": m0009_delivery_outbox,
  "0010_schedules": m0010_schedules,
  "0011_notification_channels": m0011_notification_channels,
  "0012_track": m0012_track,
  "0013_profiles": m0013_profiles,
  "0014_workspaces": m0014_workspaces,
  "0015_take_control": m0015_take_control,
  "0016_recordings": m0016_recordings,
  "0017_billing": m0017_billing,
  "0018_charges": m0018_charges,
  "0019_plans": m0019_plans,
  "0020_session_schedules": m0020_session_schedules,
  "0021_accounts": m0021_accounts,
  "0022_delegation": m0022_delegation,
  "0023_email_verification": m0023_email_verification,
  "0024_idempotency_resource": m0024_idempotency_resource,
  "0025_credit_holds": m0025_credit_holds
}

export const migrations = Migrator.fromRecord(all)

/** How many migrations this build has; /readyz waits until all are applied. */
export const migrationCount = Object.keys(all).length
