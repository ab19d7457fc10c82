/**
 * Requests that fail authentication are limited per client address: every unknown key costs a
 * database lookup, so a client guessing keys is answered 429 without one once it has failed
 * `perMinute` times in the current minute. Counted in this process (an API node behind a proxy sees
 * the proxy's address; only failures count, so well-behaved clients behind it are not affected).
 */
const WINDOW_MS = 60_000
/** Beyond this many tracked addresses the table starts afresh, so it cannot grow without bound. */
const MAX_ADDRESSES = 10_000

export interface AuthFailureLimiter {
  /** Seconds until the address may try again, or undefined when it may try now. */
  readonly blockedFor: (address: string, now: number) => number | undefined
  readonly recordFailure: (address: string, now: number) => void
}

export const makeAuthFailureLimiter = (perMinute: number): AuthFailureLimiter => {
  const failures = new Map<string, { readonly window: number; count: number }>()
  return {
    blockedFor: (address, now) => {
      const entry = failures.get(address)
      const window = Math.floor(now / WINDOW_MS)
      if (entry === undefined || entry.window !== window || entry.count < perMinute) return undefined
      return Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - now) / 1000))
    },
    recordFailure: (address, now) => {
      const window = Math.floor(now / WINDOW_MS)
      const entry = failures.get(address)
      if (entry !== undefined && entry.window === window) {
        entry.count++
        return
      }
      if (failures.size >= MAX_ADDRESSES) failures.clear()
      failures.set(address, { window, count: 1 })
    }
  }
}
