/**
 * Tables of the notification channels: the outbox learns which monitor and channel a delivery is
 * for and which secret signs it; project webhook endpoints (`global_webhook`) and the console
 * inbox (`console_inbox`) get their tables.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // A delivery of a monitor's notification names the monitor and the channel it went out on;
  // `secret` signs it (a monitor's notify_secret, an endpoint's secret); NULL is the project's
  // webhook secret, as for every delivery before this migration.
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN monitor_id text`
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN channel text NOT NULL DEFAULT 'callback_url'
    CHECK (channel IN ('callback_url', 'global_webhook', 'console_inbox'))`
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN secret text`
  yield* sql`CREATE INDEX webhook_deliveries_monitor ON webhook_deliveries (project_id, monitor_id, id DESC) WHERE monitor_id IS NOT NULL`
  yield* sql`
    CREATE TABLE webhook_endpoints (
      id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
      url text NOT NULL,
      secret text NOT NULL,
      description text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX webhook_endpoints_project ON webhook_endpoints (project_id, id DESC)`
  // One notification per fired tick and type, however many times the tick is executed.
  yield* sql`
    CREATE TABLE inbox_notifications (
      id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
      monitor_id text NOT NULL,
      tick_id text NOT NULL,
      type text NOT NULL,
      title text NOT NULL,
      data jsonb NOT NULL,
      read_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (tick_id, type)
    )`
  yield* sql`CREATE INDEX inbox_notifications_project ON inbox_notifications (project_id, id DESC)`
  yield* sql`CREATE INDEX inbox_notifications_unread ON inbox_notifications (project_id, id DESC) WHERE read_at IS NULL`
})
