/**
 * Every outbound path refuses 127.0.0.1 spelled as IPv6 (IPv4-mapped dotted and hex, expanded,
 * IPv4-compatible), also when the 127.0.0.1 origin itself is allow-listed: the reader's HTTP
 * fetch (trustedOrigins), the browser egress proxy and the navigation guard (allowedOrigins).
 * The only traffic goes to the loopback fixture servers of this file, and the assertions prove
 * the refused spellings never reached them.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { navigate } from "../../src/browser/actions.ts"
import { startEgressProxy } from "../../src/browser/egress-proxy.ts"
import { observe } from "../../src/browser/observe.ts"
import { BrowserPool } from "../../src/browser/pool.ts"
import { fetchPage, guardUrl } from "../../src/reader/http-fetch.ts"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { FixtureSite, TestLayer } from "../browser/support.ts"

/** 127.0.0.1:port in the spellings that used to pass the check. */
const mappedOrigins = (port: number) => [
  `http://[::ffff:127.0.0.1]:${port}`,
  `http://[::ffff:7f00:1]:${port}`,
  `http://[0:0:0:0:0:ffff:7f00:1]:${port}`,
  `http://[::127.0.0.1]:${port}`
]

const served = (site: FixtureSites) => fetch(`${site.url}/__requests`).then((r) => r.json() as Promise<Array<string>>)

describe("reader HTTP fetch", () => {
  let site: FixtureSites
  beforeAll(async () => {
    site = await startFixtureSites()
  })
  afterAll(() => site.close())

  const options = () => ({
    allowPrivate: false,
    trustedOrigins: [site.url],
    timeoutMs: 5_000,
    maxBytes: 1_000_000,
    maxRedirects: 5,
    userAgent: "ssrf-test"
  })

  it("refuses the mapped spellings of a trusted loopback origin, directly and behind a redirect", async () => {
    const port = Number(new URL(site.url).port)
    // The trusted origin itself is read.
    const ok = await Effect.runPromise(fetchPage(`${site.url}/page/1`, options()))
    expect(ok.body).toContain("Page 1")
    for (const [i, origin] of mappedOrigins(port).entries()) {
      const direct = await Effect.runPromise(Effect.flip(guardUrl(`${origin}/page/2?direct=${i}`, options())))
      expect(direct.reason, origin).toBe("private_address")
      const viaRedirect = await Effect.runPromise(Effect.flip(fetchPage(`${site.url}/redirect?to=${encodeURIComponent(`${origin}/page/3?hop=${i}`)}`, options())))
      expect(viaRedirect.reason, origin).toBe("private_address")
    }
    const lines = await served(site)
    expect(lines.filter((line) => line.includes("direct=") || line.includes("hop=")), lines.join("\n")).toEqual([])
  })
})

describe("browser egress proxy", () => {
  let site: FixtureSites
  beforeAll(async () => {
    site = await startFixtureSites()
  })
  afterAll(() => site.close())

  /** Sends one request through the proxy: absolute-URL GET for http, CONNECT for a tunnel. */
  const viaProxy = (proxy: string, method: "GET" | "CONNECT", target: string) =>
    new Promise<number>((resolve, reject) => {
      const { hostname, port } = new URL(proxy)
      const request = httpRequest({ host: hostname, port: Number(port), method, path: target })
      request.once("connect", (response, socket) => {
        socket.destroy()
        resolve(response.statusCode ?? 0)
      })
      request.once("response", (response) => {
        response.resume()
        resolve(response.statusCode ?? 0)
      })
      request.once("error", reject)
      request.end()
    })

  it("refuses connections to the mapped spellings of an allow-listed loopback origin", async () => {
    const refusals: Array<string> = []
    const proxy = await startEgressProxy({ allowedOrigins: [site.url], onRefused: (r) => refusals.push(r.url) })
    try {
      const port = Number(new URL(site.url).port)
      expect(await viaProxy(proxy.server, "GET", `${site.url}/page/1`)).toBe(200)
      for (const [i, origin] of mappedOrigins(port).entries()) {
        expect(await viaProxy(proxy.server, "GET", `${origin}/page/2?proxied=${i}`), origin).toBe(403)
        expect(await viaProxy(proxy.server, "CONNECT", new URL(origin).host), origin).toBe(403)
      }
      expect(refusals).toHaveLength(8)
      const lines = await served(site)
      expect(lines.filter((line) => line.includes("proxied=")), lines.join("\n")).toEqual([])
    } finally {
      await proxy.close()
    }
  })
})

layer(TestLayer, { excludeTestServices: true })("browser navigation guard", (it) => {
  it.effect("refuses the mapped spellings of an allow-listed loopback origin, directly and behind a redirect", () =>
    Effect.gen(function*() {
      const pool = yield* BrowserPool
      const site = yield* FixtureSite
      const lease = yield* pool.acquireContext({ allowPrivateNetworks: false, allowedOrigins: [site.url] })
      const port = Number(new URL(site.url).port)
      for (const [i, origin] of mappedOrigins(port).entries()) {
        const direct = yield* Effect.flip(navigate(lease, `${origin}/page/2?nav=${i}`))
        assert.strictEqual(direct._tag, "NavigationRefused", origin)
        const viaRedirect = yield* Effect.flip(navigate(lease, `${site.url}/redirect?to=${encodeURIComponent(`${origin}/page/3?navhop=${i}`)}`))
        assert.strictEqual(viaRedirect._tag, "NavigationRefused", origin)
      }
      const after = yield* observe(lease)
      assert.notInclude(after.snapshot, "Page 2")
      assert.notInclude(after.snapshot, "Page 3")
      const lines = yield* Effect.promise(() => served(site))
      assert.deepStrictEqual(lines.filter((line) => line.includes("nav=") || line.includes("navhop=")), [], lines.join("\n"))
    }), 60_000)
})
