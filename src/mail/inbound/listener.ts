/**
 * The SMTP listener of session inboxes (agentmail): on WA_SMTP_LISTEN (host:port; off unless set)
 * it accepts mail for `<session id>@<mail domain>` of sessions that exist, are not closed and
 * have an inbox (RCPT TO of any other address: 550), up to WA_INBOUND_MAIL_MAX_BYTES (advertised
 * as SIZE; past it 552). Each message is parsed (mailparser), stored per recipient session
 * (inbox-store.ts), its attachments saved into the session's workspace when it has one (else
 * dropped, with a note on the message), and `run.email_received` is emitted on the session's run
 * in progress, if any.
 *
 * No AUTH and no STARTTLS: in production the listener sits behind the MX relay (or on port 25
 * for the world, where senders fall back to plain SMTP); see README "Agent inboxes".
 */
import { Effect, Layer, Option, Stream } from "effect"
import type { SMTPServerAddress } from "smtp-server"
import { AppConfig } from "../../config/config.ts"
import { RunStore } from "../../store/runs.ts"
import { contentTypeOf, WorkspaceStore } from "../../store/workspace-store.ts"
import { type InboxMessageRow, MailInboxStore, type Recipient, type StoredAttachment } from "./inbox-store.ts"
import { findCodes, findLinks, htmlToText } from "./parse.ts"

/** An SMTP reply with its code (smtp-server sends `responseCode` and the message). */
const smtpError = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code })

/** host:port of WA_SMTP_LISTEN ("[::1]:2525" too). */
export const parseListen = (value: string): { readonly host: string; readonly port: number } => {
  const at = value.lastIndexOf(":")
  const host = value.slice(0, at).replace(/^\[(.*)\]$/, "$1")
  return { host: host === "" ? "0.0.0.0" : host, port: Number(value.slice(at + 1)) }
}

/** Stores one received message for one recipient session: attachments first, then the row, then the event. */
export const deliver = Effect.fnUntraced(function*(recipient: Recipient, to: string, envelopeFrom: string, raw: Buffer) {
  const inbox = yield* MailInboxStore
  const workspaces = yield* WorkspaceStore
  const runs = yield* RunStore
  // Loaded with the listener (only when WA_SMTP_LISTEN is set), like smtp-server below.
  const { simpleParser } = yield* Effect.promise(() => import("mailparser"))
  const parsed = yield* Effect.promise(() => simpleParser(raw, { skipImageLinks: true }))
  const html = typeof parsed.html === "string" ? parsed.html : null
  const text = parsed.text ?? (html === null ? "" : htmlToText(html))
  const otp = parsed.otp?.code
  const codes = [...(otp === undefined ? [] : [otp]), ...findCodes(`${parsed.subject ?? ""}\n${text}`).filter((code) => code !== otp)]
  const attachments: Array<StoredAttachment> = []
  for (const attachment of parsed.attachments) {
    const filename = attachment.filename ?? "attachment"
    const base = { filename, content_type: attachment.contentType, size_bytes: attachment.size }
    if (recipient.workspaceId === null) {
      attachments.push({ ...base, saved_as: null, note: "dropped: the session has no workspace (create it with workspace_id to keep attachments)" })
      continue
    }
    const saved = yield* Effect.result(workspaces.putFile(recipient.workspaceId, filename, Stream.make(new Uint8Array(attachment.content)), {
      contentType: attachment.contentType || contentTypeOf(filename),
      source: "download",
      onConflict: "rename"
    }))
    attachments.push(saved._tag === "Success"
      ? { ...base, saved_as: saved.success.name, note: null }
      : { ...base, saved_as: null, note: `not saved: ${saved.failure._tag}` })
  }
  const message: InboxMessageRow = yield* inbox.insert({
    session_id: recipient.sessionId,
    project_id: recipient.projectId,
    run_id: recipient.currentRunId,
    from_address: parsed.from?.text || envelopeFrom,
    to_address: to,
    subject: parsed.subject ?? "",
    message_id: parsed.messageId ?? null,
    text_body: text,
    html_body: html,
    links: findLinks(text, html),
    codes,
    attachments,
    size_bytes: raw.length
  })
  if (recipient.currentRunId !== null) {
    yield* runs.appendEvent(recipient.currentRunId, "run.email_received", {
      session_id: recipient.sessionId,
      message_id: message.id,
      from: message.from_address,
      subject: message.subject,
      received_at: message.received_at.toISOString()
    })
  }
  yield* Effect.logInfo("inbound mail stored").pipe(Effect.annotateLogs({ session_id: recipient.sessionId, inbox_message_id: message.id, size_bytes: raw.length }))
  return message
})

