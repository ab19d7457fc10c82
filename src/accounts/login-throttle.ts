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
import { AppConfig } from "../config/config.ts"
import { LoginThrottled } from "./errors.ts"
import { LoginAttemptStore } from "./login-attempt-store.ts"
import { withMethodSpans } from "../observability/spans.ts"

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
      const store = yield* LoginAttemptStore
      const config = yield* AppConfig
      const attempt = (keys: ThrottleKeys) =>
        Effect.gen(function*() {
          const account = yield* store.count(`account:${keys.account}`)
          const address = yield* store.count(`address:${keys.address}`)
          // A new window's first attempt sweeps the windows that ended (they only ever count up).
          if (account.attempts === 1) yield* store.sweep
          if (account.attempts > config.loginAttemptsPerAccount) {
            return yield* new LoginThrottled({ scope: "account", retryAfterSeconds: account.retry_after, limit: config.loginAttemptsPerAccount })
          }
          if (address.attempts > config.loginAttemptsPerAddress) {
            return yield* new LoginThrottled({ scope: "address", retryAfterSeconds: address.retry_after, limit: config.loginAttemptsPerAddress })
          }
        })
      const succeeded = (keys: ThrottleKeys) =>
        Effect.gen(function*() {
          yield* store.clear(`account:${keys.account}`)
          yield* store.giveBack(`address:${keys.address}`)
        })
      return LoginThrottle.of(withMethodSpans("LoginThrottle", { attempt, succeeded }))
    })
  ).pipe(Layer.provide(LoginAttemptStore.layer))
}
