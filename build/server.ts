/**
 * The server as `npm start` runs it: src/main.ts and the modules it loads bundled by Rolldown into
 * dist/server/ (ES modules, split at each dynamic import), with effect and @effect/* inside.
 * Loading ~1,000 separate modules (resolving each, reading its package scope, compiling it) was most
 * of a cold start; a few large chunks load in a fraction of that. Every other package stays an
 * import of node_modules, as from the sources (native parts, files read from their packages,
 * optional dependencies, and modules loaded only when used, such as playwright-core and redis).
 *
 * The migrations are entries of their own, dist/server/migrations/<number>_<name>.js, so that the
 * bundled migrator reads them from a folder next to it exactly as the sources' does
 * (src/store/migrations.ts), sharing the bundle's effect.
 *
 * `prepare` (npm install) builds it and `prestart` rebuilds it when a source is newer; the test
 * harness does the same before the process-level suites (test/support/global-setup.ts).
 * Without Rolldown (an install with --omit=dev) it says so and exits 0: bin/serve.js then runs
 * the sources.
 *
 *   node build/server.ts              build now
 *   node build/server.ts --if-stale   build only when dist/server is missing or older than a source
 */
import { existsSync, linkSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { newestModification } from "./newest.ts"

const root = path.resolve(import.meta.dirname, "..")
export const serverDist = path.join(root, "dist", "server")
/** Written last: its presence says the build finished, its time says when. */
const stamp = path.join(serverDist, "built")

/** The chunk files a build made itself (JSON list), as opposed to those it carries from the build before. */
const ownChunksFile = "chunks.json"

/**
 * Chunks are named by their hash and loaded when first used (a dynamic import), so a service
 * started from the previous build may still import one of its chunks after a rebuild swapped the
 * folder. The new build keeps the previous build's own chunks that it did not make itself (hard
 * links; same name means same content). Only the previous build's: a service two rebuilds old is
 * not provided for, and the folder does not grow without bound.
 */
export const carryPreviousChunks = (previousDir: string, nextDir: string): number => {
  const own = readdirSync(nextDir).filter((file) => file !== "built" && file !== ownChunksFile)
  writeFileSync(path.join(nextDir, ownChunksFile), JSON.stringify(own))
  let previousOwn: Array<string> = []
  try {
    previousOwn = JSON.parse(readFileSync(path.join(previousDir, ownChunksFile), "utf8")) as Array<string>
  } catch {
    return 0 // no previous build, or one made before this list existed
  }
  const present = new Set(own)
  let carried = 0
  for (const file of previousOwn) {
    // Entries (main.js, migrations/) are read at start only; a rebuilt one replaces its old self.
    if (present.has(file) || !existsSync(path.join(previousDir, file)) || statSync(path.join(previousDir, file)).isDirectory()) continue
    linkSync(path.join(previousDir, file), path.join(nextDir, file))
    carried++
  }
  return carried
}

/** What the bundle is made of: our sources, this build, and the installed packages. */
const sources = ["src", "build/server.ts", "build/newest.ts", "package-lock.json"]

export const isStale = (): boolean => !existsSync(stamp) || statSync(stamp).mtimeMs < newestModification(root, sources)

/** A bare import the bundle leaves to node_modules: all but effect's own packages. */
const external = (id: string): boolean =>
  id.startsWith("node:") || (!id.startsWith(".") && !path.isAbsolute(id) && !/^(effect|@effect\/[^/]+)(\/|$)/.test(id))

export const buildServer = async (): Promise<void> => {
  const rolldown = await import("rolldown").catch(() => undefined)
  if (rolldown === undefined) {
    console.warn("server: rolldown is not installed (dev dependencies omitted); npm start runs the sources")
    return
  }
  const started = Date.now()
  const migrationsDir = path.join(root, "src", "store", "migrations")
  const migrations = Object.fromEntries(
    readdirSync(migrationsDir).filter((file) => file.endsWith(".ts")).map((file) => [`migrations/${file.replace(/\.ts$/, "")}`, path.join(migrationsDir, file)])
  )
  // Written beside it, then swapped in: a server starting meanwhile (another test run, a second
  // `npm start`) finds the old build or the new one, never a half-written one.
  const next = `${serverDist}.next-${process.pid}`
  const old = `${serverDist}.old-${process.pid}`
  rmSync(next, { recursive: true, force: true })
  const bundle = await rolldown.rolldown({
    input: { main: path.join(root, "src", "main.ts"), ...migrations },
    platform: "node",
    external,
    logLevel: "warn"
  })
  await bundle.write({ dir: next, format: "esm", entryFileNames: "[name].js", chunkFileNames: "[name]-[hash].js", sourcemap: true })
  await bundle.close()
  carryPreviousChunks(serverDist, next)
  writeFileSync(path.join(next, "built"), `${new Date().toISOString()}\n`)
  if (existsSync(serverDist)) renameSync(serverDist, old)
  renameSync(next, serverDist)
  rmSync(old, { recursive: true, force: true })
  console.log(`server: bundled into ${path.relative(process.cwd(), serverDist) || "."} in ${Date.now() - started} ms`)
}

if (import.meta.main) {
  if (!process.argv.includes("--if-stale") || isStale()) await buildServer()
}
