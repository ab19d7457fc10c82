/** The SDK's pure parts: the backoff schedule, Retry-After and SSE frame parsing. */
import { describe, expect, it } from "vitest"
import { backoffDelay, defaultRetryPolicy, parseFrame, retryAfterMs } from "../../src/client/index.ts"

describe("backoff", () => {
  it("doubles from 0.5 s, caps at 8 s and adds at most 0.25 s of jitter", () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((retry) => backoffDelay(retry, defaultRetryPolicy, () => 0))).toEqual([500, 1000, 2000, 4000, 8000, 8000, 8000])
    expect(backoffDelay(1, defaultRetryPolicy, () => 0.999)).toBe(749)
    expect(defaultRetryPolicy.attempts).toBe(4)
  })

  it("reads Retry-After as seconds or as an HTTP date, and ignores nonsense", () => {
    expect(retryAfterMs("2")).toBe(2000)
    expect(retryAfterMs("0.5")).toBe(500)
    const now = Date.parse("2026-01-01T00:00:00Z")
    expect(retryAfterMs("Thu, 01 Jan 2026 00:00:03 GMT", now)).toBe(3000)
    expect(retryAfterMs("Wed, 31 Dec 2025 23:59:00 GMT", now)).toBe(0)
    expect(retryAfterMs(null)).toBeUndefined()
    expect(retryAfterMs("soon")).toBeUndefined()
    expect(retryAfterMs("-1")).toBeUndefined()
  })
})

describe("SSE frames", () => {
  it("takes the service's {type, data, created_at} envelope, and plain frames as they are", () => {
    expect(parseFrame(`id: 7\nevent: run.message\ndata: {"type":"run.message","data":{"content":"hi"},"created_at":"2026-01-01T00:00:00Z"}`))
      .toEqual({ id: 7, type: "run.message", data: { content: "hi" }, created_at: "2026-01-01T00:00:00Z" })
    expect(parseFrame(`: a comment\nevent: note\ndata: line one\ndata: line two`)).toEqual({ id: undefined, type: "note", data: "line one\nline two" })
    expect(parseFrame(`id:3\ndata:{"a":1}`)).toEqual({ id: 3, type: "message", data: { a: 1 } })
    expect(parseFrame(`: only a comment`)).toBeUndefined()
  })
})
