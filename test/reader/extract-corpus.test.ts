/**
 * In-page extraction (Readability + Turndown inside Chromium) on real pages from the shared
 * corpus (../shared/corpora/readability-pages, read in place, never copied). Pages are loaded
 * with the network blocked.
 */
import { assert, describe, it as vitestIt, layer } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { extractFromHtml, extractFromPage } from "../../src/reader/extract-in-page.ts"
import { ReaderBrowser } from "../../src/reader/reader-browser.ts"

const corpusDir = fileURLToPath(new URL("../../../shared/corpora/readability-pages/", import.meta.url))
const corpusPage = (name: string) => readFileSync(`${corpusDir}${name}.html`, "utf8")
const PAGE_URL = "http://fakehost/test/page.html"

const cases = [
  { name: "ars-1", title: "Just-released Minecraft exploit makes it easy to crash game servers", phrase: "Minecraft", byline: "Dan Goodin" },
  { name: "bbc-1", title: "Obama admits US gun laws are his 'biggest frustration'", phrase: "gun", byline: "BBC News" },
  { name: "cnn", title: "The 'birth lottery' and economic mobility", phrase: "mobility", byline: "Ahiza Garcia" },
  { name: "nytimes-1", title: "United States to Lift Sudan Sanctions", phrase: "Sudan", byline: "Jeffrey Gettleman" },
  { name: "wikipedia", title: "Mozilla - Wikipedia", phrase: "Mozilla Foundation", byline: null },
  { name: "lemonde-1", title: "Le projet de loi sur le renseignement massivement approuvé à l'Assemblée", phrase: "renseignement", byline: null }
] as const

layer(ReaderBrowser.layerWith({ executablePath: process.env["CHROMIUM_PATH"] }))("in-page extraction on corpus pages", (it) => {
  for (const c of cases) {
    it.effect(`${c.name}: title and main content from fetched HTML`, () =>
      Effect.gen(function*() {
        const browser = yield* ReaderBrowser
        const extracted = yield* browser.withExtractionPage((page) => extractFromHtml(page, corpusPage(c.name), PAGE_URL))
        assert.strictEqual(extracted.method, "readability")
        assert.strictEqual(extracted.title, c.title)
        if (c.byline !== null) assert.include(extracted.byline ?? "", c.byline)
        assert.isAbove(extracted.text.length, 1_500)
        assert.include(extracted.text, c.phrase)
        assert.include(extracted.markdown, c.phrase)
        // Markdown, not HTML: no tags left, paragraphs separated by blank lines.
        assert.notMatch(extracted.markdown, /<\/?(p|div|span)\b/)
        assert.include(extracted.markdown, "\n\n")
      }))
  }

  it.effect("relative links resolve against the page URL", () =>
    Effect.gen(function*() {
      const browser = yield* ReaderBrowser
      const html = `<html><head><title>Links</title></head><body><article><h1>Links</h1>
        <p>${"Some long paragraph text that makes this an article worth extracting by Readability. ".repeat(8)}
        <a href="/docs/guide">the guide</a> and <a href="next.html">the next page</a>.</p></article></body></html>`
      const extracted = yield* browser.withExtractionPage((page) => extractFromHtml(page, html, "https://example.com/blog/post.html"))
      assert.include(extracted.markdown, "[the guide](https://example.com/docs/guide)")
      assert.include(extracted.markdown, "[the next page](https://example.com/blog/next.html)")
    }))

  it.effect("page scripts in fetched HTML never run and nothing is requested", () =>
    Effect.gen(function*() {
      const browser = yield* ReaderBrowser
      const html = `<html><head><title>Scripted</title><script>document.title = "changed"</script></head><body>
        <article><h1>Scripted</h1><p>${"Plain server-rendered text that stays as it was. ".repeat(12)}</p>
        <script>document.body.innerHTML = "<p>replaced by a script</p>"</script>
        <img src="http://127.0.0.1:9/pixel.png"></article></body></html>`
      const extracted = yield* browser.withExtractionPage((page) => extractFromHtml(page, html, PAGE_URL))
      assert.include(extracted.text, "Plain server-rendered text")
      assert.notInclude(extracted.text, "replaced by a script")
    }))

  it.effect("extractFromPage reads a loaded page without changing its DOM", () =>
    Effect.gen(function*() {
      const browser = yield* ReaderBrowser
      const html = corpusPage("nytimes-1")
      const result = yield* browser.withPage((page) =>
        Effect.gen(function*() {
          // Network blocked: the page itself is served from the corpus file, every other request aborts.
          yield* Effect.promise(() =>
            page.route("**", (route) =>
              route.request().url() === PAGE_URL
                ? route.fulfill({ status: 200, contentType: "text/html; charset=utf-8", body: html })
                : route.abort()
            )
          )
          yield* Effect.promise(() => page.goto(PAGE_URL, { waitUntil: "domcontentloaded" }))
          const before = yield* Effect.promise(() => page.evaluate(() => document.body.innerHTML.length))
          const extracted = yield* extractFromPage(page)
          const after = yield* Effect.promise(() => page.evaluate(() => document.body.innerHTML.length))
          // A second call reuses the reader already installed in the page.
          const again = yield* extractFromPage(page)
          return { extracted, before, after, again }
        }), { javaScriptEnabled: false })
      assert.strictEqual(result.extracted.title, "United States to Lift Sudan Sanctions")
      assert.include(result.extracted.text, "Sudan")
      assert.strictEqual(result.before, result.after)
      assert.strictEqual(result.again.text, result.extracted.text)
    }))

  it.effect("a page with hardly any content still yields its text, without scripts", () =>
    Effect.gen(function*() {
      const browser = yield* ReaderBrowser
      const html = `<html><head><title>Tiny</title></head><body><ul><li>one</li><li>two</li></ul><script>var x = 1</script></body></html>`
      const extracted = yield* browser.withExtractionPage((page) => extractFromHtml(page, html, PAGE_URL))
      assert.strictEqual(extracted.title, "Tiny")
      assert.strictEqual(extracted.text, "one\ntwo")
      assert.notInclude(extracted.markdown, "var x")
    }))
})

describe("corpus location", () => {
  vitestIt("is read from ../shared relative to the project", () => {
    assert.include(corpusPage("ars-1"), "Minecraft")
  })
})
