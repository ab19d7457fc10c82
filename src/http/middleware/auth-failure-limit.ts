/**
 * Requests that fail authentication are limited per client address: every unknown key costs a
 * database lookup, so an address that has failed `perMinute` times in the current minute is
 * answered 429 without one. Tokens that authenticated before still get through (a typo from the
 * same address, or a proxy shared with a key guesser, does not lock out a working key); they are
 * then checked as usual. Counted in this process: behind a proxy every client has the proxy's
 * address, but only failures count.
 */
import { TooManyRequests } from "../errors.ts"

const WINDOW_MS = 60_000
/** Beyond this many tracked addresses (or known tokens) a table starts afresh, so none grows without bound. */
const MAX_ENTRIES = 10_000

export interface AuthFailureLimiter {
  /** Seconds until the address may try this token again, or undefined when it may try now. */
  readonly blockedFor: (address: string, token: string, now: number) => number | undefined
  readonly recordFailure: (address: string, now: number) => void
  readonly recordSuccess: (token: string) => void
}

export const makeAuthFailureLimiter = (perMinute: number): AuthFailureLimiter => {
  const failures = new Map<string, { readonly window: number; count: number }>()
  const knownTokens = new Set<string>()
  return {
    blockedFor: (address, token, now) => {
      const entry = failures.get(address)
      const window = Math.floor(now / WINDOW_MS)
      if (entry === undefined || entry.window !== window || entry.count < perMinute || knownTokens.has(token)) return undefined
      return Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - now) / 1000))
    },
    recordFailure: (address, now) => {
      const window = Math.floor(now / WINDOW_MS)
      const entry = failures.get(address)
      if (entry !== undefined && entry.window === window) {
        entry.count++
        return
      }
      if (failures.size >= MAX_ENTRIES) failures.clear()
      failures.set(address, { window, count: 1 })
    },
    recordSuccess: (token) => {
      if (knownTokens.has(token)) return
      if (knownTokens.size >= MAX_ENTRIES) knownTokens.clear()
      knownTokens.add(token)
    }
  }
}

/**
 * The 429 for an address that keeps failing with a token it never authenticated with (`what`
 * names what it kept sending wrong), or undefined when it may try now.
 */
export const refuseBlocked = (failures: AuthFailureLimiter, address: string, token: string, what: string): TooManyRequests | undefined => {
  const waitSeconds = failures.blockedFor(address, token, Date.now())
  if (waitSeconds === undefined) return undefined
  return new TooManyRequests({
    code: "rate_limit_exceeded",
    detail: `too many ${what} from this address; retry after ${waitSeconds} s`,
    // The error envelope middleware turns retry_after_seconds into the Retry-After header.
    extra: { retry_after_seconds: waitSeconds }
  })
}
