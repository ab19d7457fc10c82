/**
 * The browser SDK bundle holds no server code (issue 27 §1): it is built from src/client the way
 * `npm run build:client` builds it (vite.client.config.ts) and scanned.
 *
 * - No setting is read in it: config reads each `WA_*` name as a string literal
 *   (`Config.string("WA_PORT")`), so no quoted `WA_*` literal may appear. Setting names the
 *   contract's own prose mentions (schema descriptions in src/domain and src/http/api, e.g.
 *   "interval_seconds ≥ WA_SCHEDULE_MIN_INTERVAL_SECONDS") are documentation and may appear, only those.
 * - No SQL (stores, the outbox), no playwright / Chromium (the browser pool).
 *
 * The gzipped size is logged and bounded (goal ≤ 80 KB; the floor Effect's HttpApiClient sets is about
 * 65 KB); the OpenAPI prose is left out of the build (vite.client.config.ts).
 */
import { execFile } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { gzipSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const root = path.resolve(import.meta.dirname, "../..")

let dir: string
let bundle: string

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "wa-sdk-bundle-"))
  await promisify(execFile)(
    process.execPath,
    [path.join(root, "node_modules/vite/bin/vite.js"), "build", "-c", "vite.client.config.ts", "--outDir", dir],
    { cwd: root }
  )
  bundle = readFileSync(path.join(dir, "browser.js"), "utf8")
}, 180_000)

afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe("the browser SDK bundle (dist/client/browser.js)", () => {
  it("reads no WA_* setting: no quoted setting name, and only names the contract's documentation mentions", () => {
    const quoted = [...bundle.matchAll(/["'`](WA_[A-Z0-9_]+)["'`]/g)].map((m) => m[1])
    expect(quoted).toEqual([])
    const documented = new Set<string>()
    for (const folder of ["src/domain", "src/http/api", "src/client"]) {
      for (const file of readdirSync(path.join(root, folder))) {
        if (!file.endsWith(".ts")) continue
        for (const name of readFileSync(path.join(root, folder, file), "utf8").match(/WA_[A-Z0-9_]+/g) ?? []) documented.add(name)
      }
    }
    const mentioned = [...new Set(bundle.match(/WA_[A-Z0-9_]+/g) ?? [])]
    expect(mentioned.filter((name) => !documented.has(name))).toEqual([])
  })

  it("holds no SQL", () => {
    for (const sql of [/SELECT\s/, /INSERT INTO/i, /\bDELETE FROM\b/i, /\bON CONFLICT\b/i, /\bFOR UPDATE\b/]) {
      expect(bundle.match(sql)?.[0]).toBeUndefined()
    }
  })

  it("holds no browser automation (playwright, Chromium)", () => {
    expect(bundle.match(/playwright/i)?.[0]).toBeUndefined()
    expect(bundle.match(/chromium/i)?.[0]).toBeUndefined()
  })

  it("holds none of the OpenAPI document's prose (the server builds the document)", () => {
    // Two descriptions of the contract, one from a schema annotation, one from an endpoint's.
    expect(bundle).not.toContain("Records the run's pages (rrweb DOM recording")
    expect(bundle).not.toContain("### Trigger and stop-condition rules")
  })

  it("stays within its size: 88 KB gzipped today (102.6 KB before the prose left it); the goal is 80 KB", () => {
    const gzipped = gzipSync(bundle).length
    console.log(`browser.js: ${(bundle.length / 1024).toFixed(1)} KB, ${(gzipped / 1024).toFixed(1)} KB gzipped`)
    expect(gzipped).toBeLessThanOrEqual(90 * 1024)
  })
})
