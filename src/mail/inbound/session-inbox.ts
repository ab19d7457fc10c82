/**
 * SessionInboxes: a DoAnything session's email (agentmail) as the API reads it. A session's inbox
 * is opened only through the caller's project: a session of another project is a 404
 * (SessionNotFound), as if it did not exist. The messages are MailInboxStore's (inbox-store.ts).
 */
import { Context, Effect, Layer } from "effect"
import { SessionNotFound } from "../../domain/errors.ts"
import type { EmailId } from "../../domain/id-schemas.ts"
import type { ProjectId, SessionId } from "../../domain/run.ts"
import { withMethodSpans } from "../../observability/spans.ts"
import { SessionStore } from "../../store/sessions.ts"
import { type InboxMessageRow, MailInboxStore } from "./inbox-store.ts"

export type { InboxMessageRow }

/** The inbox of one session of the caller's project. */
export interface SessionInbox {
  readonly sessionId: SessionId
  /** The messages, newest first: at most `limit` of them before the id `beforeId`. */
  readonly list: (limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<InboxMessageRow>>
  /** One message (undefined when the inbox has no such message). */
  readonly get: (messageId: EmailId) => Effect.Effect<InboxMessageRow | undefined>
}

export class SessionInboxes extends Context.Service<SessionInboxes, {
  /** The inbox of the project's session. */
  readonly open: (projectId: ProjectId, sessionId: SessionId) => Effect.Effect<SessionInbox, SessionNotFound>
}>()("wa/mail/SessionInboxes") {
  static readonly layer = Layer.effect(
    SessionInboxes,
    Effect.gen(function*() {
      const inbox = yield* MailInboxStore
      const sessions = yield* SessionStore
      return SessionInboxes.of(withMethodSpans("SessionInboxes", {
        open: (projectId: ProjectId, sessionId: SessionId) =>
          Effect.flatMap(sessions.getSession(projectId, sessionId), (found): Effect.Effect<SessionInbox, SessionNotFound> =>
            found === undefined
              ? Effect.fail(new SessionNotFound({ sessionId }))
              : Effect.succeed({
                sessionId: found.id,
                list: (limit, beforeId) => inbox.list(found.id, limit, beforeId),
                get: (messageId) => inbox.get(found.id, messageId)
              }))
      }))
    })
  )
}
