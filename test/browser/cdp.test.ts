/**
 * WA_BROWSER_CDP_URL: the pool connects to a browser someone else runs instead of launching
 * one. Here that browser is a Chromium started by the test with --remote-debugging-port=0.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { navigate } from "../../src/browser/actions.ts"
import { observe } from "../../src/browser/observe.ts"
import { BrowserPool, chromiumArgs } from "../../src/browser/pool.ts"
import { startFixtureSites } from "../fixtures/sites/server.ts"
import { chromiumPath } from "./support.ts"

/** A headless Chromium serving CDP on a free port; closed with the scope. */
const remoteChromium = Effect.acquireRelease(
  Effect.promise(async () => {
    const profile = await mkdtemp(join(tmpdir(), "wa-cdp-"))
    const child = spawn(chromiumPath, [
      ...chromiumArgs,
      "--headless=new",
      "--remote-debugging-port=0",
      `--user-data-dir=${profile}`,
      "about:blank"
    ], { stdio: ["ignore", "ignore", "pipe"] })
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

describe("BrowserPool over CDP", () => {
  it.live("leases contexts on a remote browser and reports its death as BrowserCrashed", () =>
    Effect.gen(function*() {
      const site = yield* Effect.acquireRelease(Effect.promise(startFixtureSites), (s) => Effect.promise(() => s.close()))
      const remote = yield* remoteChromium
      yield* Effect.gen(function*() {
        const pool = yield* BrowserPool
        const lease = yield* pool.acquireContext()
        yield* navigate(lease, `${site.url}/page/2`)
        assert.include((yield* observe(lease)).snapshot, "Page 2")
        remote.child.kill("SIGKILL")
        const error = yield* Effect.flip(navigate(lease, `${site.url}/page/3`))
        assert.strictEqual(error._tag, "BrowserCrashed")
        // Nothing to reconnect to: the next lease names the endpoint.
        const next = yield* Effect.flip(pool.acquireContext())
        assert.strictEqual(next._tag, "BrowserUnavailable")
        assert.include(next.message, remote.endpoint)
      }).pipe(
        Effect.provide(BrowserPool.layerWith({ executablePath: chromiumPath, cdpUrl: remote.endpoint, allowPrivateNetworks: true, launchTimeoutMs: 5_000 }))
      )
    }))
})
