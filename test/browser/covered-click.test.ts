/**
 * Clicks on covered elements (issue 28 §1), on pages of this test's own loopback listener with
 * real Chromium: an element inside an iframe that the page around the frame covers fails naming
 * the cover (it clicked the overlay before), a radio whose own label lies on top of it is clicked
 * through the label, and a cover with no control of its own gets a ref the agent can click.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { click, navigate } from "../../src/browser/actions.ts"
import { observe } from "../../src/browser/observe.ts"
import { leaseAndSite, refFor, TestLayer } from "./support.ts"

const pages: Record<string, string> = {
  "/framed": `<h1>Framed</h1>
<iframe src="/inner" style="width:400px;height:200px;border:4px solid #888;padding:6px"></iframe>
<div id="overlay" class="promo" style="position:fixed;inset:0;background:rgba(0,0,0,.4)" onclick="this.dataset.hits=(+(this.dataset.hits||0))+1;document.getElementById('hits').textContent='Overlay clicks: '+this.dataset.hits"></div>
<p id="hits">Overlay clicks: 0</p>`,
  "/inner": `<button onclick="document.getElementById('state').textContent='Inner clicked'">Inner button</button><p id="state">Inner idle</p>`,
  "/label-on-top": `<h1>Plans</h1>
<div style="position:relative;width:220px;height:40px">
  <input type="radio" name="plan" id="beta" value="beta" style="position:absolute;left:10px;top:12px" onchange="document.getElementById('plan').textContent='Plan: beta'">
  <label for="beta" style="position:absolute;inset:0;display:block;padding:10px 0 0 40px;background:rgba(200,220,255,.6)">Beta plan</label>
</div>
<p id="plan">Plan: none</p>`,
  "/backdrop": `<h1>Shop</h1><button onclick="document.getElementById('cart').textContent='Cart: 1'">Buy now</button><p id="cart">Cart: 0</p>
<div id="backdrop" style="position:fixed;inset:0;background:rgba(0,0,0,.5)" onclick="this.remove()"></div>`
}

const listener = Effect.acquireRelease(
  Effect.promise(async () => {
    const server = createServer((req, res) => {
      const body = pages[req.url ?? ""]
      res.writeHead(body === undefined ? 404 : 200, { "content-type": "text/html" }).end(body ?? "not found")
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
  }),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

const snapshotOf = Effect.fnUntraced(function*(lease: Parameters<typeof observe>[0]) {
  return (yield* observe(lease)).snapshot
})

layer(TestLayer, { excludeTestServices: true })("covered clicks", (it) => {
  it.effect("an element in an iframe covered by the page around the frame fails naming the cover; the overlay is not clicked", () =>
    Effect.gen(function*() {
      const { lease } = yield* leaseAndSite
      const site = yield* listener
      yield* navigate(lease, `${site.url}/framed`)
      const first = yield* snapshotOf(lease)
      const inner = refFor(first, /button "Inner button"/)
      assert.match(inner, /^f\d+e\d+$/)
      const error = yield* Effect.flip(click(lease, inner))
      assert.strictEqual(error._tag, "ActionFailed")
      assert.include(error.message, `${inner} is covered by <div#overlay.promo>`)
      // The overlay (top document) has a main-frame ref the agent can act on.
      assert.match(error.message, /<div#overlay\.promo> "" \[e\d+\]/)
      const after = yield* snapshotOf(lease)
      assert.include(after, "Overlay clicks: 0")
      assert.include(after, "Inner idle")
    }))

  it.effect("a radio under its own label is clicked through the label", () =>
    Effect.gen(function*() {
      const { lease } = yield* leaseAndSite
      const site = yield* listener
      yield* navigate(lease, `${site.url}/label-on-top`)
      const first = yield* snapshotOf(lease)
      yield* click(lease, refFor(first, /radio "Beta plan"/))
      const after = yield* snapshotOf(lease)
      assert.include(after, "Plan: beta")
      assert.match(after, /radio "Beta plan" \[e\d+\] checked/)
    }))

  it.effect("a backdrop with no control of its own gets a ref; clicking it closes it", () =>
    Effect.gen(function*() {
      const { lease } = yield* leaseAndSite
      const site = yield* listener
      yield* navigate(lease, `${site.url}/backdrop`)
      const first = yield* snapshotOf(lease)
      const buy = refFor(first, /button "Buy now"/)
      const error = yield* Effect.flip(click(lease, buy))
      const backdrop = /<div#backdrop> "" \[(e\d+)\]/.exec(error.message)?.[1]
      assert.isDefined(backdrop, error.message)
      assert.include(error.message, "press Escape")
      yield* click(lease, backdrop!)
      yield* click(lease, buy)
      assert.include(yield* snapshotOf(lease), "Cart: 1")
    }))
})
