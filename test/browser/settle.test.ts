/**
 * What an action's settle waits for (src/browser/actions.ts), seen in the next observation:
 * - after a click that loads a new document, the settle ends once that document has loaded, its
 *   short timers have fired and its requests are done (no 50 ms of DOM quiet besides): what the
 *   new page shows a moment after its load, by a timer or from a fetch, is there;
 * - after select_option, the page's reaction to the change (a debounced render) is there.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { click, navigate, selectOption } from "../../src/browser/actions.ts"
import { observe } from "../../src/browser/observe.ts"
import { leaseAndSite, refFor, TestLayer } from "./support.ts"

const pages: Record<string, { readonly type: string; readonly body: string }> = {
  "/start": { type: "text/html", body: `<h1>Start</h1><a href="/later">Go to the report</a>` },
  "/later": {
    type: "text/html",
    body: `<h1>Report</h1><p id="timer">Waiting for the timer</p><p id="fetched">Waiting for the data</p>
<script>
  setTimeout(() => { document.getElementById("timer").textContent = "Timer rendered" }, 300)
  fetch("/data").then((r) => r.text()).then((t) => { document.getElementById("fetched").textContent = t })
</script>`
  },
  "/data": { type: "text/plain", body: "Data rendered" },
  "/shipping": {
    type: "text/html",
    body: `<h1>Shipping</h1><label>Speed <select id="speed" onchange="const v = this.value; setTimeout(() => { document.getElementById('quote').textContent = 'Quote for ' + v + ': 12 EUR' }, 300)">
<option value="standard">Standard</option><option value="express">Express</option></select></label><p id="quote">No quote yet</p>`
  }
}

const listener = Effect.acquireRelease(
  Effect.promise(async () => {
    const server = createServer((req, res) => {
      const page = pages[req.url ?? ""]
      if (page === undefined) return void res.writeHead(404).end()
      // The data answers late: the settle waits for the page's own requests.
      setTimeout(() => res.writeHead(200, { "content-type": page.type }).end(page.body), req.url === "/data" ? 250 : 0)
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
  }),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

layer(TestLayer, { excludeTestServices: true })("settle", (it) => {
  it.effect("the new page's timer and fetch have rendered when the click returns", () =>
    Effect.gen(function*() {
      const { lease } = yield* leaseAndSite
      const site = yield* listener
      yield* navigate(lease, `${site.url}/start`)
      const first = (yield* observe(lease)).snapshot
      yield* click(lease, refFor(first, /link "Go to the report"/))
      const after = (yield* observe(lease)).snapshot
      assert.include(after, "Report")
      assert.include(after, "Timer rendered")
      assert.include(after, "Data rendered")
    }))

  it.effect("after select_option, the page's debounced reaction to the change has rendered", () =>
    Effect.gen(function*() {
      const { lease } = yield* leaseAndSite
      const site = yield* listener
      yield* navigate(lease, `${site.url}/shipping`)
      const first = (yield* observe(lease)).snapshot
      yield* selectOption(lease, refFor(first, /combobox "Speed"/), ["express"])
      assert.include((yield* observe(lease)).snapshot, "Quote for express: 12 EUR")
    }))
})
