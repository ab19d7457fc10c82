/**
 * The Reader end to end against a local site: HTTP fetch and in-page extraction, the cache, the
 * private-address checks (first URL, every redirect hop, every browser request), and the browser
 * fallback for pages that render with JavaScript.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { fileURLToPath } from "node:url"
import { Reader, type ReaderSettings } from "../../src/reader/reader.ts"
import { BrowserPool } from "../../src/browser/pool.ts"
import { ReaderBrowser } from "../../src/reader/reader-browser.ts"

const corpusDir = fileURLToPath(new URL("../../../shared/corpora/readability-pages/", import.meta.url))

const paragraphs = (n: number, text: string) => Array.from({ length: n }, (_, i) => `<p>${text} (paragraph ${i + 1}).</p>`).join("")

interface Site {
  readonly origin: string
  readonly hits: Map<string, number>
  readonly close: () => Promise<void>
}

const startSite = async (): Promise<Site> => {
  const hits = new Map<string, number>()
  let origin = ""
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
    "/article": (_, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
      res.end(readFileSync(`${corpusDir}ars-1.html`))
    },
    "/latin1": (_, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=iso-8859-1" })
      res.end(Buffer.from(`<html><head><title>Caf\u00e9 cr\u00e8me</title></head><body><article><h1>Caf\u00e9</h1>${paragraphs(6, "Un caf\u00e9 cr\u00e8me br\u00fbl\u00e9 \u00e0 la fran\u00e7aise, servi chaud avec du lait mousseux")}</article></body></html>`, "latin1"))
    },
    "/hop1": (_, res) => {
      res.writeHead(301, { location: "/hop2" }).end()
    },
    "/hop2": (_, res) => {
      res.writeHead(302, { location: `${origin}/article` }).end()
    },
    "/to-private": (_, res) => {
      // A public-looking page that redirects into the private network.
      res.writeHead(302, { location: `http://localhost:${new URL(origin).port}/secret` }).end()
    },
    "/to-mapped": (_, res) => {
      // The same loopback listener spelled as an IPv4-mapped IPv6 address (a distinct origin from
      // the trusted 127.0.0.1 one even after URL canonicalisation, which gives [::ffff:7f00:1]).
      res.writeHead(307, { location: `http://[::ffff:127.0.0.1]:${new URL(origin).port}/secret` }).end()
    },
    "/secret": (_, res) => {
      res.writeHead(200, { "content-type": "text/html" }).end(`<html><body><p>TOP SECRET internal data</p></body></html>`)
    },
    "/app": (_, res) => {
      // An app shell: the content only exists after its script runs.
      res.writeHead(200, { "content-type": "text/html" })
      res.end(`<!doctype html><html><head><title>Rendered app</title></head><body><div id="root"></div>
        <script>
          const root = document.getElementById("root");
          root.innerHTML = "<article><h1>Rendered on the client</h1>" +
            Array.from({ length: 8 }, (_, i) => "<p>This paragraph " + i + " only exists once JavaScript has run in a real browser page.</p>").join("") +
            "</article>";
        </script></body></html>`)
    },
    "/app-peeks": (_, res) => {
      // An app shell that also tries to read a private address from the browser.
      res.writeHead(200, { "content-type": "text/html" })
      res.end(`<!doctype html><html><head><title>Peeking app</title></head><body><div id="root"></div>
        <script>
          const root = document.getElementById("root");
          root.innerHTML = "<article><h1>Peeking</h1>" + Array.from({ length: 8 }, () => "<p>Rendered text that is long enough to count as an article body for the reader.</p>").join("") + "</article>";
          fetch("http://localhost:${new URL(origin).port}/secret").then((r) => r.text()).then((t) => {
            const p = document.createElement("p"); p.textContent = "LEAKED " + t; root.firstChild.appendChild(p);
          }).catch(() => {});
        </script></body></html>`)
    },
    "/plain.txt": (_, res) => {
      res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end("# Notes\nplain text file\n")
    },
    "/report.pdf": (_, res) => {
      res.writeHead(200, { "content-type": "application/pdf" }).end("%PDF-1.4 ...")
    },
    "/big": (_, res) => {
      res.writeHead(200, { "content-type": "text/html" }).end(`<html><body>${"x".repeat(200_000)}</body></html>`)
    }
  }
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname
    hits.set(path, (hits.get(path) ?? 0) + 1)
    const route = routes[path]
    if (route === undefined) res.writeHead(404).end("not found")
    else route(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  origin = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
  return {
    origin,
    hits,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}

class SiteService extends Context.Service<SiteService, Site>()("test/reader/Site") {
  static readonly layer = Layer.effect(
    SiteService,
    Effect.acquireRelease(Effect.promise(startSite), (site) => Effect.promise(() => site.close()))
  )
}

const withReader = <A, E>(
  settings: (site: Site) => Partial<ReaderSettings>,
  body: (reader: Reader["Service"], site: Site) => Effect.Effect<A, E>
) =>
  Effect.gen(function*() {
    const site = yield* SiteService
    return yield* Effect.gen(function*() {
      const reader = yield* Reader
      return yield* body(reader, site)
    }).pipe(Effect.provide(Reader.layerWith(settings(site))))
  })

/** Private networks refused, except the fixture site's own origin (it necessarily lives on loopback). */
const trusted = (site: Site): Partial<ReaderSettings> => ({ allowPrivate: false, trustedOrigins: [site.origin] })

