/** Handlers of /v1/projects/{pid}/do_anything/sessions/{sid}/inbox (a session's email, agentmail). */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import type { SessionId } from "../../domain/run.ts"
import { type InboxMessageRow, SessionInboxes } from "../../mail/inbound/session-inbox.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
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
    const inboxes = yield* SessionInboxes
    /** The inbox of the caller's project's session (404 session_not_found otherwise). */
    const inboxOf = (sid: SessionId) => CurrentKey.use(({ projectId }) => httpErrors(inboxes.open(projectId, sid)))
    return handlers
      .handle("list", ({ params, query }) =>
        Effect.gen(function*() {
          const inbox = yield* inboxOf(params.sid)
          return yield* cursorPage(query, inbox.list, summaryView)
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const inbox = yield* inboxOf(params.sid)
          const row = yield* inbox.get(params.message_id)
          if (row === undefined) return yield* notFound("inbox_message_not_found", `no message ${params.message_id} in the inbox of session ${inbox.sessionId}`)
          return inboxMessageView(row)
        }))
  })
)
