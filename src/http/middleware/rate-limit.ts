/** Applies the per-key sliding window and reports it in the RateLimit headers (IETF draft). */
import { Effect, Layer, type Types } from "effect"
import { HttpServerResponse } from "effect/http"
import { TooManyRequests } from "../errors.ts"
import { CurrentCaller, RateLimit } from "../api/security.ts"
import { type RateDecision, RateLimitStore } from "./rate-limit-store.ts"

const headers = (decision: RateDecision) => ({
  "ratelimit-policy": `${decision.limit};w=${decision.windowSeconds}`,
  ratelimit: `limit=${decision.limit}, remaining=${decision.remaining}, reset=${decision.resetSeconds}`
})

export const RateLimitLive = Layer.effect(
  RateLimit,
  Effect.gen(function*() {
    const store = yield* RateLimitStore
    // Plain combinators rather than a generator: this runs on every authenticated request.
    return RateLimit.of((httpEffect) =>
      CurrentCaller.use((caller) =>
        Effect.flatMap(store.consume(caller.id), (decision): Effect.Effect<HttpServerResponse.HttpServerResponse, TooManyRequests | Types.unhandled> =>
          decision.allowed
            ? Effect.map(httpEffect, (response) => HttpServerResponse.setHeaders(response, headers(decision)))
            : Effect.fail(
              new TooManyRequests({
                code: "rate_limit_exceeded",
                detail: `rate limit of ${decision.limit} requests per ${decision.windowSeconds} s exceeded; retry after ${decision.resetSeconds} s`,
                // The error envelope middleware turns retry_after_seconds into the Retry-After header.
                extra: { limit: decision.limit, window_seconds: decision.windowSeconds, retry_after_seconds: decision.resetSeconds }
              })
            )))
    )
  })
)