layer(Layer.merge(SiteService.layer, ReaderBrowser.layer))("Reader", (it) => {
  it.effect("fetches over HTTP and extracts the main content as Markdown", () =>
    withReader(trusted, (reader, site) =>
      Effect.gen(function*() {
        const page = yield* reader.read(`${site.origin}/article`)
        assert.strictEqual(page.method, "http")
        assert.strictEqual(page.title, "Just-released Minecraft exploit makes it easy to crash game servers")
        assert.strictEqual(page.byline, "Dan Goodin")
        assert.strictEqual(page.mediaType, "text/html")
        assert.isAbove(page.text.length, 2_000)
        assert.include(page.markdown, "_Minecraft_")
      })))

  it.effect("serves repeated reads from the cache (fragment ignored)", () =>
    withReader(trusted, (reader, site) =>
      Effect.gen(function*() {
        const before = site.hits.get("/article") ?? 0
        const first = yield* reader.read(`${site.origin}/article`)
        const second = yield* reader.read(`${site.origin}/article#comments`)
        assert.strictEqual(site.hits.get("/article"), before + 1)
        assert.strictEqual(second, first)
      })))

  it.effect("decodes the charset the server declares", () =>
    withReader(trusted, (reader, site) =>
      Effect.gen(function*() {
        const page = yield* reader.read(`${site.origin}/latin1`)
        assert.strictEqual(page.title, "Caf\u00e9 cr\u00e8me")
        assert.include(page.text, "br\u00fbl\u00e9 \u00e0 la fran\u00e7aise")
      })))

  it.effect("follows redirects and reports the final URL", () =>
    withReader(trusted, (reader, site) =>
      Effect.gen(function*() {
        const page = yield* reader.read(`${site.origin}/hop1`)
        assert.strictEqual(page.finalUrl, `${site.origin}/article`)
        assert.strictEqual(page.url, `${site.origin}/hop1`)
      })))

  it.effect("refuses a private address when private networks are not allowed", () =>
    withReader(() => ({ allowPrivate: false }), (reader, site) =>
      Effect.gen(function*() {
        const before = site.hits.get("/article") ?? 0
        const error = yield* Effect.flip(reader.read(`${site.origin}/article`))
        assert.strictEqual(error.reason, "private_address")
        assert.strictEqual(site.hits.get("/article") ?? 0, before)
        const secretBefore = site.hits.get("/secret") ?? 0
        const mapped = yield* Effect.flip(reader.read(`http://[::ffff:7f00:1]:${new URL(site.origin).port}/secret`))
        assert.strictEqual(mapped.reason, "private_address")
        assert.include(mapped.message, "embedding 127.0.0.1, loopback")
        assert.strictEqual(site.hits.get("/secret") ?? 0, secretBefore)
        const scheme = yield* Effect.flip(reader.read("file:///etc/passwd"))
        assert.strictEqual(scheme.reason, "invalid_url")
      })))

  it.effect("checks every redirect hop: a redirect to a private address is refused before it is followed", () =>
    withReader(trusted, (reader, site) =>
      Effect.gen(function*() {
        const before = site.hits.get("/secret") ?? 0
        const error = yield* Effect.flip(reader.read(`${site.origin}/to-private`))
        assert.strictEqual(error.reason, "private_address")
        assert.include(error.message, "localhost")
        assert.strictEqual(site.hits.get("/secret") ?? 0, before)
        const mapped = yield* Effect.flip(reader.read(`${site.origin}/to-mapped`))
        assert.strictEqual(mapped.reason, "private_address")
        assert.include(mapped.message, "::ffff:7f00:1")
        assert.include(mapped.message, "embedding 127.0.0.1, loopback")
        assert.strictEqual(site.hits.get("/secret") ?? 0, before)
      })))

  it.effect("with private networks allowed the same redirect is followed", () =>
    withReader(() => ({ allowPrivate: true }), (reader, site) =>
      Effect.gen(function*() {
        const page = yield* reader.read(`${site.origin}/to-private`)
        assert.include(page.text, "TOP SECRET")
      })))

  it.effect("a page that renders with JavaScript falls back to the browser", () =>
    withReader(trusted, (reader, site) =>
      Effect.gen(function*() {
        const page = yield* reader.read(`${site.origin}/app`)
        assert.strictEqual(page.method, "browser")
        assert.strictEqual(page.title, "Rendered app")
        assert.include(page.text, "only exists once JavaScript has run")
      })))

  it.effect("in the browser, requests to private addresses are blocked too", () =>
    withReader(trusted, (reader, site) =>
      Effect.gen(function*() {
        const page = yield* reader.read(`${site.origin}/app-peeks`)
        assert.strictEqual(page.method, "browser")
        assert.include(page.text, "Rendered text")
        assert.notInclude(page.text, "LEAKED")
        assert.notInclude(page.text, "TOP SECRET")
      })))

  it.effect("plain text passes through; other media types are refused", () =>
    withReader(trusted, (reader, site) =>
      Effect.gen(function*() {
        const text = yield* reader.read(`${site.origin}/plain.txt`)
        assert.strictEqual(text.title, "Notes")
        assert.strictEqual(text.markdown, "# Notes\nplain text file\n")
        const pdf = yield* Effect.flip(reader.read(`${site.origin}/report.pdf`))
        assert.strictEqual(pdf.reason, "unsupported_content")
      })))

  it.effect("bodies over the byte cap are refused; HTTP errors are reported with their status", () =>
    withReader((site) => ({ ...trusted(site), maxBytes: 10_000 }), (reader, site) =>
      Effect.gen(function*() {
        const big = yield* Effect.flip(reader.read(`${site.origin}/big`))
        assert.strictEqual(big.reason, "too_large")
        const missing = yield* Effect.flip(reader.read(`${site.origin}/missing`))
        assert.strictEqual(missing.reason, "http_status")
        assert.strictEqual(missing.status, 404)
      })))
})

