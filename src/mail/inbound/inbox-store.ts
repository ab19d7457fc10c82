/**
 * Session inboxes in PostgreSQL (table session_inbox_messages, migration 0029).
 *
 * A session has an inbox when the run that created it did not say `agentmail: false` and the
 * service has a mail domain: WA_MAIL_DOMAIN, or `agents.localhost` when WA_SMTP_LISTEN is set
 * without it. With neither, the service cannot receive mail, so no session is given an address
 * (`inbox_address` is null and the mail tools are not offered). The address is
 * `<session id>@<domain>`; a closed session's address refuses mail.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig, type AppConfigShape } from "../../config/config.ts"
import { makeId } from "../../domain/ids.ts"
import { withMethodSpans } from "../../observability/spans.ts"
import { ProjectId, RunId, SessionId } from "../../domain/run.ts"
import { EmailId, WorkspaceId } from "../../domain/id-schemas.ts"
import { decodeRows } from "../../domain/rows.ts"

export const DEFAULT_MAIL_DOMAIN = "agents.localhost"

/** The domain of session inboxes, or null when the service receives no mail. */
export const mailDomainOf = (config: Pick<AppConfigShape, "mailDomain" | "smtpListen">): string | null =>
  Option.isSome(config.mailDomain)
    ? config.mailDomain.value.toLowerCase()
    : Option.isSome(config.smtpListen)
    ? DEFAULT_MAIL_DOMAIN
    : null

/** `<session id>@<domain>` when the session asked for an inbox (agentmail, default true) and there is a domain. */
export const inboxAddressOf = (sessionId: SessionId, agentmail: boolean | undefined, domain: string | null): string | null =>
  domain === null || agentmail === false ? null : `${sessionId}@${domain}`

/** An attachment as the `attachments` jsonb column keeps it. */
export const StoredAttachment = Schema.Struct({
  filename: Schema.String,
  content_type: Schema.String,
  size_bytes: Schema.Number,
  saved_as: Schema.NullOr(Schema.String),
  note: Schema.NullOr(Schema.String)
})
export type StoredAttachment = typeof StoredAttachment.Type

/** A stored message; `links`, `codes` and `attachments` are jsonb columns, decoded here. */
export const InboxMessageRow = Schema.Struct({
  id: EmailId,
  session_id: SessionId,
  project_id: ProjectId,
  run_id: Schema.NullOr(RunId),
  from_address: Schema.String,
  to_address: Schema.String,
  subject: Schema.String,
  message_id: Schema.NullOr(Schema.String),
  text_body: Schema.String,
  html_body: Schema.NullOr(Schema.String),
  links: Schema.Array(Schema.String),
  codes: Schema.Array(Schema.String),
  attachments: Schema.Array(StoredAttachment),
  size_bytes: Schema.Number,
  received_at: Schema.Date
})
export type InboxMessageRow = typeof InboxMessageRow.Type

const messageRows = decodeRows(InboxMessageRow)
const agentmailRows = decodeRows(Schema.Struct({ agentmail: Schema.Boolean }))
const recipientRows = decodeRows(Schema.Struct({
  id: SessionId,
  project_id: ProjectId,
  workspace_id: Schema.NullOr(WorkspaceId),
  status: Schema.String,
  current_run_id: Schema.NullOr(RunId)
}))

/** The session an address names, when it may receive mail. */
export interface Recipient {
  readonly sessionId: SessionId
  readonly projectId: ProjectId
  readonly workspaceId: WorkspaceId | null
  /** The session's run in progress (not terminal), which gets `run.email_received`. */
  readonly currentRunId: RunId | null
}

