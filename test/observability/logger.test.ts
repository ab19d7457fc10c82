/** The log lines the service writes: the access log's line and the batch they go through. */
import { Context, Effect, Layer } from "effect"
import { afterEach, describe, expect, it, vi } from "vitest"
import { formatAccessLine, formatPlainLine, LogLines } from "../../src/observability/logger.ts"

describe("formatAccessLine", () => {
  const cases = [
    { level: "Info", requestId: "3f1c2b9e-0000-4000-8000-000000000000", method: "GET", path: "/v1/projects/proj_1/api_keys/key_1", status: 200, durationMs: 9.4 },
    { level: "Info", requestId: "trace-123.abc", method: "DELETE", path: "/a\"b\\c/é/\u2028", status: 404, durationMs: 3 },
    { level: "Error", requestId: "r:1", method: "POST", path: "/", status: 500, durationMs: 0.1 }
  ] as const
  it.each(cases)("writes the line the logger writes for the same annotations ($method $path)", ({ level, requestId, method, path, status, durationMs }) => {
    const date = new Date("2026-11-26T12:00:00.123Z")
    const line = formatAccessLine(level, date, 42, { requestId, method, path, status, durationMs })
    expect(line).toBe(formatPlainLine("request", level, date, { request_id: requestId, method, path, status, duration_ms: durationMs }, 42))
    expect(JSON.parse(line).annotations).toEqual({ request_id: requestId, method, path, status, duration_ms: durationMs })
  })
})

describe("LogLines", () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it("writes the lines of a batch in one write, nothing while idle, and the rest when it closes", async () => {
    const writes: Array<string> = []
    vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
      writes.push(String(chunk))
      return true
    })
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const lines = Context.get(yield* Layer.build(LogLines.layer), LogLines)
      yield* Effect.sleep("50 millis")
      expect(writes).toEqual([])
      lines.push("one")
      lines.push("two")
      yield* Effect.promise(() => vi.waitFor(() => expect(writes).toEqual(["one\ntwo\n"]), { timeout: 5_000, interval: 5 }))
      lines.push("three")
    })))
    expect(writes).toEqual(["one\ntwo\n", "three\n"])
  })
})
