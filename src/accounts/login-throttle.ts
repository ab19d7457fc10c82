/**
 * Sign-in throttling against password guessing, per account (the email, lower-cased) and per
 * client address, in fixed windows kept in PostgreSQL so every node counts together. An attempt is
 * counted *before* the password is checked, with one atomic upsert per scope: under concurrent
 * guesses every attempt gets its own number, so exactly `limit` attempts per window are checked
 * and the rest get 429 without a hash being computed. A successful sign-in clears the account's
 * count and gives the address its attempt back (a shared NAT address is not used up by people
 * who sign in correctly).
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { LoginThrottled } from "./errors.ts"

export interface ThrottleKeys {
  readonly account: string
  readonly address: string
}

export class LoginThrottle extends Context.Service<LoginThrottle, {
  /** Counts one attempt for both scopes; fails when either is over its limit in this window. */
  readonly attempt: (keys: ThrottleKeys) => Effect.Effect<void, LoginThrottled>
  readonly succeeded: (keys: ThrottleKeys) => Effect.Effect<void>
}>()("wa/accounts/LoginThrottle") {
  static readonly layer = Layer.effect(
    LoginThrottle,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const window = config.loginWindowSeconds
      const windowStart = sql`to_timestamp(floor(extract(epoch FROM now()) / ${window}) * ${window})`
      const count = (key: string) =>
        sql<{ attempts: number; retry_after: number }>`
          INSERT INTO login_attempts (scope_key, window_start, attempts)
          VALUES (${key}, ${windowStart}, 1)
          ON CONFLICT (scope_key, window_start) DO UPDATE SET attempts = login_attempts.attempts + 1
          RETURNING attempts,
            greatest(1, ceil(extract(epoch FROM (window_start + ${`${window} seconds`}::interval - now()))))::int AS retry_after`.pipe(
          Effect.map((rows) => rows[0]!)
        )
      const attempt = (keys: ThrottleKeys) =>
        Effect.gen(function*() {
          const account = yield* count(`account:${keys.account}`)
          const address = yield* count(`address:${keys.address}`)
          // A new window's first attempt sweeps the windows that ended (they only ever count up).
          if (account.attempts === 1) {
            yield* sql`DELETE FROM login_attempts WHERE window_start < now() - ${`${window * 2} seconds`}::interval`
          }
          if (account.attempts > config.loginAttemptsPerAccount) {
            return yield* new LoginThrottled({ scope: "account", retryAfterSeconds: account.retry_after, limit: config.loginAttemptsPerAccount })
          }
          if (address.attempts > config.loginAttemptsPerAddress) {
            return yield* new LoginThrottled({ scope: "address", retryAfterSeconds: address.retry_after, limit: config.loginAttemptsPerAddress })
          }
        }).pipe(Effect.catchTag("SqlError", Effect.die))
      const succeeded = (keys: ThrottleKeys) =>
        Effect.gen(function*() {
          yield* sql`DELETE FROM login_attempts WHERE scope_key = ${`account:${keys.account}`}`
          yield* sql`
            UPDATE login_attempts SET attempts = greatest(attempts - 1, 0)
            WHERE scope_key = ${`address:${keys.address}`} AND window_start = ${windowStart}`
        }).pipe(Effect.orDie)
      return LoginThrottle.of({ attempt, succeeded })
    })
  )
}
