/**
 * What console accounts prove by mail (through src/mail/outgoing.ts): the address, and the right
 * to set a new password.
 *
 * - Verification: a signed-in user asks for a mail; its link (or the token it carries, as a code)
 *   verifies the address when presented *by a session of the same account*. A mail that a
 *   squatter's account sends to the real owner therefore cannot verify the squatter's account
 *   when the owner clicks it: the owner's browser holds no session of that account.
 * - Password reset: anyone asks with an email (the answer is the same whether an account exists);
 *   the mail's link sets a new password once within 30 minutes. Opening it proves the address, so
 *   the account becomes verified, and every session of the account ends (a squatter's included).
 *
 * Tokens are 256 random bits; only their SHA-256 is stored (account_tokens), each is used once,
 * and a reset answers every earlier reset link of the account. Requests are counted by the
 * sign-in limiter (src/accounts/login-throttle.ts) under keys of their own, so nobody can make
 * the service mail an address without bound.
 */
import { Context, Effect, Layer } from "effect"
import { OutgoingMail } from "../mail/outgoing.ts"
import { AccountConflict, AccountResourceNotFound, type LoginThrottled } from "./errors.ts"
import { LoginThrottle } from "./login-throttle.ts"
import { hashPassword } from "./passwords.ts"
import { AccountTokenStore, type TokenPurpose as Purpose } from "./account-token-store.ts"
import { generateInvitationToken as generateMailToken } from "./session-tokens.ts"
import { normalizeEmail, Users } from "./users.ts"
import type { UserId } from "../domain/id-schemas.ts"

export const VERIFY_EMAIL_TTL_HOURS = 24
export const RESET_PASSWORD_TTL_MINUTES = 30

export interface VerificationRequested {
  readonly email: string
  readonly emailVerified: boolean
  /** false: already verified (nothing sent), or the mail server failed (logged). */
  readonly mailSent: boolean
}

