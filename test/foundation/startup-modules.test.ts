/**
 * What `serve` loads before it is ready: not playwright-core (a quarter to half a second of CPU),
 * which it needs only when its first browser starts (src/browser/playwright.ts). A value import
 * of "playwright-core" anywhere in the server's module graph brings it back; this test says where.
 */
import { execFile } from "node:child_process"
import * as path from "node:path"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"

const root = path.resolve(import.meta.dirname, "../..")

describe("the server's module graph", () => {
  it("does not load playwright-core until a browser starts", async () => {
    const script = [
      "import { createRequire } from 'node:module'",
      `await import(${JSON.stringify(path.join(root, "src/server.ts"))})`,
      "const loaded = Object.keys(createRequire(import.meta.url).cache).filter((file) => file.includes('/playwright-core/'))",
      "console.log(JSON.stringify(loaded))"
    ].join("\n")
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { cwd: root })
    expect(JSON.parse(stdout.trim().split("\n").at(-1)!)).toEqual([])
  }, 60_000)
})
