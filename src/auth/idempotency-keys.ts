/**
 * IdempotencyKeys: the claims of Idempotency-Key requests, scoped to a caller (project and API
 * key), with the lease a running request renews (WA_IDEMPOTENCY_LEASE_SECONDS) and the window a
 * kept answer is replayed in (24 h). The HTTP middleware (src/http/middleware/idempotency.ts)
 * decides what to answer; the statements that make a claim safe under races are the store's
 * (src/store/idempotency-records.ts), and a keyed create records its resource on the claim it
 * reads from KeyedRequest (src/store/keyed-create.ts).
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config/config.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { idempotencyRecords } from "../store/idempotency-records.ts"

export type { HeldKey, StoredResponse } from "../store/idempotency-records.ts"
export { ClaimLost, type KeyedClaim, KeyedRequest } from "../store/keyed-create.ts"

/** How long a kept answer is replayed for the same key. */
export const IDEMPOTENCY_WINDOW_HOURS = 24

/** The claims' operations (claim, find, renew, release, store), as the store makes them. */
type Claims = Effect.Success<ReturnType<typeof idempotencyRecords>>

export class IdempotencyKeys extends Context.Service<IdempotencyKeys, Claims>()("wa/auth/IdempotencyKeys") {
  static readonly layer = Layer.effect(
    IdempotencyKeys,
    Effect.gen(function*() {
      const { idempotencyLeaseSeconds } = yield* AppConfig
      const claims = yield* idempotencyRecords({ leaseSeconds: idempotencyLeaseSeconds, windowHours: IDEMPOTENCY_WINDOW_HOURS })
      return IdempotencyKeys.of(withMethodSpans("IdempotencyKeys", claims))
    })
  )
}