export class AccountMail extends Context.Service<AccountMail, {
  /** Mails the signed-in user a verification link; `baseUrl` is the service's public base URL. */
  readonly requestVerification: (userId: UserId, address: string, baseUrl: string) => Effect.Effect<VerificationRequested, LoginThrottled>
  /** Verifies the user's address with the token of the mail (it must be this user's token). */
  readonly verifyEmail: (userId: UserId, token: string) => Effect.Effect<void, AccountResourceNotFound | AccountConflict>
  /** Mails a reset link when an account has this email; succeeds the same way when none has. */
  readonly requestPasswordReset: (email: string, address: string, baseUrl: string) => Effect.Effect<void, LoginThrottled>
  /** Sets the new password with a reset token: verifies the address and ends every session. */
  readonly resetPassword: (token: string, newPassword: string) => Effect.Effect<void, AccountResourceNotFound | AccountConflict>
}>()("wa/accounts/AccountMail") {
  static readonly layer = Layer.effect(
    AccountMail,
    Effect.gen(function*() {
      const store = yield* AccountTokenStore
      const users = yield* Users
      const throttle = yield* LoginThrottle
      const mail = yield* OutgoingMail

      const issue = (userId: UserId, email: string, purpose: Purpose, ttl: string) =>
        Effect.gen(function*() {
          const token = generateMailToken()
          // Tokens of the user that ended a day ago go as a new one is made.
          yield* store.issue(token, userId, email, purpose, ttl)
          return token
        })

      /** Sends, logging a failure instead of failing: the caller's answer must not depend on the mail server. */
      const deliver = (to: string, subject: string, text: string) =>
        mail.send({ to, subject, text }).pipe(Effect.as(true), Effect.catchTag("MailNotSent", () => Effect.succeed(false)))

      /** Why a token is refused: unknown (or another user's), used, or expired. */
      const refusal = (token: string, purpose: Purpose, userId: UserId | undefined) =>
        Effect.gen(function*() {
          const row = yield* store.state(token, purpose)
          if (row === undefined || (userId !== undefined && row.user_id !== userId)) return new AccountResourceNotFound({ what: "token", id: "(token)" })
          const link = purpose === "verify_email" ? "verification link" : "password reset link"
          return row.used
            ? new AccountConflict({ code: "token_used", detail: `this ${link} was already used; ask for a new one` })
            : new AccountConflict({ code: "token_expired", detail: `this ${link} has expired; ask for a new one` })
        })

      const requestVerification = Effect.fn("AccountMail.requestVerification")(function*(userId: UserId, address: string, baseUrl: string) {
        const user = yield* users.get(userId)
        if (user === undefined) return { email: "", emailVerified: false, mailSent: false }
        if (user.email_verified) return { email: user.email, emailVerified: true, mailSent: false }
        yield* throttle.attempt({ account: `verify:${userId}`, address })
        const token = yield* issue(user.id, user.email, "verify_email", `${VERIFY_EMAIL_TTL_HOURS} hours`)
        const link = `${baseUrl}/console/verify-email?token=${encodeURIComponent(token)}`
        const mailSent = yield* deliver(user.email, "Verify your email address", [
          `Someone signed in to the Web Agent Service account of ${user.email} asked to verify this address.`,
          "",
          "If that was you, open this link in the browser where you are signed in to that account:",
          link,
          "",
          `or give this code to POST /v1/auth/email/verify: ${token}`,
          "",
          `The link works once, for ${VERIFY_EMAIL_TTL_HOURS} hours.`,
          "",
          "If you did not make this account, do not open the link: someone else may have made an account with",
          `your address. Reset its password instead (${baseUrl}/console/forgot-password); that proves the address`,
          "is yours and ends every session of the account."
        ].join("\n"))
        return { email: user.email, emailVerified: false, mailSent }
      })

      const verifyEmail = Effect.fn("AccountMail.verifyEmail")(function*(userId: UserId, token: string) {
        // The token counts only for the address it was mailed to, and only for its own account.
        const verified = yield* store.verifyEmail(userId, token)
        if (!verified) return yield* (yield* refusal(token, "verify_email", userId))
      })

      const requestPasswordReset = Effect.fn("AccountMail.requestPasswordReset")(function*(email: string, address: string, baseUrl: string) {
        // Counted whether or not the account exists: a 429 tells nothing about existence.
        yield* throttle.attempt({ account: `reset:${normalizeEmail(email)}`, address })
        const user = yield* users.findByEmail(email)
        if (user === undefined) return
        const token = yield* issue(user.id, user.email, "reset_password", `${RESET_PASSWORD_TTL_MINUTES} minutes`)
        const link = `${baseUrl}/console/reset-password?token=${encodeURIComponent(token)}`
        yield* deliver(user.email, "Reset your password", [
          `A password reset was asked for the Web Agent Service account of ${user.email}.`,
          "",
          "Open this link to choose a new password:",
          link,
          "",
          `The link works once, for ${RESET_PASSWORD_TTL_MINUTES} minutes. Setting the new password ends every session of the`,
          "account (signed-in browsers and programs) and confirms that this address is yours.",
          "",
          "If you did not ask for this, ignore this mail: your password stays as it is."
        ].join("\n"))
      })

      const resetPassword = Effect.fn("AccountMail.resetPassword")(function*(token: string, newPassword: string) {
        // A cheap look first: the password hash is only computed for a live token.
        if (!(yield* store.resetIsLive(token))) return yield* (yield* refusal(token, "reset_password", undefined))
        const hash = yield* hashPassword(newPassword)
        // The token is used and the password set in one transaction.
        const done = yield* store.transaction(Effect.gen(function*() {
          const claimed = yield* store.claimReset(token)
          if (claimed === undefined) return undefined
          yield* users.setPasswordAfterProof(claimed.user_id, hash)
          return claimed
        }))
        if (done === undefined) return yield* (yield* refusal(token, "reset_password", undefined))
        // The owner may have been locked out by someone else's guesses: the account's count starts again.
        yield* throttle.succeeded({ account: normalizeEmail(done.email), address: "" })
      })

      return AccountMail.of({ requestVerification, verifyEmail, requestPasswordReset, resetPassword })
    })
  ).pipe(Layer.provide(AccountTokenStore.layer))
}
