/**
 * After a click that loads a new document, the action's settle ends once that document has
 * loaded, its short timers have fired and its requests are done (it no longer also waits for
 * 50 ms of DOM quiet, src/browser/actions.ts): what the new page shows a moment after its load,
 * by a timer or from a fetch, is still in the next observation.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { click, navigate } from "../../src/browser/actions.ts"
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
  "/data": { type: "text/plain", body: "Data rendered" }
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

layer(TestLayer, { excludeTestServices: true })("settle after a navigating click", (it) => {
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
})
