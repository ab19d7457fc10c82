/**
 * Redirect hops into private addresses with a remote CDP browser (WA_BROWSER_CDP_URL), where no
 * egress proxy stands between the browser and the network: the navigation guard refuses the hop
 * before the browser follows it (src/browser/guard.ts, watchHops). The fixture site plays the
 * public site (its exact origin is exempted with allowedOrigins); the hop goes to a loopback
 * listener of this test's own under other spellings of 127.0.0.1, which must never be asked.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { navigate } from "../../src/browser/actions.ts"
import { BrowserPool } from "../../src/browser/pool.ts"
import { startFixtureSites } from "../fixtures/sites/server.ts"
import { chromiumPath, remoteChromium } from "./support.ts"

/** The hop's target: a loopback listener recording what it was asked. */
const hopListener = Effect.acquireRelease(
  Effect.promise(async () => {
    const asked: Array<string> = []
    const server = createServer((req, res) => {
      asked.push(`${req.headers.host} ${req.url}`)
      res.writeHead(200, { "content-type": "text/html" }).end("<h1>Hop landing</h1>")
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    return { asked, port: (server.address() as AddressInfo).port, server }
  }),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

describe("redirect hops over CDP (no egress proxy)", () => {
  it.live("a redirect from an allowed page to 127.0.0.1 in other spellings is refused before the hop is asked", () =>
    Effect.gen(function*() {
      const site = yield* Effect.acquireRelease(Effect.promise(startFixtureSites), (s) => Effect.promise(() => s.close()))
      const hop = yield* hopListener
      const remote = yield* remoteChromium
      yield* Effect.gen(function*() {
        const pool = yield* BrowserPool
        const lease = yield* pool.acquireContext({ allowPrivateNetworks: false, allowedOrigins: [site.url] })
        for (const host of ["127.1", "0x7f000001", "[::ffff:127.0.0.1]"]) {
          const target = `http://${host}:${hop.port}/landing`
          const error = yield* Effect.flip(navigate(lease, `${site.url}/redirect?to=${encodeURIComponent(target)}`))
          assert.strictEqual(error._tag, "NavigationRefused", host)
          assert.include(error.message, "the redirect was not followed", `${host}: ${error.message} ${JSON.stringify(hop.asked)}`)
        }
        assert.deepStrictEqual(hop.asked, [])

        // The same hop is followed when private networks are allowed (the test can fail).
        const open = yield* pool.acquireContext({ allowPrivateNetworks: true })
        const outcome = yield* navigate(open, `${site.url}/redirect?to=${encodeURIComponent(`http://127.1:${hop.port}/landing`)}`)
        assert.include(outcome.url, "/landing")
        assert.strictEqual(hop.asked.filter((line) => line.endsWith("/landing")).length, 1)
      }).pipe(
        Effect.scoped,
        Effect.provide(BrowserPool.layerWith({ executablePath: chromiumPath, cdpUrl: remote.endpoint, allowPrivateNetworks: false, launchTimeoutMs: 10_000 }))
      )
    }), 120_000)
})
