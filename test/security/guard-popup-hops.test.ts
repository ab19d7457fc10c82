/**
 * A run's domain policy and redirect hops the per-tab watch used to miss (src/browser/guard.ts,
 * src/browser/hop-channel.ts): the very first load of a pop-up (target=_blank, window.open) and a
 * navigation inside a cross-site frame running in its own process (OOPIF). The refused hop goes to
 * a loopback listener of this test's own reached as `localhost`, the policy's denied domain; the
 * site plays the allowed site on 127.0.0.1 and its cross-site frame on [::ffff:127.0.0.1] (another
 * site for Chromium, so the frame gets a process of its own). The hop's listener must never be
 * asked: the hop is failed before the browser follows it, not blanked after the fact.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { click, navigate } from "../../src/browser/actions.ts"
import { observe } from "../../src/browser/observe.ts"
import { BrowserPool } from "../../src/browser/pool.ts"
import { runSafety } from "../../src/safety/service.ts"
import { chromiumPath, refFor } from "../browser/support.ts"

const listen = (handler: Parameters<typeof createServer>[1]) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const server = createServer(handler)
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      return { server, port: (server.address() as AddressInfo).port }
    }),
    ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
  )

/** The refused hop's host (`localhost:PORT`) and the allowed site (127.0.0.1 and its cross-site spelling). */
const sites = Effect.gen(function*() {
  const asked: Array<string> = []
  const hop = yield* listen((req, res) => {
    asked.push(`${req.headers.host} ${req.url}`)
    res.writeHead(200, { "content-type": "text/html" }).end("<h1>Hop landing</h1>")
  })
  // A connection counts as asking, even one closed before its request was written.
  hop.server.on("connection", () => asked.push("connection"))
  // Another one, for the context without a policy of the last test.
  const freeAsked: Array<string> = []
  const freeHop = yield* listen((req, res) => {
    freeAsked.push(`${req.headers.host} ${req.url}`)
    res.writeHead(200, { "content-type": "text/html" }).end("<h1>Hop landing</h1>")
  })
  const target = `http://localhost:${hop.port}/landing`
  const redirect = `/redirect?to=${encodeURIComponent(target)}`
  let crossSite = ""
  const site = yield* listen((req, res) => {
    const url = new URL(req.url ?? "/", "http://site")
    const html = (body: string) =>
      res.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><html><head><title>t</title></head><body>${body}</body></html>`)
    switch (url.pathname) {
      case "/redirect":
        return res.writeHead(302, { location: url.searchParams.get("to") ?? "/" }).end()
      case "/opener":
        return html(
          `<a href="${redirect}" target="_blank">Partner in a new tab</a>` +
            `<button onclick="window.open('${redirect}')">Partner in a popup</button>`
        )
      case "/opener-free":
        return html(`<button onclick="window.open('/redirect?to=${encodeURIComponent(`http://localhost:${freeHop.port}/landing`)}')">Partner in a popup</button>`)
      case "/frame-host":
        return html(`<h1>Host</h1><iframe src="${crossSite}/inner" width="400" height="200"></iframe>`)
      case "/inner":
        return html(`<a href="${redirect}">Partner in the frame</a>`)
      case "/frame-host-nested":
        return html(`<h1>Host</h1><iframe src="${crossSite}/inner-nested" width="400" height="200"></iframe>`)
      case "/inner-nested":
        // A frame inside the cross-site frame whose first load redirects: the OOPIF's own request.
        return html(`<p>Inner</p><iframe src="${redirect}"></iframe>`)
      default:
        return html(`<p>${url.pathname}</p>`)
    }
  })
  crossSite = `http://[::ffff:127.0.0.1]:${site.port}`
  return { asked, freeAsked, hopHost: `localhost:${hop.port}`, site: `http://127.0.0.1:${site.port}` }
})

const denyLocalhost = runSafety({ allowed_domains: [], denied_domains: ["localhost"], confirm_actions: [] }).navigation

const poolLayer = BrowserPool.layerWith({ executablePath: chromiumPath, allowPrivateNetworks: true, launchTimeoutMs: 10_000 })

describe("redirect hops of pop-ups and cross-site frames under a domain policy", () => {
  it.live("a pop-up's first load that redirects to a refused host is refused before the host is asked", () =>
    Effect.gen(function*() {
      const { asked, hopHost, site } = yield* sites
      const pool = yield* BrowserPool
      const lease = yield* pool.acquireContext()
      yield* Effect.promise(() => lease.guard.setPolicy(denyLocalhost))
      yield* navigate(lease, `${site}/opener`)

      for (const control of [/link "Partner in a new tab"/, /button "Partner in a popup"/]) {
        // The action fails with the refusal; on a busy host the pop-up's load may outlast the
        // action's settle (it waits for the opener), and the refusal is then the guard's next one.
        const clicked = yield* Effect.result(click(lease, refFor((yield* observe(lease)).snapshot, control)))
        let refusal = Result.isFailure(clicked) ? clicked.failure : undefined
        for (let i = 0; i < 100 && refusal === undefined; i++) {
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
          refusal = lease.guard.takeRefusals().at(-1)
        }
        assert.deepStrictEqual(asked, [], `${control}: the refused host was asked`)
        assert.strictEqual(refusal?._tag, "NavigationRefused", `${control}: ${refusal?.message}`)
        assert.include(refusal?.message, "the redirect was not followed", `${control}: ${refusal?.message}`)
        assert.include(refusal?.message, hopHost)
        yield* Effect.promise(() => Promise.all(lease.pages().slice(1).map((p) => p.close())))
        lease.setActivePage(lease.pages()[0]!)
      }
      assert.strictEqual(lease.guard.violation()?.url, `http://${hopHost}/landing`)

      // Without the policy the same pop-up follows the hop (the test can fail).
      yield* Effect.promise(() => lease.guard.setPolicy(undefined))
      yield* click(lease, refFor((yield* observe(lease)).snapshot, /button "Partner in a popup"/))
      for (let i = 0; i < 100 && !asked.includes(`${hopHost} /landing`); i++) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      assert.isTrue(asked.some((line) => line === `${hopHost} /landing`), JSON.stringify(asked))
    }).pipe(Effect.scoped, Effect.provide(poolLayer)), 120_000)

  it.live("a cross-site frame in its own process that navigates through a refused hop is blanked before the host is asked", () =>
    Effect.gen(function*() {
      const { asked, hopHost, site } = yield* sites
      const pool = yield* BrowserPool
      const lease = yield* pool.acquireContext()
      yield* Effect.promise(() => lease.guard.setPolicy(denyLocalhost))
      yield* navigate(lease, `${site}/frame-host`)

      // The frame really is out of process: a target of its own.
      const page = lease.page()!
      const session = yield* Effect.promise(() => lease.context.newCDPSession(page))
      const { targetInfos } = yield* Effect.promise(() => session.send("Target.getTargets"))
      assert.isTrue(targetInfos.some((t) => t.type === "iframe" && t.url.includes("/inner")), JSON.stringify(targetInfos.map((t) => [t.type, t.url])))
      yield* Effect.promise(() => session.detach())

      const outcome = yield* click(lease, refFor((yield* observe(lease)).snapshot, /link "Partner in the frame"/))
      assert.include(outcome.message, hopHost, outcome.message)
      assert.deepStrictEqual(asked, [], "the refused host was asked")
      assert.isFalse(page.frames().some((f) => f.url().includes("/landing")), JSON.stringify(page.frames().map((f) => f.url())))
      // A refused frame does not end the run.
      assert.isUndefined(lease.guard.violation())

      // The same, the frame's link clicked directly, to read the guard's report: the hop was
      // refused before it was followed (not blanked after the browser had asked the host).
      yield* navigate(lease, `${site}/frame-host`)
      yield* Effect.promise(() => page.frames()[1]!.getByText("Partner in the frame").click())
      let reported: ReadonlyArray<{ readonly message: string }> = []
      for (let i = 0; i < 50 && reported.length === 0; i++) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
        reported = lease.guard.takeBlockedFrames()
      }
      assert.strictEqual(reported.length, 1, JSON.stringify(reported))
      assert.include(reported[0]!.message, "the redirect was not followed")
      assert.include(reported[0]!.message, hopHost)
      assert.deepStrictEqual(asked, [], "the refused host was asked")

      // A frame inside the cross-site frame, whose first load redirects there: refused before it is followed too.
      const nested = yield* navigate(lease, `${site}/frame-host-nested`)
      assert.include(nested.message, hopHost, nested.message)
      assert.deepStrictEqual(asked, [], "the refused host was asked by the nested frame")

      // Without the policy the same frame follows the hop (the test can fail).
      yield* Effect.promise(() => lease.guard.setPolicy(undefined))
      yield* navigate(lease, `${site}/frame-host`)
      yield* click(lease, refFor((yield* observe(lease)).snapshot, /link "Partner in the frame"/))
      // A frame's navigation is not waited for by the click: on a busy host its request comes later.
      for (let i = 0; i < 100 && !asked.includes(`${hopHost} /landing`); i++) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      assert.isTrue(asked.some((line) => line === `${hopHost} /landing`), JSON.stringify(asked))
    }).pipe(Effect.scoped, Effect.provide(poolLayer)), 120_000)

  it.live("contexts of one browser: each watched context is watched on its own, the others are let go", () =>
    Effect.gen(function*() {
      const { asked, freeAsked, hopHost, site } = yield* sites
      const pool = yield* BrowserPool
      // A watched context released before the others are used: its end must not unwatch them.
      yield* Effect.gen(function*() {
        const first = yield* pool.acquireContext()
        yield* Effect.promise(() => first.guard.setPolicy(denyLocalhost))
        yield* navigate(first, `${site}/opener`)
      }).pipe(Effect.scoped)
      const watched = yield* pool.acquireContext()
      const free = yield* pool.acquireContext()
      yield* Effect.promise(() => watched.guard.setPolicy(denyLocalhost))

      // A context without a policy opens pop-ups as before (its targets are let go at once).
      yield* navigate(free, `${site}/opener-free`)
      yield* click(free, refFor((yield* observe(free)).snapshot, /button "Partner in a popup"/))
      for (let i = 0; i < 100 && !freeAsked.some((line) => line.endsWith(" /landing")); i++) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      }
      assert.isTrue(freeAsked.some((line) => line.endsWith(" /landing")), JSON.stringify(freeAsked))

      yield* navigate(watched, `${site}/opener`)
      const clicked = yield* Effect.result(click(watched, refFor((yield* observe(watched)).snapshot, /button "Partner in a popup"/)))
      let refusal = Result.isFailure(clicked) ? clicked.failure : undefined
      for (let i = 0; i < 100 && refusal === undefined; i++) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
        refusal = watched.guard.takeRefusals().at(-1)
      }
      assert.deepStrictEqual(asked, [], "the refused host was asked")
      assert.include(refusal?.message, "the redirect was not followed", refusal?.message)
      assert.include(refusal?.message, hopHost)
    }).pipe(Effect.scoped, Effect.provide(poolLayer)), 120_000)
})
