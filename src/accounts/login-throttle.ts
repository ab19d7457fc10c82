/**
 * Sign-in throttling against password guessing, per account (the email, lower-cased) and per
 * client address, in windows kept in PostgreSQL so every node counts together. The limit holds over
 * a sliding window: the window before counts in proportion to how much of it still overlaps, so a
 * burst on each side of a window's edge is not allowed twice the limit. An attempt is
 * counted *before* the password is checked, with one atomic upsert per scope: under concurrent
 * guesses every attempt gets its own number, so exactly `limit` attempts per window are checked
 * and the rest get 429 without a hash being computed. A successful sign-in clears the account's
 * count and gives the address its attempt back (a shared NAT address is not used up by people
 * who sign in correctly).
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config/config.ts"
import { LoginThrottled } from "./errors.ts"
import { type Counted, LoginAttemptStore } from "./login-attempt-store.ts"
import { withMethodSpans } from "../observability/spans.ts"

export interface ThrottleKeys {
  readonly account: string
  readonly address: string
}

/**
 * The sliding-window verdict on one counted attempt: over the limit, and in how many seconds a next
 * attempt (which is counted too) would be let through.
 */
export const slidingVerdict = (counted: Counted, limit: number, windowSeconds: number) => {
  const { attempts, seconds_into_window: into } = counted
  // Of the window before, only the attempts that were checked weigh: the refused ones already
  // kept that window shut, and an attacker's hammering must not push the wait past a window.
  const previous = Math.min(counted.previous_attempts, limit)
  const weighted = attempts + previous * Math.max(0, windowSeconds - into) / windowSeconds
  if (weighted <= limit) return { over: false, retryAfterSeconds: 0 } as const
  const left = windowSeconds - into
  // Later in this window, once enough of the window before has slid out.
  const inThisWindow = attempts + 1 <= limit && previous > 0
    ? windowSeconds * (1 - (limit - attempts - 1) / previous) - into
    : Infinity
  // Otherwise early in the next window, once enough of this one has slid out.
  const carried = Math.min(attempts, limit)
  const inNextWindow = left + (limit >= carried + 1 ? 0 : windowSeconds * (1 - (limit - 1) / carried))
  const wait = Math.min(inThisWindow < left ? inThisWindow : Infinity, inNextWindow)
  return { over: true, retryAfterSeconds: Math.max(1, Math.ceil(wait)) } as const
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
          const forAccount = slidingVerdict(account, config.loginAttemptsPerAccount, config.loginWindowSeconds)
          if (forAccount.over) {
            return yield* new LoginThrottled({ scope: "account", retryAfterSeconds: forAccount.retryAfterSeconds, limit: config.loginAttemptsPerAccount })
          }
          const forAddress = slidingVerdict(address, config.loginAttemptsPerAddress, config.loginWindowSeconds)
          if (forAddress.over) {
            return yield* new LoginThrottled({ scope: "address", retryAfterSeconds: forAddress.retryAfterSeconds, limit: config.loginAttemptsPerAddress })
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
