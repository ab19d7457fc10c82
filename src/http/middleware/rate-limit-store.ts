/**
 * Sliding-window rate limiting per API key (the sliding-window counter: the previous fixed window's
 * count weighted by how much of it still overlaps the sliding window, plus the current window's).
 * In-process by default; in Redis when `REDIS_URL` is set, so every API node shares one budget.
 */
import { Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../../config/config.ts"
import { withMethodSpans } from "../../observability/spans.ts"

export interface RateDecision {
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  /** Seconds until the budget has room again (for Retry-After) or until the window resets. */
  readonly resetSeconds: number
  readonly windowSeconds: number
}

export class RateLimitStore extends Context.Service<RateLimitStore, {
  readonly consume: (key: string) => Effect.Effect<RateDecision>
}>()("wa/http/RateLimitStore") {
  static readonly layer = Layer.effect(
    RateLimitStore,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const limit = config.rateLimitRequests
      const windowMs = config.rateLimitWindowSeconds * 1000
      const consume = Option.isSome(config.redisUrl)
        ? yield* redisCounter(config.redisUrl.value, limit, windowMs)
        : memoryCounter(limit, windowMs)
      return RateLimitStore.of(withMethodSpans("RateLimitStore", { consume }))
    })
  )
}

const decide = (previous: number, current: number, now: number, limit: number, windowMs: number): RateDecision => {
  const windowStart = Math.floor(now / windowMs) * windowMs
  const overlap = 1 - (now - windowStart) / windowMs
  const used = previous * overlap + current
  const allowed = used <= limit
  const remaining = Math.max(0, Math.floor(limit - used))
  // When refused, room appears once enough of the previous window has slid out (or the window turns).
  const resetMs = allowed || previous === 0
    ? windowStart + windowMs - now
    : Math.min(windowStart + windowMs - now, Math.ceil(((used - limit) / previous) * windowMs))
  return { allowed, limit, remaining, resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)), windowSeconds: windowMs / 1000 }
}

const memoryCounter = (limit: number, windowMs: number) => {
  const counters = new Map<string, { window: number; previous: number; current: number }>()
  return (key: string) =>
    Effect.sync(() => {
      const now = Date.now()
      const window = Math.floor(now / windowMs)
      let entry = counters.get(key)
      if (entry === undefined || entry.window < window - 1) entry = { window, previous: 0, current: 0 }
      else if (entry.window === window - 1) entry = { window, previous: entry.current, current: 0 }
      const decision = decide(entry.previous, entry.current + 1, now, limit, windowMs)
      // A refused request does not spend budget, so a client that backs off is not punished further.
      if (decision.allowed) entry = { ...entry, current: entry.current + 1 }
      counters.set(key, entry)
      return decision
    })
}

// Atomically reads the previous window and increments the current one (undone when refused).
const SLIDING_WINDOW_SCRIPT = `
local current = redis.call('INCR', KEYS[2])
if current == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[1] * 2) end
local previous = tonumber(redis.call('GET', KEYS[1]) or '0')
local used = previous * tonumber(ARGV[2]) + current
if used > tonumber(ARGV[3]) then redis.call('DECR', KEYS[2]) end
return {previous, current}
`

const redisCounter = (url: string, limit: number, windowMs: number) =>
  Effect.gen(function*() {
    const client = yield* Effect.acquireRelease(
      Effect.promise(async () => {
        // Loaded only when scaled out (REDIS_URL): a single node never needs it.
        const { createClient } = await import("redis")
        const client = createClient({ url })
        client.on("error", () => {}) // reconnects by itself; failures surface on commands
        await client.connect()
        return client
      }),
      (client) => Effect.promise(() => client.quit().catch(() => undefined))
    )
    return (key: string) =>
      Effect.promise(async () => {
        const now = Date.now()
        const window = Math.floor(now / windowMs)
        const overlap = 1 - (now - window * windowMs) / windowMs
        const [previous, current] = await client.eval(SLIDING_WINDOW_SCRIPT, {
          keys: [`wa:rl:${key}:${window - 1}`, `wa:rl:${key}:${window}`],
          arguments: [String(windowMs), String(overlap), String(limit)]
        }) as [number, number]
        return decide(previous, current, now, limit, windowMs)
      })
  })
