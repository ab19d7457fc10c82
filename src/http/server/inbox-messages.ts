/** Handlers of /v1/projects/{pid}/do_anything/sessions/{sid}/inbox (a session's email, agentmail). */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import type { SessionId } from "../../domain/run.ts"
import { type InboxMessageRow, MailInboxStore } from "../../mail/inbound/inbox-store.ts"
import { SessionStore } from "../../store/sessions.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { notFound } from "../errors.ts"
import { cursorPage } from "../pagination.ts"

const summaryView = (row: InboxMessageRow) => ({
  id: row.id,
  session_id: row.session_id,
  run_id: row.run_id,
  from: row.from_address,
  to: row.to_address,
  subject: row.subject,
  size_bytes: row.size_bytes,
  attachment_count: row.attachments.length,
  received_at: row.received_at.toISOString()
})

export const inboxMessageView = (row: InboxMessageRow) => ({
  ...summaryView(row),
  message_id: row.message_id,
  text: row.text_body,
  html: row.html_body,
  links: row.links,
  codes: row.codes,
  attachments: row.attachments
})

export const InboxMessagesHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "session_inbox",
  Effect.fn(function*(handlers) {
    const inbox = yield* MailInboxStore
    const sessionStore = yield* SessionStore
    /** The session of the caller's project, or 404. */
    const session = (sid: SessionId) =>
      Effect.gen(function*() {
        const { projectId } = yield* CurrentKey
        const found = yield* sessionStore.getSession(projectId, sid)
        if (found === undefined) return yield* notFound("session_not_found", `no session ${sid} in this project`)
        return found
      })
    return handlers
      .handle("list", ({ params, query }) =>
        Effect.gen(function*() {
          const found = yield* session(params.sid)
          return yield* cursorPage(query, (limit, beforeId) => inbox.list(found.id, limit, beforeId), summaryView)
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const found = yield* session(params.sid)
          const row = yield* inbox.get(found.id, params.message_id)
          if (row === undefined) return yield* notFound("inbox_message_not_found", `no message ${params.message_id} in the inbox of session ${found.id}`)
          return inboxMessageView(row)
        }))
  })
)