describe("Reader layer", () => {
  layer(ReaderBrowser.layer)("extractHtml", (it) => {
    it.effect("extracts already-fetched HTML without the network", () =>
      Effect.gen(function*() {
        const reader = yield* Reader
        const page = yield* reader.extractHtml(readFileSync(`${corpusDir}bbc-1.html`, "utf8"), "https://www.bbc.com/news/world-us-canada-33646542")
        assert.strictEqual(page.title, "Obama admits US gun laws are his 'biggest frustration'")
        assert.strictEqual(page.finalUrl, "https://www.bbc.com/news/world-us-canada-33646542")
      }).pipe(Effect.provide(Reader.layerWith())))
  })
})

// The application runs the Reader on the shared BrowserPool: same behaviour through its leases.
const poolLayer = ReaderBrowser.layerFromPool.pipe(
  Layer.provide(BrowserPool.layerWith({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", allowPrivateNetworks: false }))
)

layer(Layer.merge(SiteService.layer, poolLayer))("Reader on the BrowserPool", (it) => {
  it.effect("extracts fetched HTML on a pooled extraction page", () =>
    withReader(trusted, (reader, site) =>
      Effect.gen(function*() {
        const page = yield* reader.read(`${site.origin}/article`)
        assert.strictEqual(page.method, "http")
        assert.strictEqual(page.title, "Just-released Minecraft exploit makes it easy to crash game servers")
      })))

  it.effect("renders a JavaScript page in a pooled context, private requests still blocked", () =>
    withReader(trusted, (reader, site) =>
      Effect.gen(function*() {
        const app = yield* reader.read(`${site.origin}/app`)
        assert.strictEqual(app.method, "browser")
        assert.include(app.text, "only exists once JavaScript has run")
        const peeking = yield* reader.read(`${site.origin}/app-peeks`)
        assert.notInclude(peeking.text, "LEAKED")
      })))
})
