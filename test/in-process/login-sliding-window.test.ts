/**
 * The sign-in limiter's sliding-window verdict (src/accounts/login-throttle.ts): the window before
 * weighs in proportion to its overlap, and Retry-After names the first moment a next attempt (which
 * is counted too) would be checked.
 */
import { describe, expect, it } from "vitest"
import { slidingVerdict } from "../../src/accounts/login-throttle.ts"

const verdict = (attempts: number, previous: number, into: number) =>
  slidingVerdict({ attempts, previous_attempts: previous, seconds_into_window: into }, 4, 900)

describe("sliding sign-in window (limit 4 per 900 s)", () => {
  it("lets the limit through in a quiet window and refuses the next", () => {
    expect(verdict(4, 0, 10).over).toBe(false)
    const fifth = verdict(5, 0, 10)
    expect(fifth.over).toBe(true)
    // Its count slides out of the next window at 1/4 of it: 890 s to the edge, then 225 s.
    expect(fifth.retryAfterSeconds).toBe(890 + 225)
  })

  it("a burst on each side of a window's edge is refused", () => {
    // Four guesses at the end of the last window, a fifth one second into this one.
    const fifth = verdict(1, 4, 1)
    expect(fifth.over).toBe(true)
    // A next attempt (the second of this window) passes once half of the 4 have slid out: 450 s into it.
    expect(fifth.retryAfterSeconds).toBe(449)
  })

  it("the window before weighs by its overlap only", () => {
    expect(verdict(1, 4, 700).over).toBe(false)
    expect(verdict(2, 4, 450).over).toBe(false)
    expect(verdict(3, 4, 450).over).toBe(true)
  })

  it("refused attempts of the window before weigh no more than the limit", () => {
    const hammered = verdict(1, 500, 1)
    expect(hammered.over).toBe(true)
    expect(hammered.retryAfterSeconds).toBe(449)
  })
})
