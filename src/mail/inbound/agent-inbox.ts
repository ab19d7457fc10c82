/** The agent's AgentInbox (src/agent/mail-tools.ts) over the inbox store. */
import { Effect, Layer } from "effect"
import { AgentInbox, type InboxMessage, type InboxMessageSummary } from "../../agent/mail-tools.ts"
import { inboxAddressOf, type InboxMessageRow, MailInboxStore } from "./inbox-store.ts"
import { withMethodSpans } from "../../observability/spans.ts"

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
    // The agent's mail tools (src/agent/mail-tools.ts) name the run's session as a SessionId, and a
    // message by the EmailId their read_email parameter decodes to.
    return AgentInbox.of(withMethodSpans("AgentInbox", {
      addressOf: (sessionId) =>
        store.domain === null
          ? Effect.succeed(null)
          : store.agentmail(sessionId).pipe(Effect.map((enabled) => inboxAddressOf(sessionId, enabled, store.domain))),
      list: (sessionId, limit) => store.list(sessionId, limit).pipe(Effect.map((rows) => rows.map(summaryOf))),
      get: (sessionId, messageId) =>
        store.get(sessionId, messageId).pipe(Effect.map((row) => row === undefined ? undefined : messageOf(row))),
      oldestFirst: (sessionId, limit) => store.oldestFirst(sessionId, limit).pipe(Effect.map((rows) => rows.map(messageOf)))
    }))
  })
)
