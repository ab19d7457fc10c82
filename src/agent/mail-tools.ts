/**
 * The agent's mail tools (agentmail), for a session with an inbox (`<session id>@<WA_MAIL_DOMAIN>`,
 * src/mail/inbound/): `read_inbox` (the messages, newest first), `read_email` (one message as text,
 * with the links and one-time codes found in it) and `wait_for_email` (the next message not yet
 * handed to the agent, optionally filtered by subject and sender, waiting at most 120 s). Their
 * names join the vocabulary of `allowed_actions` (tools.ts merges them into the toolkit); a run
 * whose session has no inbox is not offered them.
 *
 * The inbox itself is the `AgentInbox` service, implemented over PostgreSQL by src/mail/inbound/
 * (a higher layer) and provided to the session entity; without it no session has an inbox.
 *
 * This module depends on nothing in tools.ts (tools.ts imports it).
 */
import { Context, Effect, Schema } from "effect"
import { Toolkit } from "effect/ai"
import { tool, type ToolFailure } from "./tool-def.ts"
import type { EventData, RunEventType } from "../domain/events.ts"
import { EmailId } from "../domain/id-schemas.ts"
import type { SessionId } from "../domain/run.ts"

/** wait_for_email waits at most this long. */
export const MAX_WAIT_SECONDS = 120
const DEFAULT_WAIT_SECONDS = 60

export interface InboxMessageSummary {
  readonly id: EmailId
  readonly from: string
  readonly subject: string
  readonly received_at: string
}

export interface InboxMessage extends InboxMessageSummary {
  readonly to: string
  readonly text: string
  readonly links: ReadonlyArray<string>
  readonly codes: ReadonlyArray<string>
  readonly attachments: ReadonlyArray<{
    readonly filename: string
    readonly content_type: string
    readonly size_bytes: number
    /** The workspace file it was saved as; null when it was not saved (see note). */
    readonly saved_as: string | null
    readonly note: string | null
  }>
}

/** Session inboxes as the agent sees them (src/mail/inbound/agent-inbox.ts). */
export class AgentInbox extends Context.Service<AgentInbox, {
  /** The session's inbox address; null when it has none (agentmail false, or no mail domain configured). */
  readonly addressOf: (sessionId: SessionId) => Effect.Effect<string | null>
  /** Newest first. */
  readonly list: (sessionId: SessionId, limit: number) => Effect.Effect<ReadonlyArray<InboxMessageSummary>>
  readonly get: (sessionId: SessionId, messageId: EmailId) => Effect.Effect<InboxMessage | undefined>
  /** Oldest first, every message of the session (bounded by `limit`). */
  readonly oldestFirst: (sessionId: SessionId, limit: number) => Effect.Effect<ReadonlyArray<InboxMessage>>
}>()("wa/agent/AgentInbox") {}

/** No inboxes (the service is not given one): no session has an address. */
export const noInbox: AgentInbox["Service"] = {
  addressOf: () => Effect.succeed(null),
  list: () => Effect.succeed([]),
  get: () => Effect.succeed(undefined),
  oldestFirst: () => Effect.succeed([])
}

export const ReadInbox = tool("read_inbox", "List the emails received by your inbox address, newest first (id, from, subject, received_at).", {})
export const ReadEmail = tool(
  "read_email",
  "Read one email of your inbox: its body as text, the links in it and the one-time codes found in it.",
  { id: EmailId.annotate({ description: "the email's id from read_inbox" }) }
)
export const WaitForEmail = tool(
  "wait_for_email",
  `Wait for the next email you have not read yet (e.g. a verification mail after a sign-up), optionally only one whose subject or sender contains the given text; returns it as read_email does. Waits at most ${MAX_WAIT_SECONDS} seconds (default ${DEFAULT_WAIT_SECONDS}).`,
  {
    subject: Schema.optional(Schema.String.annotate({ description: "text the subject contains (any case)" })),
    from: Schema.optional(Schema.String.annotate({ description: "text the sender contains (any case), e.g. a domain" })),
    timeout_seconds: Schema.optional(Schema.Number)
  }
)

export const mailTools = [ReadInbox, ReadEmail, WaitForEmail] as const
export const mailToolNames: ReadonlyArray<string> = mailTools.map((t) => t.name)
export const MailToolkit = Toolkit.make(...mailTools)

