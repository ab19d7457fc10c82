/**
 * The per-address limit on failed authentication (src/http/middleware/auth-failure-limit.ts) over a
 * sliding minute: failures just before a minute's edge still weigh just after it, a token that
 * authenticated before still gets through, and the wait named is when a next try would be let in.
 */
import { describe, expect, it } from "vitest"
import { makeAuthFailureLimiter } from "../../src/http/middleware/auth-failure-limit.ts"

const minute = 60_000
const edge = 1_000 * minute

describe("auth failures per address (5 per sliding minute)", () => {
  it("blocks after five failures in one minute, not before; other addresses are not affected", () => {
    const limiter = makeAuthFailureLimiter(5)
    for (let i = 0; i < 4; i++) limiter.recordFailure("a", edge + 1_000 + i)
    expect(limiter.blockedFor("a", "t", edge + 2_000)).toBeUndefined()
    limiter.recordFailure("a", edge + 2_000)
    // The minute turns in 58 s; 12 s into the next one a fifth of these five has slid out.
    expect(limiter.blockedFor("a", "t", edge + 2_000)).toBe(70)
    expect(limiter.blockedFor("b", "t", edge + 2_000)).toBeUndefined()
  })

  it("five failures just before a minute's edge still block just after it, until enough slid out", () => {
    const limiter = makeAuthFailureLimiter(5)
    for (let i = 0; i < 5; i++) limiter.recordFailure("a", edge - 500 + i)
    expect(limiter.blockedFor("a", "t", edge + 100)).toBeGreaterThanOrEqual(1)
    // One failure's share (a fifth of the minute) has slid out 12 s into the new minute.
    expect(limiter.blockedFor("a", "t", edge + 11_000)).toBe(1)
    expect(limiter.blockedFor("a", "t", edge + 12_500)).toBeUndefined()
    // A minute later the old ones weigh nothing.
    expect(limiter.blockedFor("a", "t", edge + 2 * minute + 1)).toBeUndefined()
  })

  it("a token that authenticated before still gets through a blocked address", () => {
    const limiter = makeAuthFailureLimiter(2)
    limiter.recordSuccess("good")
    limiter.recordFailure("a", edge + 1)
    limiter.recordFailure("a", edge + 2)
    expect(limiter.blockedFor("a", "guess", edge + 3)).toBeGreaterThanOrEqual(1)
    expect(limiter.blockedFor("a", "good", edge + 3)).toBeUndefined()
  })
})
