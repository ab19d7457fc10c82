/**
 * Builds the web console into console/dist with Vite. `npm install` runs it (the `prepare`
 * script) and `npm start` runs it with --if-stale (the `prestart` script), so a fresh clone serves
 * the console without a separate step; the built files are never committed.
 *
 *   node console/build.ts             build now
 *   node console/build.ts --if-stale  build only when dist is missing or older than a source file
 *
 * Without Vite (an install with --omit=dev) it says so and exits 0: the API still works, and
 * /console answers 503 with how to build it.
 */
import { existsSync, statSync } from "node:fs"
import * as path from "node:path"
import { newestModification } from "../build/newest.ts"

const root = import.meta.dirname
const stamp = path.join(root, "dist", "index.html")

export const isStale = (): boolean => !existsSync(stamp) || statSync(stamp).mtimeMs < newestModification(root, ["src", "index.html", "vite.config.ts", "build.ts"])

export const buildConsole = async (): Promise<void> => {
  const vite = await import("vite").catch(() => undefined)
  if (vite === undefined) {
    console.warn("console: vite is not installed (dev dependencies omitted); /console will not be served")
    return
  }
  const started = Date.now()
  // Vite keeps a NODE_ENV it finds set (vitest sets "test"), which would bundle React's
  // development build: the console is always built for production.
  const nodeEnv = process.env["NODE_ENV"]
  process.env["NODE_ENV"] = "production"
  try {
    await vite.build({ configFile: path.join(root, "vite.config.ts"), mode: "production", logLevel: "warn" })
  } finally {
    if (nodeEnv === undefined) delete process.env["NODE_ENV"]
    else process.env["NODE_ENV"] = nodeEnv
  }
  console.log(`console: built into ${path.relative(process.cwd(), path.join(root, "dist")) || "."} in ${Date.now() - started} ms`)
}

if (import.meta.main) {
  if (!process.argv.includes("--if-stale") || isStale()) await buildConsole()
}
