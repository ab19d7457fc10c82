/**
 * A closed <details> in the observation (src/browser/page-script.ts): a person sees only its
 * summary, so the snapshot lists the summary as a button with its state (`collapsed`) and none of
 * the hidden content; a click on the summary's ref opens it and the next observation shows the
 * content. Nested details open one level at a time; an open-by-default one shows its content at
 * once (`expanded`). Real Chromium on a page served by this test on loopback.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll } from "vitest"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { click, navigate } from "../../src/browser/actions.ts"
import { observe } from "../../src/browser/observe.ts"
import { leaseAndSite, refFor, TestLayer } from "./support.ts"

const page = `<!doctype html><html><head><title>FAQ</title></head><body>
<h1>Help</h1>
<details id="returns"><summary>Returns</summary><p>Returns are free within 30 days.</p>
  <button onclick="document.getElementById('out').textContent='Return started'">Start a return</button>
  <details id="inner"><summary>Damaged items</summary><p>Send us a photo of the damage.</p><a href="#claim">File a claim</a></details>
</details>
<details open id="hours"><summary>Opening hours</summary><p>Monday to Friday, 9 to 5.</p><button>Call us</button></details>
<details id="bare"><p>Fine print nobody sees.</p></details>
<p id="out">Nothing started</p>
</body></html>`

let server: Server
let url = ""
beforeAll(async () => {
  server = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(page))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/faq`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const snapshotOf = Effect.fnUntraced(function*(lease: Parameters<typeof observe>[0]) {
  return (yield* observe(lease)).snapshot
})

layer(TestLayer, { excludeTestServices: true })("closed <details>", (it) => {
  it.effect("shows only the summary, as a collapsed button, until it is clicked; nested ones open one level at a time", () =>
    Effect.gen(function*() {
      const { lease } = yield* leaseAndSite
      yield* navigate(lease, url)
      const closed = yield* snapshotOf(lease)
      assert.match(closed, /button "Returns" \[e\d+\] collapsed/)
      for (const hidden of ["Returns are free", "Start a return", "Damaged items", "Send us a photo", "File a claim", "Fine print"]) {
        assert.notInclude(closed, hidden)
      }
      // Open by default: its summary says expanded and its content is there.
      assert.match(closed, /button "Opening hours" \[e\d+\] expanded/)
      assert.include(closed, "Monday to Friday, 9 to 5.")
      assert.match(closed, /button "Call us" \[e\d+\]/)
      // A details without a summary of its own: the browser's "Details" line is the control.
      assert.match(closed, /button "Details" \[e\d+\] collapsed/)

      yield* click(lease, refFor(closed, /button "Returns"/))
      const opened = yield* snapshotOf(lease)
      assert.match(opened, /button "Returns" \[e\d+\] expanded/)
      assert.include(opened, "Returns are free within 30 days.")
      assert.match(opened, /button "Damaged items" \[e\d+\] collapsed/)
      assert.notInclude(opened, "Send us a photo")
      assert.notInclude(opened, "File a claim")
      // The content that appeared is operable through its ref.
      yield* click(lease, refFor(opened, /button "Start a return"/))
      assert.include(yield* snapshotOf(lease), "Return started")

      yield* click(lease, refFor(opened, /button "Damaged items"/))
      const nested = yield* snapshotOf(lease)
      assert.match(nested, /button "Damaged items" \[e\d+\] expanded/)
      assert.include(nested, "Send us a photo of the damage.")
      assert.match(nested, /link "File a claim" \[e\d+\]/)

      yield* click(lease, refFor(nested, /button "Details"/))
      const bare = yield* snapshotOf(lease)
      assert.match(bare, /button "Details" \[e\d+\] expanded/)
      assert.include(bare, "Fine print nobody sees.")

      // Closing the outer one hides its content again, the open inner one included.
      yield* click(lease, refFor(bare, /button "Returns"/))
      const reclosed = yield* snapshotOf(lease)
      assert.match(reclosed, /button "Returns" \[e\d+\] collapsed/)
      assert.notInclude(reclosed, "Send us a photo")
      assert.notInclude(reclosed, "Start a return")
    }))
})
