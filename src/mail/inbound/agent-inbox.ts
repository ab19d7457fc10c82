/** The agent's AgentInbox (src/agent/mail-tools.ts) over the inbox store. */
import { Effect, Layer } from "effect"
import { AgentInbox, type InboxMessage, type InboxMessageSummary } from "../../agent/mail-tools.ts"
import { inboxAddressOf, type InboxMessageRow, MailInboxStore } from "./inbox-store.ts"
import { withMethodSpans } from "../../observability/spans.ts"
import { SessionId } from "../../domain/run.ts"
import { EmailId } from "../../domain/id-schemas.ts"

const summaryOf = (row: InboxMessageRow): InboxMessageSummary => ({
  id: row.id,
  from: row.from_address,
  subject: row.subject,
  received_at: row.received_at.toISOString()
})

/** Bodies the agent reads are bounded: a long newsletter must not fill the model's context. */
const MAX_TEXT = 20_000

export const messageOf = (row: InboxMessageRow): InboxMessage => ({
  ...summaryOf(row),
  to: row.to_address,
  text: row.text_body.length > MAX_TEXT ? `${row.text_body.slice(0, MAX_TEXT)}…` : row.text_body,
  links: row.links,
  codes: row.codes,
  attachments: row.attachments
})

export const AgentInboxLive = Layer.effect(
  AgentInbox,
  Effect.gen(function*() {
    const store = yield* MailInboxStore
    // The agent's mail tools (src/agent/mail-tools.ts) name the session and message as text: the
    // ids of the session the tool runs in and of a message it listed, branded here once.
    return AgentInbox.of(withMethodSpans("AgentInbox", {
      addressOf: (text) => {
        const sessionId = SessionId.make(text)
        return store.domain === null
          ? Effect.succeed(null)
          : store.agentmail(sessionId).pipe(Effect.map((enabled) => inboxAddressOf(sessionId, enabled, store.domain)))
      },
      list: (sessionId, limit) => store.list(SessionId.make(sessionId), limit).pipe(Effect.map((rows) => rows.map(summaryOf))),
      get: (sessionId, messageId) =>
        store.get(SessionId.make(sessionId), EmailId.make(messageId)).pipe(Effect.map((row) => row === undefined ? undefined : messageOf(row))),
      oldestFirst: (sessionId, limit) => store.oldestFirst(SessionId.make(sessionId), limit).pipe(Effect.map((rows) => rows.map(messageOf)))
    }))
  })
)
