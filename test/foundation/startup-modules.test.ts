/**
 * What `serve` loads before it is ready: not playwright-core (a quarter to half a second of CPU),
 * which it needs only when its first browser starts (src/browser/playwright.ts), and not the Redis
 * client (about 650 modules, a fifth of a second), which only a scaled-out service with REDIS_URL
 * uses. A value import of "playwright-core" anywhere in the server's module graph, or an import
 * from the "@effect/platform-node" index (it re-exports NodeRedis), brings them back; this test
 * says where.
 */
import { execFile } from "node:child_process"
import * as path from "node:path"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"

const root = path.resolve(import.meta.dirname, "../..")

describe("the server's module graph", () => {
  it("does not load playwright-core until a browser starts, nor the Redis client without REDIS_URL", async () => {
    const script = [
      "import { createRequire } from 'node:module'",
      `await import(${JSON.stringify(path.join(root, "src/server.ts"))})`,
      "const loaded = Object.keys(createRequire(import.meta.url).cache).filter((file) => ['/playwright-core/', '/node_modules/redis/', '/node_modules/@redis/'].some((part) => file.includes(part)))",
      "console.log(JSON.stringify(loaded))"
    ].join("\n")
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { cwd: root })
    expect(JSON.parse(stdout.trim().split("\n").at(-1)!)).toEqual([])
  }, 60_000)
})
