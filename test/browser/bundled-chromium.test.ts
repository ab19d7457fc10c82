/**
 * The bundled browser (@sparticuz/chromium, see src/browser/chromium-executable.ts) really runs
 * the pool: forced with WA_BROWSER=bundled, and reached as the fallback when no system Chromium
 * is found. Needs no system Chromium (this file does not use ./support.ts, which does).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger } from "effect"
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { navigate } from "../../src/browser/actions.ts"
import { selectChromium } from "../../src/browser/chromium-executable.ts"
import { observe } from "../../src/browser/observe.ts"
import { BrowserPool } from "../../src/browser/pool.ts"
import { AppConfig } from "../../src/config/config.ts"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"

const bundledVersion = (JSON.parse(readFileSync("node_modules/@sparticuz/chromium/package.json", "utf8")) as { version: string }).version

let dataDir = ""
let site: FixtureSites
beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), "wa-bundled-chromium-"))
  site = await startFixtureSites()
})
afterAll(async () => {
  await site.close()
  rmSync(dataDir, { recursive: true, force: true })
})

/** Log lines of one program, as Effect's structured records. */
const capturingLogger = () => {
  const lines: Array<{ message: unknown; annotations: Record<string, unknown> }> = []
  const logger = Logger.make((options) => {
    const record = Logger.formatStructured.log(options)
    lines.push({ message: record.message, annotations: record.annotations })
  })
  const launched = () => lines.filter((l) => l.message === "browser launched").map((l) => l.annotations)
  return { layer: Logger.layer([logger]), launched }
}

/** The executables of the Chromium browser processes this test process has running. */
const launchedChromiumExecutables = (): Array<string> =>
  readdirSync("/proc").filter((d) => /^\d+$/.test(d)).flatMap((d) => {
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8")
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      const cmdline = readFileSync(`/proc/${d}/cmdline`, "utf8")
      return ppid === process.pid && cmdline.includes("--remote-debugging-pipe") ? [readlinkSync(`/proc/${d}/exe`)] : []
    } catch {
      return []
    }
  })

/** A real page through the pool: the fixture site's page 1, then its next page by link. */
const browseFixture = Effect.scoped(Effect.gen(function*() {
  const pool = yield* BrowserPool
  const lease = yield* pool.acquireContext()
  yield* navigate(lease, `${site.url}/page/1`)
  const first = yield* observe(lease)
  yield* navigate(lease, `${site.url}/page/2`)
  const second = yield* observe(lease)
  const screenshot = yield* Effect.promise(() => lease.page()!.screenshot())
  return { first: first.text, second: second.text, screenshotBytes: screenshot.length, running: launchedChromiumExecutables() }
}))

describe("bundled Chromium (@sparticuz/chromium)", () => {
  it.live("WA_BROWSER=bundled: unpacked into the data dir on first use, runs a real page, logged as bundled", () =>
    Effect.gen(function*() {
      const logs = capturingLogger()
      const config = AppConfig.layerFrom({ WA_BROWSER: "bundled", WA_DATA_DIR: dataDir, WA_ALLOW_PRIVATE_NETWORKS: "true" })
      const result = yield* browseFixture.pipe(
        Effect.provide(Layer.mergeAll(BrowserPool.layerFromAppConfig.pipe(Layer.provide(config)), logs.layer))
      )
      const executable = path.join(dataDir, "chromium", bundledVersion, "chromium")
      assert.include(result.first, "Page 1")
      assert.include(result.second, "Page 2")
      assert.isAbove(result.screenshotBytes, 1000)
      // The process the pool started is the unpacked binary, not /usr/bin/chromium.
      assert.deepStrictEqual(result.running, [executable])
      const [line, ...more] = logs.launched()
      assert.strictEqual(more.length, 0)
      assert.strictEqual(line?.["browser_source"], "bundled")
      assert.strictEqual(line?.["executable"], executable)
      assert.strictEqual(line?.["package"], `@sparticuz/chromium@${bundledVersion}`)
      assert.strictEqual(line?.["unpacked_now"], "true")
      assert.strictEqual(line?.["reason"], "WA_BROWSER=bundled")
      assert.match(String(line?.["browser_version"]), new RegExp(`^${bundledVersion.split(".")[0]}\\.`))
    }), 30_000)

  it.live("auto falls back to it when no system Chromium is found; the unpacked copy is reused, with the bundled libraries", () =>
    Effect.gen(function*() {
      const selected = yield* Effect.promise(() =>
        // No CHROMIUM_PATH, no system binary at the paths looked at: what a fresh machine sees.
        // bundledLibraries: "bundled" as a machine without libnss3 would get.
        selectChromium({ dataDir, systemPaths: ["/nonexistent/usr/bin/chromium"], bundledLibraries: "bundled" })
      )
      assert.strictEqual(selected.source, "bundled")
      assert.strictEqual(selected.reason, "no CHROMIUM_PATH and no system Chromium")
      const logs = capturingLogger()
      const result = yield* browseFixture.pipe(
        Effect.provide(Layer.mergeAll(
          BrowserPool.layerWith({ executablePath: selected.executablePath, chromium: selected, allowPrivateNetworks: true }),
          logs.layer
        ))
      )
      assert.include(result.first, "Page 1")
      assert.deepStrictEqual(result.running, [selected.executablePath])
      const line = logs.launched()[0]
      assert.strictEqual(line?.["browser_source"], "bundled")
      assert.strictEqual(line?.["unpacked_now"], "false")
      assert.strictEqual(line?.["libraries"], "bundled")
    }), 30_000)
})

