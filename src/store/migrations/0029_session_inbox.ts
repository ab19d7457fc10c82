/**
 * Session inboxes (agentmail, src/mail/inbound/): mail received by the SMTP listener for
 * `<session id>@<WA_MAIL_DOMAIN>`. The body is kept as text (and the HTML part, bounded by the
 * listener's size cap), with the links and one-time codes found in it; attachments go to the
 * session's workspace and are listed here by the name they were saved under (or why not).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE session_inbox_messages (
      id text PRIMARY KEY,
      session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
      project_id text NOT NULL,
      -- The run in progress when it arrived (its run.email_received event), if any.
      run_id text,
      from_address text NOT NULL,
      to_address text NOT NULL,
      subject text NOT NULL,
      message_id text,
      text_body text NOT NULL,
      html_body text,
      links jsonb NOT NULL,
      codes jsonb NOT NULL,
      -- [{filename, content_type, size_bytes, saved_as | null, note | null}]
      attachments jsonb NOT NULL,
      size_bytes integer NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX session_inbox_messages_session ON session_inbox_messages (session_id, id DESC)`
})
