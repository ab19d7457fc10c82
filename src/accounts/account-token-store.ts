/**
 * Mailed account tokens in PostgreSQL (account_tokens): only each token's SHA-256 is stored, and
 * each is used once. Rows are decoded through Schema; what a token proves is the service's
 * (src/accounts/account-mail.ts).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { hashToken } from "./session-tokens.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { decodeRows } from "../domain/rows.ts"
import { UserId } from "../domain/id-schemas.ts"


export type TokenPurpose = "verify_email" | "reset_password"

const TokenStateRow = Schema.Struct({ user_id: UserId, used: Schema.Boolean, expired: Schema.Boolean })
export type TokenState = typeof TokenStateRow.Type
const ClaimedResetRow = Schema.Struct({ user_id: UserId, email: Schema.String })

export class AccountTokenStore extends Context.Service<AccountTokenStore, {
  /** Stores a new token of the user for `ttl` (an interval); the user's tokens that ended a day ago go. */
  readonly issue: (token: string, userId: UserId, email: string, purpose: TokenPurpose, ttl: string) => Effect.Effect<void>
  /** Whose the token is, whether it was used and whether it expired; undefined when unknown. */
  readonly state: (token: string, purpose: TokenPurpose) => Effect.Effect<TokenState | undefined>
  /**
   * Uses the user's verification token and marks the address verified, in one transaction; only
   * for the address it was mailed to. False when no live token of the user matched.
   */
  readonly verifyEmail: (userId: UserId, token: string) => Effect.Effect<boolean>
  /** Whether the reset token is live (unused and not expired). */
  readonly resetIsLive: (token: string) => Effect.Effect<boolean>
  /** Uses a live reset token: its user and address, or undefined. */
  readonly claimReset: (token: string) => Effect.Effect<{ readonly user_id: UserId; readonly email: string } | undefined>
  /** Runs `effect` in one transaction (the statements of other stores in it join it). */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}>()("wa/accounts/AccountTokenStore") {
  static readonly layer = Layer.effect(
    AccountTokenStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return AccountTokenStore.of(withMethodSpans("AccountTokenStore", {
        issue: (token, userId, email, purpose, ttl) =>
          Effect.gen(function*() {
            yield* sql`DELETE FROM account_tokens WHERE user_id = ${userId} AND expires_at < now() - interval '1 day'`
            yield* sql`
              INSERT INTO account_tokens (token_hash, user_id, purpose, email, expires_at)
              VALUES (${hashToken(token)}, ${userId}, ${purpose}, ${email}, now() + ${ttl}::interval)`
          }).pipe(Effect.orDie),
        state: (token, purpose) =>
          decodeRows(TokenStateRow)(sql`
            SELECT user_id, used_at IS NOT NULL AS used, expires_at <= now() AS expired
            FROM account_tokens WHERE token_hash = ${hashToken(token)} AND purpose = ${purpose}`).pipe(Effect.map((rows) => rows[0])),
        verifyEmail: (userId, token) =>
          sql.withTransaction(Effect.gen(function*() {
            const claimed = yield* sql`
              UPDATE account_tokens t SET used_at = now() FROM users u
              WHERE t.token_hash = ${hashToken(token)} AND t.purpose = 'verify_email' AND t.user_id = ${userId}
                AND t.used_at IS NULL AND t.expires_at > now() AND u.id = t.user_id AND lower(u.email) = lower(t.email)
              RETURNING t.user_id`
            if (claimed.length === 0) return false
            yield* sql`UPDATE users SET email_verified = true WHERE id = ${userId}`
            return true
          })).pipe(Effect.orDie),
        resetIsLive: (token) =>
          sql`
            SELECT 1 FROM account_tokens
            WHERE token_hash = ${hashToken(token)} AND purpose = 'reset_password' AND used_at IS NULL AND expires_at > now()`.pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          ),
        claimReset: (token) =>
          decodeRows(ClaimedResetRow)(sql`
            UPDATE account_tokens SET used_at = now()
            WHERE token_hash = ${hashToken(token)} AND purpose = 'reset_password' AND used_at IS NULL AND expires_at > now()
            RETURNING user_id, email`).pipe(Effect.map((rows) => rows[0])),
        transaction: (effect) => sql.withTransaction(effect).pipe(Effect.catchTag("SqlError", Effect.die))
      }))
    })
  )
}
