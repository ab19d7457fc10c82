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
 * - No check only the server makes: a cron expression's and a time zone's validity (effect's Cron and
 *   its time-zone code) and Track's rule language are the server's (it answers a 422); the bundle
 *   checks the shape of a schedule and of a rule (vite.client.config.ts, src/client/browser/).
 *
 * The gzipped size is logged and bounded by 80 KB (issue 27; the floor Effect's HttpApiClient sets is
 * about 65 KB); the OpenAPI prose is left out of the build, and so are the contract's declarations the
 * SDK does not reach (vite.client.config.ts).
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

  it("calls no Node global a browser lacks (the size bounds of JSON fields measure with TextEncoder)", () => {
    expect(bundle.match(/\bBuffer\.\w+/)?.[0]).toBeUndefined()
    expect(bundle.match(/\bprocess\.env\b/)?.[0]).toBeUndefined()
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

  it("holds none of the checks the server makes: cron expressions, time zones, Track's rule language", () => {
    // effect's Cron (its parser's type id) and the named time zones of DateTime (read through Intl).
    expect(bundle).not.toContain("~effect/Cron")
    expect(bundle).not.toContain("Intl.DateTimeFormat")
    // Messages of src/domain/schedule-validity.ts and of the rule parser (src/domain/track-rules.ts).
    expect(bundle).not.toContain("invalid cron expression")
    expect(bundle).not.toContain("unknown time zone")
    expect(bundle).not.toContain("a rule has exactly one form")
    // The shape checks of a schedule stay (src/domain/schedule-spec.ts).
    expect(bundle).toContain("a cron schedule needs expr (or its alias cron)")
  })

  it("stays within 80 KB gzipped (102.6 KB with the contract's prose, 88 KB with the server's checks)", () => {
    const gzipped = gzipSync(bundle).length
    console.log(`browser.js: ${(bundle.length / 1024).toFixed(1)} KB, ${(gzipped / 1024).toFixed(1)} KB gzipped`)
    expect(gzipped).toBeLessThanOrEqual(80 * 1024)
  })
})
