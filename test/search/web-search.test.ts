/**
 * WebSearch against the fake engines (test/fixtures/engines), each speaking its real API.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Ref } from "effect"
import { FetchHttpClient } from "effect/http"
import { TestClock } from "effect/testing"
import { Reader } from "../../src/reader/reader.ts"
import { ReaderBrowser } from "../../src/reader/reader-browser.ts"
import { decodeWebSearchRequest, type SearchProgress, type WebSearchRequestEncoded } from "../../src/domain/web-search.ts"
import type { SearchSettings } from "../../src/engines/search-config.ts"
import { WebSearch } from "../../src/engines/web-search.ts"
import { type FakeEngineName, type FakeEngines, fakeEngines, type FakeHit } from "../fixtures/engines/fake-engines.ts"
import { settingsFor } from "../fixtures/engines/settings.ts"

// The Reader is only used by summaries; its Chromium starts lazily, so these tests never launch it.
const readerLayer = Reader.layerWith({ allowPrivate: true }).pipe(Layer.provide(ReaderBrowser.layerWith({ executablePath: process.env["CHROMIUM_PATH"] })))

const searchLayer = (fake: FakeEngines, engines: ReadonlyArray<FakeEngineName>, overrides: Partial<SearchSettings> = {}) =>
  WebSearch.layerWith(settingsFor(fake.url, engines, overrides)).pipe(Layer.provide([FetchHttpClient.layer, readerLayer]))

const request = (input: WebSearchRequestEncoded) => decodeWebSearchRequest(input).pipe(Effect.orDie)

const hit = (url: string, title = `Title of ${url}`, snippet = `Snippet of ${url}`): FakeHit => ({ url, title, snippet })

const run = (input: WebSearchRequestEncoded) =>
  Effect.gen(function*() {
    const search = yield* WebSearch
    return yield* search.run(yield* request(input))
  })

describe("WebSearch", () => {
  it.effect("fuses three engines by weighted RRF (worked example)", () =>
    Effect.gen(function*() {
      // brave: [u1, u2, u3]   google: [u2, u4, u1]   searxng: [u4, u2]      (k = 60, weights 1)
      //   u1 = 1/61 + 1/63        = 0.016393 + 0.015873            = 0.032266
      //   u2 = 1/62 + 1/61 + 1/62 = 0.016129 + 0.016393 + 0.016129 = 0.048651
      //   u3 = 1/63                                                = 0.015873
      //   u4 = 1/62 + 1/61        = 0.016129 + 0.016393            = 0.032522
      // Order: u2 (three engines agree), u4, u1 (brave's first hit, but ranked 3rd by google), u3.
      const u = (n: number) => `https://site${n}.example.org/page`
      const lists: Record<string, ReadonlyArray<string>> = {
        brave: [u(1), u(2), u(3)],
        google: [u(2), u(4), u(1)],
        searxng: [u(4), u(2)]
      }
      const fake = yield* fakeEngines({ results: (engine) => (lists[engine] ?? []).map((url) => hit(url)) })
      const result = yield* run({ queries: ["rrf"], engines: ["brave", "google", "searxng"] }).pipe(
        Effect.provide(searchLayer(fake, ["brave", "google", "searxng"]))
      )
      assert.deepStrictEqual(result.results.map((r) => r.url), [u(2), u(4), u(1), u(3)])
      assert.deepStrictEqual(result.results.map((r) => r.final_rank), [1, 2, 3, 4])
      // The best rank any engine gave, and who gave it.
      assert.deepStrictEqual(result.results.map((r) => [r.original_rank, r.source_engine]), [
        [1, "google"],
        [1, "searxng"],
        [1, "brave"],
        [3, "brave"]
      ])
      assert.deepStrictEqual(result.results.map((r) => r.dedup_count), [3, 2, 2, 1])
      assert.strictEqual(result.total_unique_results, 4)
      assert.deepStrictEqual(result.unresponsive_engines, [])

      // With brave weighted 2: u1 = 2/61 + 1/63 = 0.048660 now beats u4 (0.032522);
      // u2 = 2/62 + 1/61 + 1/62 = 0.064780 stays first; u3 = 2/63 = 0.031746 stays last.
      const weighted = yield* run({ queries: ["rrf"], engines: ["brave", "google", "searxng"] }).pipe(
        Effect.provide(searchLayer(fake, ["brave", "google", "searxng"], { engineWeights: { brave: 2 } }))
      )
      assert.deepStrictEqual(weighted.results.map((r) => r.url), [u(2), u(1), u(4), u(3)])
    }))

  it.effect("de-duplicates across engines and queries by canonical URL, keeping the richest title and snippet", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines({
        results: (engine, query) => {
          if (engine === "brave" && query === "first") {
            return [hit("https://www.Example.com/guide/?utm_source=brave&b=2&a=1#intro", "Guide", "Short")]
          }
          if (engine === "google" && query === "first") {
            return [
              hit("https://example.com/other", "Other", "Other page"),
              hit("https://example.com/guide?a=1&b=2", "The complete guide", "A much longer and richer snippet")
            ]
          }
          if (engine === "brave" && query === "second") return [hit("https://example.com:443/guide?b=2&a=1&fbclid=x", "Guide", "S")]
          return []
        }
      })
      const result = yield* run({ queries: ["first", "second"], engines: ["brave", "google"] }).pipe(
        Effect.provide(searchLayer(fake, ["brave", "google"]))
      )
      assert.strictEqual(result.total_unique_results, 2)
      const guide = result.results.find((r) => r.canonical_url === "https://example.com/guide?a=1&b=2")
      assert.isDefined(guide)
      assert.strictEqual(guide!.dedup_count, 3)
      assert.strictEqual(guide!.title, "The complete guide")
      assert.strictEqual(guide!.snippet, "A much longer and richer snippet")
      // Best rank 1 came from brave on the first query (first in list order among rank-1 copies).
      assert.strictEqual(guide!.original_rank, 1)
      assert.strictEqual(guide!.source_engine, "brave")
      assert.strictEqual(guide!.source_query, "first")
      assert.strictEqual(guide!.url, "https://www.Example.com/guide/?utm_source=brave&b=2&a=1#intro")
      assert.strictEqual(result.results[0]!.canonical_url, "https://example.com/guide?a=1&b=2")
    }))

  it.effect("keeps only http(s) result URLs: javascript:, data: and other schemes never reach the client", () =>
    Effect.gen(function*() {
      const hostile = [
        "javascript:alert(document.cookie)",
        "JavaScript:alert(1)",
        " \u0001javascript:alert(1)",
        "java\tscript:alert(1)",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "vbscript:msgbox(1)",
        "file:///etc/passwd",
        "ftp://files.example.org/a",
        "blob:https://example.org/uuid",
        "/relative/path",
        "//evil.example.org/no-scheme",
        "not a url"
      ]
      const kept = ["https://example.org/a", "HTTP://example.org/b"]
      const fake = yield* fakeEngines({ results: () => [...hostile, ...kept].map((url) => hit(url)) })
      const result = yield* run({ queries: ["q"], engines: ["searxng"], max_results_per_query: 20 }).pipe(Effect.provide(searchLayer(fake, ["searxng"])))
      assert.deepStrictEqual(result.results.map((r) => r.url), kept)
      assert.strictEqual(result.total_unique_results, 2)
      // The engine's ranks are kept: the first web page was the engine's 13th hit.
      assert.deepStrictEqual(result.results.map((r) => r.original_rank), [13, 14])
    }))

  it.effect("applies site whitelist and blacklist on the merged list (subdomains count)", () =>
    Effect.gen(function*() {
      const urls = [
        "https://example.com/a",
        "https://docs.example.com/b",
        "https://notexample.com/c",
        "https://spam.example.com/d",
        "https://other.org/e"
      ]
      const fake = yield* fakeEngines({ results: () => urls.map((url) => hit(url)) })
      const layer = searchLayer(fake, ["searxng", "exa"])
      const whitelisted = yield* run({ queries: ["q"], engines: ["searxng", "exa"], site_whitelist: ["https://www.example.com/"] }).pipe(
        Effect.provide(layer)
      )
      assert.deepStrictEqual(whitelisted.results.map((r) => r.url).sort(), [
        "https://docs.example.com/b",
        "https://example.com/a",
        "https://spam.example.com/d"
      ])
      const both = yield* run({
        queries: ["q"],
        engines: ["searxng", "exa"],
        site_whitelist: ["example.com"],
        site_blacklist: ["spam.example.com"]
      }).pipe(Effect.provide(layer))
      assert.deepStrictEqual(both.results.map((r) => r.url).sort(), ["https://docs.example.com/b", "https://example.com/a"])
      assert.strictEqual(both.total_unique_results, 2)
      const blacklisted = yield* run({ queries: ["q"], engines: ["searxng"], site_blacklist: ["example.com"] }).pipe(Effect.provide(layer))
      assert.deepStrictEqual(blacklisted.results.map((r) => r.url).sort(), ["https://notexample.com/c", "https://other.org/e"])
      // Exa takes the lists as parameters as well.
      const exaBody = fake.requestsTo("exa").at(-1)!.body as { includeDomains?: Array<string>; excludeDomains?: Array<string> }
      assert.deepStrictEqual(exaBody.includeDomains, ["example.com"])
      assert.deepStrictEqual(exaBody.excludeDomains, ["spam.example.com"])
    }))

  it.live("an engine that times out is listed as unresponsive; the others' hits are returned", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines({ results: (engine) => [hit(`https://${engine}.example.net/`)] })
      fake.setBehavior("google", { failure: "hang" })
      const result = yield* run({ queries: ["q"], engines: ["brave", "google", "tavily"] }).pipe(
        Effect.provide(searchLayer(fake, ["brave", "google", "tavily"], { engineTimeoutMs: 300 }))
      )
      assert.deepStrictEqual(result.unresponsive_engines, ["google"])
      assert.deepStrictEqual(result.results.map((r) => r.source_engine).sort(), ["brave", "tavily"])
    }))

  it.effect("an engine that answers 500 is listed as unresponsive; the others' hits are returned", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines({ results: (engine) => [hit(`https://${engine}.example.net/`)] })
      fake.setBehavior("brave", { failure: "500" })
      const result = yield* run({ queries: ["q"], engines: ["brave", "exa", "duckduckgo"] }).pipe(
        Effect.provide(searchLayer(fake, ["brave", "exa"]))
      )
      assert.deepStrictEqual(result.unresponsive_engines, ["brave"])
      assert.deepStrictEqual(result.results.map((r) => r.source_engine).sort(), ["duckduckgo", "exa"])
    }))

  it.effect("the circuit opens after N consecutive failures, then half-opens after the cool-down", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines({ results: (engine) => [hit(`https://${engine}.example.net/`)] })
      fake.setBehavior("brave", { failure: "500" })
      const layer = searchLayer(fake, ["brave", "searxng"], { breakerFailures: 2, breakerCooldownMs: 60_000 })
      yield* Effect.gen(function*() {
        const search = yield* WebSearch
        const req = yield* request({ queries: ["q"], engines: ["brave", "searxng"] })
        const events = yield* Ref.make<Array<SearchProgress>>([])
        const options = { onProgress: (event: SearchProgress) => Ref.update(events, (all) => [...all, event]) }
        // Two failures reach the engine and open the circuit.
        assert.deepStrictEqual((yield* search.run(req, options)).unresponsive_engines, ["brave"])
        assert.deepStrictEqual((yield* search.run(req, options)).unresponsive_engines, ["brave"])
        assert.strictEqual(fake.requestsTo("brave").length, 2)
        // Open: refused without a request; the run still returns the other engine's hits.
        fake.setBehavior("brave", {})
        const whileOpen = yield* search.run(req, options)
        assert.strictEqual(fake.requestsTo("brave").length, 2)
        assert.deepStrictEqual(whileOpen.unresponsive_engines, ["brave"])
        assert.deepStrictEqual(whileOpen.results.map((r) => r.source_engine), ["searxng"])
        assert.isTrue((yield* Ref.get(events)).some((e) => e.engine === "brave" && e.status === "circuit_open"))
        // After the cool-down a trial call goes through; it succeeds and closes the circuit.
        yield* TestClock.adjust(60_000)
        const afterCooldown = yield* search.run(req, options)
        assert.strictEqual(fake.requestsTo("brave").length, 3)
        assert.deepStrictEqual(afterCooldown.unresponsive_engines, [])
        assert.deepStrictEqual(afterCooldown.results.map((r) => r.source_engine).sort(), ["brave", "searxng"])
        // Progress events for successful calls carry the hit count.
        assert.isTrue((yield* Ref.get(events)).some((e) => e.engine === "brave" && e.status === "succeeded" && e.hits === 1))
      }).pipe(Effect.provide(layer))
    }))

  it.effect("a trial call that fails in the half-open state opens the circuit again", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines({ results: () => [] })
      fake.setBehavior("exa", { failure: "500" })
      yield* Effect.gen(function*() {
        const search = yield* WebSearch
        const req = yield* request({ queries: ["q"], engines: ["exa"] })
        yield* search.run(req)
        assert.strictEqual(fake.requestsTo("exa").length, 1) // threshold 1: open now
        yield* search.run(req)
        assert.strictEqual(fake.requestsTo("exa").length, 1)
        yield* TestClock.adjust(1_000)
        yield* search.run(req) // trial, fails
        assert.strictEqual(fake.requestsTo("exa").length, 2)
        yield* search.run(req) // open again
        assert.strictEqual(fake.requestsTo("exa").length, 2)
      }).pipe(Effect.provide(searchLayer(fake, ["exa"], { breakerFailures: 1, breakerCooldownMs: 1_000 })))
    }))

  it.effect("unknown or unconfigured engine names fail with the list of valid names", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines()
      const error = yield* Effect.flip(
        run({ queries: ["q"], engines: ["Brave", "bing", "google"] }).pipe(Effect.provide(searchLayer(fake, ["brave", "searxng"])))
      )
      assert.strictEqual(error._tag, "UnknownEngines")
      assert.deepStrictEqual(error.unknown, ["bing", "google"])
      assert.deepStrictEqual(error.valid, ["searxng", "brave", "duckduckgo"])
      assert.include(error.message, "valid engines: searxng, brave, duckduckgo")
    }))

  it.effect("the default engine set is every configured engine; DuckDuckGo alone when none is", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines({ results: (engine) => [hit(`https://${engine}.example.net/`)] })
      const configured = yield* run({ queries: ["q"] }).pipe(Effect.provide(searchLayer(fake, ["brave", "tavily"])))
      assert.deepStrictEqual(configured.results.map((r) => r.source_engine).sort(), ["brave", "tavily"])
      const none = yield* run({ queries: ["q"] }).pipe(Effect.provide(searchLayer(fake, [])))
      assert.deepStrictEqual(none.results.map((r) => r.source_engine), ["duckduckgo"])
    }))

  it.effect("reports an engine answer (Tavily answer, SearXNG answers)", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines({
        results: (engine) => [hit(`https://${engine}.example.net/`)],
        answer: (engine) => engine === "tavily" ? "Tavily says 42." : engine === "searxng" ? "SearXNG says 42." : undefined
      })
      const tavily = yield* run({ queries: ["q"], engines: ["tavily", "brave"] }).pipe(Effect.provide(searchLayer(fake, ["tavily", "brave"])))
      assert.strictEqual(tavily.engine_answer, "Tavily says 42.")
      const searxng = yield* run({ queries: ["q"], engines: ["searxng"] }).pipe(Effect.provide(searchLayer(fake, ["searxng"])))
      assert.strictEqual(searxng.engine_answer, "SearXNG says 42.")
      const none = yield* run({ queries: ["q"], engines: ["brave"] }).pipe(Effect.provide(searchLayer(fake, ["brave"])))
      assert.isNull(none.engine_answer)
      assert.isFalse(none.is_summarized)
      assert.isNull(none.summary_method)
    }))

  it.effect("caps each engine at max_results_per_query and the list at that times the number of queries", () =>
    Effect.gen(function*() {
      const many = (prefix: string) => Array.from({ length: 30 }, (_, i) => hit(`https://${prefix}${i}.example.net/`))
      const fake = yield* fakeEngines({ results: (engine, query) => many(`${engine}-${query}-`) })
      const result = yield* run({ queries: ["a", "b"], engines: ["searxng", "google"], max_results_per_query: 12 }).pipe(
        Effect.provide(searchLayer(fake, ["searxng", "google"]))
      )
      assert.strictEqual(result.total_unique_results, 48) // 2 queries × 2 engines × 12 distinct pages
      assert.strictEqual(result.results.length, 24)
      // Google serves at most 10 per call: 12 results take two pages (start=1, start=11).
      const googlePages = fake.requestsTo("google").map((r) => [r.params.num, r.params.start])
      assert.deepStrictEqual(googlePages.filter(([, start]) => start === "11").length, 2)
    }))

  it.live("freshness is passed to engines and enforced on hits whose engine reports an older date", () =>
    Effect.gen(function*() {
      const day = 86_400_000
      const recent = new Date(Date.now() - 2 * day).toISOString()
      const old = new Date(Date.now() - 40 * day).toISOString()
      const fake = yield* fakeEngines({
        results: (engine) =>
          engine === "searxng"
            ? [
              { url: "https://news.example.com/recent", title: "Recent", snippet: "two days old", published: recent },
              { url: "https://news.example.com/old", title: "Old", snippet: "forty days old", published: old },
              { url: "https://news.example.com/undated", title: "Undated", snippet: "no date reported" }
            ]
            : [hit("https://ddg.example.com/")]
      })
      const result = yield* run({ queries: ["news"], engines: ["searxng", "duckduckgo"], freshness: "week" }).pipe(
        Effect.provide(searchLayer(fake, ["searxng"]))
      )
      assert.deepStrictEqual(result.results.map((r) => r.url).sort(), [
        "https://ddg.example.com/",
        "https://news.example.com/recent",
        "https://news.example.com/undated"
      ])
      assert.strictEqual(fake.requestsTo("searxng")[0]!.params.time_range, "week")
      assert.strictEqual((fake.requestsTo("duckduckgo")[0]!.body as Record<string, string>).df, "w")
    }))

  it.effect("with rerank, BM25 lifts the hit that matches the objective", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines({
        results: () => [
          hit("https://a.example.net/", "Cooking pasta at home", "Boil water, add salt."),
          hit("https://b.example.net/", "Holiday pictures", "Our trip to the coast."),
          hit("https://c.example.net/", "Circuit breaker pattern explained", "How a circuit breaker stops cascading failures.")
        ]
      })
      const layer = searchLayer(fake, ["brave"])
      const plain = yield* run({ queries: ["patterns"], engines: ["brave"] }).pipe(Effect.provide(layer))
      assert.strictEqual(plain.results[0]!.url, "https://a.example.net/")
      const reranked = yield* run({
        queries: ["patterns"],
        engines: ["brave"],
        rerank: true,
        objective: "what is the circuit breaker pattern"
      }).pipe(Effect.provide(layer))
      assert.strictEqual(reranked.results[0]!.url, "https://c.example.net/")
      assert.strictEqual(reranked.results[0]!.final_rank, 1)
      assert.strictEqual(reranked.results[0]!.original_rank, 3)
    }))
})
