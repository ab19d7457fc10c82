/**
 * Requests that fail authentication are limited per client address: every unknown key costs a
 * database lookup, so an address that has failed `perMinute` times in the last minute (sliding)
 * is answered 429 without one. Tokens that authenticated before still get through (a typo from the
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
  // A sliding minute (the minute before weighs by its overlap), so failures on both sides of a
  // minute's edge do not get twice the limit.
  const failures = new Map<string, { window: number; previous: number; current: number }>()
  const knownTokens = new Set<string>()
  const rolled = (address: string, window: number) => {
    const entry = failures.get(address)
    if (entry === undefined) return undefined
    if (entry.window === window) return entry
    const next = { window, previous: entry.window === window - 1 ? entry.current : 0, current: 0 }
    failures.set(address, next)
    return next
  }
  return {
    blockedFor: (address, token, now) => {
      const window = Math.floor(now / WINDOW_MS)
      const entry = rolled(address, window)
      if (entry === undefined || knownTokens.has(token)) return undefined
      const into = (now - window * WINDOW_MS) / WINDOW_MS
      // A try is let in while one more failure would keep the weighted count within the limit.
      const room = perMinute - 1
      if (entry.previous * (1 - into) + entry.current <= room) return undefined
      // Room appears once enough of the minute before has slid out, or else in the next minute
      // once enough of this one has.
      const later = entry.current <= room && entry.previous > 0 ? 1 - (room - entry.current) / entry.previous : Infinity
      const waitWindows = later < 1 ? later - into : 1 - into + Math.max(0, 1 - room / entry.current)
      return Math.max(1, Math.ceil(waitWindows * WINDOW_MS / 1000))
    },
    recordFailure: (address, now) => {
      const window = Math.floor(now / WINDOW_MS)
      const entry = rolled(address, window)
      if (entry !== undefined) {
        entry.current++
        return
      }
      if (failures.size >= MAX_ENTRIES) failures.clear()
      failures.set(address, { window, previous: 0, current: 1 })
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