export class MailInboxStore extends Context.Service<MailInboxStore, {
  /** The mail domain (null: the service receives no mail). */
  readonly domain: string | null
  /** The session `address` names, if it exists, is not closed and has an inbox. */
  readonly recipient: (address: string) => Effect.Effect<Recipient | undefined>
  /** Whether the session asked for an inbox (its first run's agentmail, default true). */
  readonly agentmail: (sessionId: SessionId) => Effect.Effect<boolean>
  readonly insert: (message: Omit<InboxMessageRow, "id" | "received_at">) => Effect.Effect<InboxMessageRow>
  /** Newest first, before the id `beforeId` when given. */
  readonly list: (sessionId: SessionId, limit: number, beforeId?: string) => Effect.Effect<ReadonlyArray<InboxMessageRow>>
  readonly oldestFirst: (sessionId: SessionId, limit: number) => Effect.Effect<ReadonlyArray<InboxMessageRow>>
  readonly get: (sessionId: SessionId, messageId: EmailId) => Effect.Effect<InboxMessageRow | undefined>
}>()("wa/mail/inbound/MailInboxStore") {
  static readonly layer = Layer.effect(
    MailInboxStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const domain = mailDomainOf(yield* AppConfig)
      const columns = sql`id, session_id, project_id, run_id, from_address, to_address, subject, message_id, text_body, html_body,
        links, codes, attachments, size_bytes, received_at`
      const agentmail = (sessionId: SessionId) =>
        agentmailRows(sql`
          SELECT (request->>'agentmail') IS DISTINCT FROM 'false' AS agentmail
          FROM runs WHERE session_id = ${sessionId} ORDER BY id LIMIT 1`).pipe(
          Effect.map((rows) => rows[0]?.agentmail ?? false)
        )
      return MailInboxStore.of(withMethodSpans("MailInboxStore", {
        domain,
        agentmail,
        recipient: (address) =>
          Effect.gen(function*() {
            if (domain === null) return undefined
            const at = address.lastIndexOf("@")
            if (at < 1) return undefined
            const local = address.slice(0, at).toLowerCase()
            if (address.slice(at + 1).toLowerCase() !== domain || !/^sess_[0-9a-z]{26}$/.test(local)) return undefined
            const rows = yield* recipientRows(sql`
              SELECT s.id, s.project_id, s.workspace_id, s.status,
                (SELECT r.id FROM runs r WHERE r.id = s.latest_run_id AND r.status NOT IN ('done', 'failed', 'canceled')) AS current_run_id
              FROM sessions s WHERE s.id = ${local}`)
            const session = rows[0]
            if (session === undefined || session.status === "closed") return undefined
            if (!(yield* agentmail(session.id))) return undefined
            return { sessionId: session.id, projectId: session.project_id, workspaceId: session.workspace_id, currentRunId: session.current_run_id }
          }),
        insert: (message) =>
          Effect.gen(function*() {
            const id = makeId("eml")
            const rows = yield* messageRows(sql`
              INSERT INTO session_inbox_messages (id, session_id, project_id, run_id, from_address, to_address, subject, message_id,
                text_body, html_body, links, codes, attachments, size_bytes)
              VALUES (${id}, ${message.session_id}, ${message.project_id}, ${message.run_id}, ${message.from_address}, ${message.to_address},
                ${message.subject}, ${message.message_id}, ${message.text_body}, ${message.html_body}, ${JSON.stringify(message.links)}::jsonb,
                ${JSON.stringify(message.codes)}::jsonb, ${JSON.stringify(message.attachments)}::jsonb, ${message.size_bytes})
              RETURNING ${columns}`)
            return rows[0]!
          }),
        list: (sessionId, limit, beforeId) =>
          messageRows(beforeId === undefined
            ? sql`SELECT ${columns} FROM session_inbox_messages WHERE session_id = ${sessionId} ORDER BY id DESC LIMIT ${limit}`
            : sql`SELECT ${columns} FROM session_inbox_messages WHERE session_id = ${sessionId} AND id < ${beforeId} ORDER BY id DESC LIMIT ${limit}`),
        oldestFirst: (sessionId, limit) =>
          messageRows(sql`SELECT ${columns} FROM session_inbox_messages WHERE session_id = ${sessionId} ORDER BY id LIMIT ${limit}`),
        get: (sessionId, messageId) =>
          messageRows(sql`SELECT ${columns} FROM session_inbox_messages WHERE session_id = ${sessionId} AND id = ${messageId}`).pipe(
            Effect.map((rows) => rows[0])
          )
      }))
    })
  )
}
