/**
 * Outgoing mail, through `nodemailer` to the SMTP server of WA_SMTP_URL (plain text messages:
 * address verification and password reset of console accounts, src/accounts/account-mail.ts).
 * Without WA_SMTP_URL nothing is sent: each mail is written to the log at Warn level (recipient,
 * subject and body), so an operator without a mail server can pass the link on by hand.
 */
import { Context, Data, Effect, Layer, Option, Redacted } from "effect"
import { AppConfig } from "../config/config.ts"
import { withMethodSpans } from "../observability/spans.ts"

export interface OutgoingMessage {
  readonly to: string
  readonly subject: string
  readonly text: string
}

/** The SMTP server refused the message or could not be reached. */
export class MailNotSent extends Data.TaggedError("MailNotSent")<{ readonly detail: string }> {}

export const DEFAULT_MAIL_FROM = "Web Agent Service <no-reply@localhost>"

export class OutgoingMail extends Context.Service<OutgoingMail, {
  /** `smtp` when WA_SMTP_URL is set, else `log`. */
  readonly delivery: "smtp" | "log"
  readonly send: (message: OutgoingMessage) => Effect.Effect<void, MailNotSent>
}>()("wa/mail/OutgoingMail") {
  static readonly layer = Layer.effect(
    OutgoingMail,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const from = Option.getOrElse(config.mailFrom, () => DEFAULT_MAIL_FROM)
      if (Option.isNone(config.smtpUrl)) {
        return OutgoingMail.of(withMethodSpans("OutgoingMail", {
          delivery: "log",
          send: (message) =>
            Effect.logWarning("outgoing mail not sent (no WA_SMTP_URL); pass it on to the recipient").pipe(
              Effect.annotateLogs({ mail_to: message.to, mail_subject: message.subject, mail_text: message.text })
            )
        }))
      }
      // Loaded only when mail is configured: nodemailer costs about 0.2 s of start-up on a loaded host.
      const { createTransport } = yield* Effect.promise(() => import("nodemailer"))
      const transport = createTransport({
        url: Redacted.value(config.smtpUrl.value),
        // A mail server that does not answer must not hold a request for minutes.
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 20_000
      }, { from })
      yield* Effect.addFinalizer(() => Effect.sync(() => transport.close()))
      return OutgoingMail.of(withMethodSpans("OutgoingMail", {
        delivery: "smtp",
        send: (message) =>
          Effect.tryPromise({
            try: () => transport.sendMail({ to: message.to, subject: message.subject, text: message.text }),
            catch: (error) => new MailNotSent({ detail: String(error).slice(0, 300) })
          }).pipe(
            Effect.asVoid,
            Effect.tapError((error) => Effect.logWarning("outgoing mail failed").pipe(Effect.annotateLogs({ mail_to: message.to, error: error.detail })))
          )
      }))
    })
  )
}