describe("browser selection order", () => {
  const fakeSystem = "/bin/sh" // any executable stands in for a system Chromium here

  it.live("CHROMIUM_PATH, then a system Chromium, then the bundled one; WA_BROWSER narrows it", () =>
    Effect.promise(async () => {
      const explicit = await selectChromium({ dataDir, explicitPath: "/opt/my/chromium", systemPaths: [fakeSystem] })
      assert.deepInclude(explicit, { source: "CHROMIUM_PATH", executablePath: "/opt/my/chromium" })
      const system = await selectChromium({ dataDir, systemPaths: ["/nonexistent/chromium", fakeSystem] })
      assert.deepInclude(system, { source: "system", executablePath: fakeSystem })
      const fallback = await selectChromium({ dataDir, systemPaths: ["/nonexistent/chromium"] })
      assert.strictEqual(fallback.source, "bundled")
      // system: never the bundled one; a missing browser is reported at the usual path.
      const systemOnly = await selectChromium({ dataDir, choice: "system", systemPaths: ["/nonexistent/chromium"] })
      assert.deepInclude(systemOnly, { source: "system", executablePath: "/nonexistent/chromium" })
      // bundled: neither CHROMIUM_PATH nor the system one.
      const forced = await selectChromium({ dataDir, choice: "bundled", explicitPath: "/opt/my/chromium", systemPaths: [fakeSystem] })
      assert.strictEqual(forced.source, "bundled")
      assert.include(forced.reason ?? "", "CHROMIUM_PATH is ignored")
    }))

  it.live("WA_BROWSER_CDP_URL wins over WA_BROWSER=bundled", () =>
    Effect.gen(function*() {
      const config = AppConfig.layerFrom({ WA_BROWSER: "bundled", WA_BROWSER_CDP_URL: "http://127.0.0.1:1", WA_DATA_DIR: dataDir })
      const error = yield* Effect.flip(Effect.scoped(Effect.gen(function*() {
        const pool = yield* BrowserPool
        return yield* pool.acquireContext()
      })).pipe(Effect.provide(BrowserPool.layerFromAppConfig.pipe(Layer.provide(config)))))
      assert.strictEqual(error._tag, "BrowserUnavailable")
      assert.include(error.message, "could not connect to the browser at http://127.0.0.1:1")
    }))

  it.live("an unknown WA_BROWSER stops start-up naming the variable", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Effect.gen(function*() {
        return yield* AppConfig
      }).pipe(Effect.provide(AppConfig.layerFrom({ WA_BROWSER: "firefox" }))))
      assert.strictEqual(exit._tag, "Failure")
      assert.include(String(exit._tag === "Failure" ? exit.cause : ""), "WA_BROWSER")
    }))
})