/** The listener, started when WA_SMTP_LISTEN is set and closed with the layer. */
export const InboundMailLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  if (Option.isNone(config.smtpListen)) return
  const { host, port } = parseListen(config.smtpListen.value)
  const maxBytes = config.inboundMailMaxBytes
  const inbox = yield* MailInboxStore
  const context = yield* Effect.context<MailInboxStore | WorkspaceStore | RunStore>()
  const run = Effect.runPromiseWith(context)
  const recipients = new WeakMap<object, Map<string, Recipient>>()

  // smtp-server and mailparser (about 0.3 s of module loading) load only when mail is received.
  const { SMTPServer } = yield* Effect.promise(() => import("smtp-server"))
  const server = new SMTPServer({
    name: inbox.domain ?? "localhost",
    banner: "web agent service inbound mail",
    authOptional: true,
    disabledCommands: ["AUTH", "STARTTLS"],
    size: maxBytes,
    logger: false,
    onRcptTo(address: SMTPServerAddress, session, callback) {
      run(inbox.recipient(address.address)).then(
        (recipient) => {
          if (recipient === undefined) return callback(smtpError(550, `5.1.1 <${address.address}>: no such mailbox`))
          const map = recipients.get(session) ?? new Map<string, Recipient>()
          map.set(address.address, recipient)
          recipients.set(session, map)
          callback()
        },
        () => callback(smtpError(451, "4.3.0 temporary failure, try again later"))
      )
    },
    onData(stream, session, callback) {
      const chunks: Array<Buffer> = []
      let size = 0
      stream.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size <= maxBytes) chunks.push(chunk)
      })
      stream.on("end", () => {
        if (stream.sizeExceeded || size > maxBytes) {
          return callback(smtpError(552, `5.3.4 message exceeds the maximum size of ${maxBytes} bytes`))
        }
        const raw = Buffer.concat(chunks)
        const accepted = recipients.get(session)
        const targets = session.envelope.rcptTo.flatMap((address) => {
          const recipient = accepted?.get(address.address)
          return recipient === undefined ? [] : [[address.address, recipient] as const]
        })
        const envelopeFrom = session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address
        run(Effect.forEach(targets, ([to, recipient]) => deliver(recipient, to, envelopeFrom, raw), { discard: true })).then(
          () => callback(),
          (error: unknown) => {
            void run(Effect.logWarning("inbound mail not stored").pipe(Effect.annotateLogs({ error: String(error).slice(0, 300) })))
            callback(smtpError(451, "4.3.0 the message could not be stored, try again later"))
          }
        )
      })
    }
  })
  yield* Effect.acquireRelease(
    Effect.callback<void, Error>((resume) => {
      const onError = (error: Error) => resume(Effect.fail(error))
      server.once("error", onError)
      server.listen(port, host, () => {
        server.off("error", onError)
        server.on("error", (error) => void run(Effect.logWarning("smtp listener error").pipe(Effect.annotateLogs({ error: String(error) }))))
        resume(Effect.void)
      })
    }).pipe(Effect.orDie),
    () => Effect.callback<void>((resume) => server.close(() => resume(Effect.void)))
  )
  const bound = server.server.address()
  yield* Effect.logInfo("smtp listening").pipe(Effect.annotateLogs({
    smtp_address: typeof bound === "object" && bound !== null ? `${bound.address}:${bound.port}` : config.smtpListen.value,
    mail_domain: inbox.domain ?? ""
  }))
}))
