/**
 * Shared set-up of the browser tests: a real Chromium (fails loudly when missing), a pool
 * with private networks allowed (the fixture site lives on 127.0.0.1), and the fixture site.
 */
import { spawn } from "node:child_process"
import { accessSync, constants, readdirSync, readFileSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Layer } from "effect"
import { BrowserPool, chromiumArgs, type ContextLease } from "../../src/browser/pool.ts"
import { observe } from "../../src/browser/observe.ts"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"

export const chromiumPath = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"
try {
  accessSync(chromiumPath, constants.X_OK)
} catch {
  throw new Error(`These tests need a real Chromium: none is executable at ${chromiumPath}. Install chromium or set CHROMIUM_PATH.`)
}

export class FixtureSite extends Context.Service<FixtureSite, FixtureSites>()("test/browser/FixtureSite") {
  static readonly layer = Layer.effect(
    FixtureSite,
    Effect.acquireRelease(Effect.promise(startFixtureSites), (site) => Effect.promise(() => site.close()))
  )
}

/** A headless Chromium serving CDP on a free port (WA_BROWSER_CDP_URL's browser); closed with the scope. */
export const remoteChromium = Effect.acquireRelease(
  Effect.promise(async () => {
    const profile = await mkdtemp(join(tmpdir(), "wa-cdp-"))
    const child = spawn(chromiumPath, [...chromiumArgs, "--headless=new", "--remote-debugging-port=0", `--user-data-dir=${profile}`, "about:blank"], {
      stdio: ["ignore", "ignore", "pipe"]
    })
    const endpoint = await new Promise<string>((resolve, reject) => {
      let seen = ""
      child.stderr.on("data", (chunk: Buffer) => {
        seen += chunk.toString()
        const match = /DevTools listening on (ws:\/\/\S+)/.exec(seen)
        if (match) resolve(match[1]!)
      })
      child.once("exit", (code) => reject(new Error(`chromium exited (${code}): ${seen}`)))
    })
    return { child, profile, endpoint }
  }),
  ({ child, profile }) =>
    Effect.promise(async () => {
      child.kill("SIGKILL")
      await rm(profile, { recursive: true, force: true }).catch(() => undefined)
    })
)

export const poolLayer = BrowserPool.layerWith({ executablePath: chromiumPath, allowPrivateNetworks: true })

export const TestLayer = Layer.mergeAll(poolLayer, FixtureSite.layer)

/** A lease (closed with the test's scope) and the fixture base URL. */
export const leaseAndSite = Effect.gen(function*() {
  const pool = yield* BrowserPool
  const site = yield* FixtureSite
  const lease = yield* pool.acquireContext()
  return { lease, site, pool }
})

/** Finds the ref printed for the first snapshot line matching `pattern`. */
export const refFor = (snapshot: string, pattern: RegExp): string => {
  const line = snapshot.split("\n").find((l) => pattern.test(l))
  const ref = line === undefined ? undefined : new RegExp(`${pattern.source}.*?\\[((?:f\\d+)*e\\d+)\\]`).exec(line)?.[1]
  if (ref === undefined) throw new Error(`no ref for ${pattern} in snapshot:\n${snapshot}`)
  return ref
}

export const observeText = (lease: ContextLease) => Effect.map(observe(lease), (o) => o.text)

/**
 * Pids of the Chromium browser processes this test process launched (Playwright 1.65 has no
 * Browser.process()): children of this process started with --remote-debugging-pipe.
 */
export const launchedChromiumPids = (): Array<number> =>
  readdirSync("/proc").filter((d) => /^\d+$/.test(d)).flatMap((d) => {
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8")
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      const cmdline = readFileSync(`/proc/${d}/cmdline`, "utf8")
      return ppid === process.pid && cmdline.includes("--remote-debugging-pipe") ? [Number(d)] : []
    } catch {
      return []
    }
  })
