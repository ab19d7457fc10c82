/**
 * A pop-up the page opens on its own, after the action that loaded it has settled (a late timer,
 * while the model is thinking), to a private address: the guard refuses it, and the agent is told
 * so with its next action's outcome instead of the refusal being dropped (src/browser/actions.ts
 * `act`; the step's prompt says the same when the refusal comes before the observation,
 * src/agent/run-agent.ts). The page is a listener of this test's own, exempted by its exact
 * origin; the pop-up's target is another listener of its own, spelled [::ffff:7f00:1], which
 * must never be asked.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { navigate, scroll } from "../../src/browser/actions.ts"
import { BrowserPool } from "../../src/browser/pool.ts"
import { chromiumPath } from "./support.ts"

/** A loopback listener answering `html(url)`, recording what it was asked. */
const listener = (html: (url: string) => string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const asked: Array<string> = []
      const server = createServer((req, res) => {
        asked.push(req.url ?? "")
        res.writeHead(200, { "content-type": "text/html" }).end(html(req.url ?? ""))
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      return { asked, port: (server.address() as AddressInfo).port, server }
    }),
    ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
  )

describe("a pop-up opened late by the page", () => {
  it.live("is refused, and the next action's outcome says so", () =>
    Effect.gen(function*() {
      const target = yield* listener(() => "<h1>Private landing</h1>")
      const popupUrl = `http://[::ffff:7f00:1]:${target.port}/landing`
      const page = yield* listener(() =>
        `<h1>Offers</h1><div style="height:3000px"></div>` +
        `<script>setTimeout(() => window.open(${JSON.stringify(popupUrl)}), 1500)</script>`
      )
      const origin = `http://127.0.0.1:${page.port}`
      yield* Effect.gen(function*() {
        const pool = yield* BrowserPool
        const lease = yield* pool.acquireContext({ allowPrivateNetworks: false, allowedOrigins: [origin] })
        const loaded = yield* navigate(lease, `${origin}/offers`)
        assert.notInclude(loaded.message, "refused")
        // The model thinks; meanwhile the page's timer opens the pop-up.
        yield* Effect.sleep("3 seconds")
        const next = yield* scroll(lease, { direction: "down" })
        assert.include(next.message, "before this action the browser refused what the page tried to open")
        assert.include(next.message, "::ffff:7f00:1 is a non-public address", next.message)
        // Said once: the action after it has nothing of it.
        const after = yield* scroll(lease, { direction: "up" })
        assert.notInclude(after.message, "refused")
        assert.deepStrictEqual(target.asked, [])
      }).pipe(
        Effect.scoped,
        Effect.provide(BrowserPool.layerWith({ executablePath: chromiumPath, allowPrivateNetworks: false, launchTimeoutMs: 10_000 }))
      )
    }), 60_000)
})
