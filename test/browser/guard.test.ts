/**
 * Navigation guard. The fixture site can only live on loopback, so:
 * - "private target refused": a lease with private networks disallowed navigating straight to
 *   the fixture on 127.0.0.1 / localhost;
 * - "redirect refused": the fixture's origin (127.0.0.1:PORT) is exempted with `allowedOrigins`
 *   so it plays the public site, and its /redirect sends the browser to the same server under
 *   the name `localhost`, a different origin that is private and not exempt.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { click, navigate } from "../../src/browser/actions.ts"
import { observe } from "../../src/browser/observe.ts"
import { BrowserPool } from "../../src/browser/pool.ts"
import { FixtureSite, refFor, TestLayer } from "./support.ts"

layer(TestLayer, { excludeTestServices: true })("navigation guard", (it) => {
  it.effect("refuses loopback targets in any spelling, and non-http schemes, when private networks are not allowed", () =>
    Effect.gen(function*() {
      const pool = yield* BrowserPool
      const site = yield* FixtureSite
      const lease = yield* pool.acquireContext({ allowPrivateNetworks: false })
      // Only the fixture's own listener, spelled as 127.0.0.1, localhost, IPv4-mapped IPv6 and a
      // hexadecimal integer (no origin is exempt here): the guard judges the address, not the spelling.
      const port = new URL(site.url).port
      for (const url of [`${site.url}/page/1`, site.url.replace("127.0.0.1", "localhost"), `http://[::ffff:7f00:1]:${port}/page/1`, `http://0x7f000001:${port}/page/1`, "file:///etc/passwd"]) {
        const error = yield* Effect.flip(navigate(lease, url))
        assert.strictEqual(error._tag, "NavigationRefused", url)
      }
      const after = (yield* observe(lease)).url
      assert.notInclude(after, "127.0.0.1")
      assert.notInclude(after, `:${port}`)
    }))

  it.effect("refuses private navigations started by the page itself (link click)", () =>
    Effect.gen(function*() {
      const pool = yield* BrowserPool
      const site = yield* FixtureSite
      const lease = yield* pool.acquireContext({ allowPrivateNetworks: false })
      // about:blank is not a network navigation; give it a link to a private address.
      yield* Effect.promise(() => lease.page()!.setContent(`<a href="${site.url}/page/2">private link</a>`))
      const error = yield* Effect.flip(click(lease, refFor((yield* observe(lease)).snapshot, /link "private link"/)))
      assert.strictEqual(error._tag, "NavigationRefused")
      assert.notInclude((yield* observe(lease)).snapshot, "Page 2")
    }))

  it.effect("refuses a redirect from an allowed page into a private address", () =>
    Effect.gen(function*() {
      const pool = yield* BrowserPool
      const site = yield* FixtureSite
      const lease = yield* pool.acquireContext({ allowPrivateNetworks: false, allowedOrigins: [site.url] })
      // The exempt origin itself works, including its own same-origin redirects.
      const ok = yield* navigate(lease, `${site.url}/redirect?to=/page/2`)
      assert.include(ok.url, "/page/2")
      const privateTarget = `${site.url.replace("127.0.0.1", "localhost")}/page/3`
      const error = yield* Effect.flip(navigate(lease, `${site.url}/redirect?to=${encodeURIComponent(privateTarget)}`))
      assert.strictEqual(error._tag, "NavigationRefused")
      assert.include(error.message, "localhost")
      const after = yield* observe(lease)
      assert.notInclude(after.snapshot, "Page 3")
      assert.notInclude(after.url, "localhost")
      // The egress proxy refused the connection: the private target never saw the request.
      const served = yield* Effect.promise(() => fetch(`${site.url}/__requests`).then((r) => r.json() as Promise<Array<string>>))
      assert.isTrue(served.some((line) => line.includes("/redirect?to=")))
      assert.isFalse(served.some((line) => line.startsWith("localhost:") && line.includes("/page/3")), served.join("\n"))
    }))

  it.effect("refuses page scripts reaching private addresses (sub-resources go through the egress proxy)", () =>
    Effect.gen(function*() {
      const pool = yield* BrowserPool
      const site = yield* FixtureSite
      const lease = yield* pool.acquireContext({ allowPrivateNetworks: false, allowedOrigins: [site.url] })
      yield* navigate(lease, `${site.url}/page/1`)
      const privateUrl = `${site.url.replace("127.0.0.1", "localhost")}/echo?from=script`
      const status = yield* Effect.promise(() =>
        lease.page()!.evaluate((url) => fetch(url, { mode: "no-cors" }).then((r) => `status ${r.status}`, (e) => `failed ${String(e)}`), privateUrl)
      )
      assert.notInclude(status, "status 200")
      const served = yield* Effect.promise(() => fetch(`${site.url}/__requests`).then((r) => r.json() as Promise<Array<string>>))
      assert.isFalse(served.some((line) => line.includes("from=script")))
    }))

  it.effect("a public page embedding a private image still loads; the image request is blocked and reported", () =>
    Effect.gen(function*() {
      const pool = yield* BrowserPool
      const site = yield* FixtureSite
      const lease = yield* pool.acquireContext({ allowPrivateNetworks: false, allowedOrigins: [site.url] })
      const privateImage = `${site.url.replace("127.0.0.1", "localhost")}/echo?from=image`
      const outcome = yield* navigate(lease, `${site.url}/with-image?src=${encodeURIComponent(privateImage)}`)
      assert.include(outcome.url, "/with-image")
      assert.include(outcome.message, "blocked the page's requests to private addresses: localhost")
      const served = yield* Effect.promise(() => fetch(`${site.url}/__requests`).then((r) => r.json() as Promise<Array<string>>))
      assert.isFalse(served.some((line) => line.includes("from=image")))
    }))

  it.effect("a public page with a private iframe loads; the iframe is refused and reported", () =>
    Effect.gen(function*() {
      const pool = yield* BrowserPool
      const site = yield* FixtureSite
      const lease = yield* pool.acquireContext({ allowPrivateNetworks: false, allowedOrigins: [site.url] })
      const privateFrame = `${site.url.replace("127.0.0.1", "localhost")}/iframe/inner?from=frame`
      const outcome = yield* navigate(lease, `${site.url}/with-frame?src=${encodeURIComponent(privateFrame)}`)
      assert.include(outcome.url, "/with-frame")
      assert.include(outcome.message, "blocked the page's requests to private addresses: localhost")
      assert.notInclude((yield* observe(lease)).snapshot, "Inner button")
    }))

  it.effect("allows private targets when the lease allows private networks", () =>
    Effect.gen(function*() {
      const pool = yield* BrowserPool
      const site = yield* FixtureSite
      const lease = yield* pool.acquireContext({ allowPrivateNetworks: true })
      const outcome = yield* navigate(lease, `${site.url.replace("127.0.0.1", "localhost")}/redirect?to=/page/2`)
      assert.include(outcome.url, "/page/2")
    }))
})
