/**
 * WA_BROWSER_CDP_URL: the pool connects to a browser someone else runs instead of launching
 * one. Here that browser is a Chromium started by the test with --remote-debugging-port=0.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { navigate } from "../../src/browser/actions.ts"
import { observe } from "../../src/browser/observe.ts"
import { BrowserPool } from "../../src/browser/pool.ts"
import { startFixtureSites } from "../fixtures/sites/server.ts"
import { chromiumPath, remoteChromium } from "./support.ts"

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