/** What the mail tools need from the run they serve. */
export class MailToolContext extends Context.Service<MailToolContext, {
  /** The run's session; null for a run without one (it has no inbox). */
  readonly sessionId: SessionId | null
  /** Null: the session has no inbox (the tools are then not offered; a call is refused). */
  readonly address: string | null
  readonly inbox: AgentInbox["Service"]
  readonly emit: <T extends RunEventType>(type: T, data: EventData<T>) => Effect.Effect<void>
  /** The run's secrets' redaction (tools.ts RunSecrets.redact): a mail may echo a value back. */
  readonly redact: (text: string) => string
}>()("wa/agent/MailToolContext") {}

/** The lines of the system prompt about the inbox. */
export const inboxPrompt = (address: string) =>
  `You have your own email inbox: ${address}. Give this address when a site asks for an email address (sign-ups, verification, ` +
  "password resets); then call wait_for_email to get the mail (its links and one-time codes are listed), or read_inbox and read_email."

/** Every string inside `value` passed through `redact`. */
const redactAll = (value: unknown, redact: (text: string) => string): unknown => {
  if (typeof value === "string") return redact(value)
  if (Array.isArray(value)) return value.map((item) => redactAll(item, redact))
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, redactAll(item, redact)]))
  return value
}

/**
 * Reports the tool with the same events as the other tools (tools.ts); failures go back to the
 * model. What the events and the model get passes through the run's secrets' redaction.
 */
const instrumented = <A>(ctx: MailToolContext["Service"], name: string, rawParams: unknown, body: Effect.Effect<A, ToolFailure>) =>
  Effect.gen(function*() {
    const params = redactAll(rawParams, ctx.redact)
    yield* ctx.emit("run.action.started", { action: name, params })
    const result = yield* Effect.result(body)
    if (result._tag === "Failure") {
      const failure = redactAll(result.failure, ctx.redact) as ToolFailure
      yield* ctx.emit("run.action.failed", { action: name, params, ...failure })
      return yield* Effect.fail(failure)
    }
    const success = redactAll(result.success, ctx.redact)
    const text = JSON.stringify(success)
    yield* ctx.emit("run.action.completed", { action: name, result: text.length > 500 ? `${text.slice(0, 500)}…` : success })
    return success
  })

const contains = (haystack: string, needle: string | undefined) =>
  needle === undefined || needle.trim() === "" || haystack.toLowerCase().includes(needle.trim().toLowerCase())

/** Handlers bound to one run: built per run with its MailToolContext. */
export const MailToolkitHandlers = MailToolkit.toLayer(Effect.gen(function*() {
  const ctx = yield* MailToolContext
  // Messages handed to the agent in this run (read_email, wait_for_email): wait_for_email waits for another.
  const seen = new Set<EmailId>()
  /** The session and its address; refused when the session has no inbox. */
  const inbox = Effect.suspend(() =>
    ctx.sessionId === null || ctx.address === null
      ? Effect.fail<ToolFailure>({ code: "NoInbox", error: "this session has no inbox (its run was created with agentmail: false, or the service has no mail domain)" })
      : Effect.succeed({ sessionId: ctx.sessionId, address: ctx.address })
  )
  return MailToolkit.of({
    read_inbox: (params) =>
      instrumented(ctx, "read_inbox", params, Effect.gen(function*() {
        const { sessionId, address } = yield* inbox
        const messages = yield* ctx.inbox.list(sessionId, 50)
        return { address, messages }
      })),
    read_email: (params) =>
      instrumented(ctx, "read_email", params, Effect.gen(function*() {
        const { sessionId } = yield* inbox
        const message = yield* ctx.inbox.get(sessionId, params.id)
        if (message === undefined) return yield* Effect.fail<ToolFailure>({ code: "EmailNotFound", error: `no email ${JSON.stringify(params.id)} in the inbox; call read_inbox` })
        seen.add(message.id)
        return message
      })),
    wait_for_email: (params) =>
      instrumented(ctx, "wait_for_email", params, Effect.gen(function*() {
        const { sessionId } = yield* inbox
        const seconds = Math.max(1, Math.min(params.timeout_seconds ?? DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS))
        const deadline = Date.now() + seconds * 1000
        while (true) {
          const messages = yield* ctx.inbox.oldestFirst(sessionId, 500)
          const found = messages.find((m) => !seen.has(m.id) && contains(m.subject, params.subject) && contains(m.from, params.from))
          if (found !== undefined) {
            seen.add(found.id)
            return found
          }
          if (Date.now() >= deadline) {
            return yield* Effect.fail<ToolFailure>({
              code: "Timeout",
              error: `no new email${params.subject || params.from ? " matching the filter" : ""} arrived within ${seconds} s; call it again to wait longer, or read_inbox`
            })
          }
          yield* Effect.sleep("1 second")
        }
      }))
  })
}))
