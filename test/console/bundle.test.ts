/**
 * The console's bundle holds the console and React, nothing of the server (issue 27 §4). The
 * console takes its types from the contract's schemas (console/src/wire.ts, console/src/events.ts)
 * with `import type`, which the build erases; a value import of them (or of effect) would bundle
 * the schemas and effect's Schema, about 50 KB gzipped more. Built the way `node console/build.ts`
 * builds it (production), with a source map that names every module the bundle holds.
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
let sources: Array<string>

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "wa-console-bundle-"))
  await promisify(execFile)(
    process.execPath,
    [path.join(root, "node_modules/vite/bin/vite.js"), "build", "-c", "console/vite.config.ts", "--outDir", dir, "--emptyOutDir", "--sourcemap"],
    // console/build.ts builds for production whatever NODE_ENV says (vitest sets "test").
    { cwd: root, env: { ...process.env, NODE_ENV: "production" } }
  )
  const assets = path.join(dir, "assets")
  const js = readdirSync(assets).filter((file) => file.endsWith(".js"))
  expect(js).toHaveLength(1)
  bundle = readFileSync(path.join(assets, js[0]!), "utf8")
  const map = JSON.parse(readFileSync(path.join(assets, `${js[0]}.map`), "utf8")) as { sources: Array<string> }
  sources = map.sources.map((source) => path.relative(root, path.resolve(assets, source)))
}, 180_000)

afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe("the console's bundle (console/dist)", () => {
  it("is made of the console's own modules and React only", () => {
    const packages = new Set(
      sources.filter((source) => source.includes("node_modules/")).map((source) => {
        const [scopeOrName, name] = source.split("node_modules/").at(-1)!.split("/")
        return scopeOrName!.startsWith("@") ? `${scopeOrName}/${name}` : scopeOrName!
      })
    )
    expect([...packages].sort()).toEqual(["react", "react-dom", "scheduler"])
    const own = sources.filter((source) => !source.includes("node_modules/"))
    expect(own.filter((source) => !source.startsWith("console/src/"))).toEqual([])
    // The modules of types only are not in it at all.
    expect(own).not.toContain("console/src/wire.ts")
  })

  it("holds no server code: no setting name, no SQL, no schema of the contract", () => {
    expect(bundle.match(/WA_[A-Z0-9_]+/)?.[0]).toBeUndefined()
    expect(bundle.match(/SELECT\s|INSERT INTO/i)?.[0]).toBeUndefined()
    // A description of the contract (a schema annotation of src/domain/wire/do-anything.ts).
    expect(bundle).not.toContain("Records the run's pages (rrweb DOM recording")
  })

  it("stays within 100 KB gzipped (about 87 KB: React and the console)", () => {
    const gzipped = gzipSync(bundle).length
    console.log(`console bundle: ${(bundle.length / 1024).toFixed(1)} KB, ${(gzipped / 1024).toFixed(1)} KB gzipped`)
    expect(gzipped).toBeLessThanOrEqual(100 * 1024)
  })
})
