/** Applies the per-key sliding window and reports it in the RateLimit headers (IETF draft). */
import { Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { TooManyRequests } from "../errors.ts"
import { CurrentKey, RateLimit } from "../api/security.ts"
import { type RateDecision, RateLimitStore } from "./rate-limit-store.ts"

const headers = (decision: RateDecision) => ({
  "ratelimit-policy": `${decision.limit};w=${decision.windowSeconds}`,
  ratelimit: `limit=${decision.limit}, remaining=${decision.remaining}, reset=${decision.resetSeconds}`
})

export const RateLimitLive = Layer.effect(
  RateLimit,
  Effect.gen(function*() {
    const store = yield* RateLimitStore
    return RateLimit.of(Effect.fnUntraced(function*(httpEffect) {
      const key = yield* CurrentKey
      const decision = yield* store.consume(key.keyId)
      if (!decision.allowed) {
        return yield* new TooManyRequests({
          code: "rate_limit_exceeded",
          detail: `rate limit of ${decision.limit} requests per ${decision.windowSeconds} s exceeded; retry after ${decision.resetSeconds} s`,
          // The error envelope middleware turns retry_after_seconds into the Retry-After header.
          extra: { limit: decision.limit, window_seconds: decision.windowSeconds, retry_after_seconds: decision.resetSeconds }
        })
      }
      const response = yield* httpEffect
      return HttpServerResponse.setHeaders(response, headers(decision))
    }))
  })
)
