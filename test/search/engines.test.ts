/**
 * Each adapter against its fake engine: request options mapped onto the engine's own parameters
 * (checked on the recorded request) and the engine's response format read back.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { FetchHttpClient, HttpClient } from "effect/http"
import type { EngineQuery } from "../../src/engines/engine.ts"
import { parseDuckDuckGoHtml } from "../../src/engines/duckduckgo.ts"
import { makeEngines } from "../../src/engines/registry.ts"
import { fakeEngines, type FakeHit } from "../fixtures/engines/fake-engines.ts"
import { settingsFor } from "../fixtures/engines/settings.ts"

const NOW = Date.parse("2026-06-15T12:00:00Z")

const query = (overrides: Partial<EngineQuery> = {}): EngineQuery => ({
  query: "effect typescript",
  count: 5,
  freshness: undefined,
  language: undefined,
  siteWhitelist: [],
  siteBlacklist: [],
  now: NOW,
  ...overrides
})

const hits: ReadonlyArray<FakeHit> = [
  { url: "https://effect.website/docs", title: "Effect docs", snippet: "Effect is a TypeScript library.", published: "2026-06-14T08:00:00Z" },
  { url: "https://github.com/Effect-TS/effect", title: "Effect-TS/effect", snippet: "Build production-ready applications." }
]

const enginesAt = (url: string) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    return makeEngines(client, settingsFor(url, ["searxng", "brave", "google", "tavily", "exa"]))
  })

describe("engine adapters", () => {
  it.effect("each engine's response format is read into ranked hits", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines({ results: () => hits })
      const engines = yield* enginesAt(fake.url)
      for (const name of ["searxng", "brave", "google", "tavily", "exa", "duckduckgo"] as const) {
        const response = yield* engines.get(name)!.search(query())
        assert.deepStrictEqual(response.hits.map((h) => h.url), hits.map((h) => h.url), name)
        assert.strictEqual(response.hits[0]!.title, "Effect docs", name)
        assert.strictEqual(response.hits[0]!.snippet, "Effect is a TypeScript library.", name)
      }
      // Engines that report a publication date keep it (used to enforce freshness).
      const brave = yield* engines.get("brave")!.search(query())
      assert.strictEqual(brave.hits[0]!.publishedAt, Date.parse("2026-06-14T08:00:00Z"))
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.effect("freshness, language, count and sites become each engine's own parameters", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines({ results: () => hits })
      const engines = yield* enginesAt(fake.url)
      const q = query({ freshness: "week", language: "de-DE", siteWhitelist: ["example.com"], siteBlacklist: ["spam.com"], count: 15 })
      for (const name of ["searxng", "brave", "google", "tavily", "exa", "duckduckgo"] as const) {
        yield* engines.get(name)!.search(q)
      }
      const searxng = fake.requestsTo("searxng")[0]!
      assert.strictEqual(searxng.params.format, "json")
      assert.strictEqual(searxng.params.time_range, "week")
      assert.strictEqual(searxng.params.language, "de")
      assert.strictEqual(searxng.params.q, "effect typescript site:example.com -site:spam.com")

      const brave = fake.requestsTo("brave")[0]!
      assert.strictEqual(brave.headers["x-subscription-token"], "brave-test-key")
      assert.strictEqual(brave.params.freshness, "pw")
      assert.strictEqual(brave.params.search_lang, "de")
      assert.strictEqual(brave.params.count, "15")

      const google = fake.requestsTo("google")
      assert.strictEqual(google.length, 2) // 15 results = pages of 10 and 5
      assert.deepStrictEqual(google.map((r) => [r.params.num, r.params.start]), [["10", undefined], ["5", "11"]])
      assert.strictEqual(google[0]!.params.dateRestrict, "w1")
      assert.strictEqual(google[0]!.params.lr, "lang_de")
      // One whitelisted and one blacklisted site do not both fit siteSearch: query syntax instead.
      assert.strictEqual(google[0]!.params.q, "effect typescript site:example.com -site:spam.com")

      const tavily = fake.requestsTo("tavily")[0]!
      assert.strictEqual(tavily.headers.authorization, "Bearer tvly-test-key")
      assert.deepInclude(tavily.body as object, {
        query: "effect typescript",
        max_results: 15,
        time_range: "week",
        include_answer: true,
        include_domains: ["example.com"],
        exclude_domains: ["spam.com"]
      })

      const exa = fake.requestsTo("exa")[0]!
      assert.strictEqual(exa.headers["x-api-key"], "exa-test-key")
      assert.deepInclude(exa.body as object, {
        query: "effect typescript",
        numResults: 15,
        includeDomains: ["example.com"],
        excludeDomains: ["spam.com"],
        startPublishedDate: "2026-06-08T12:00:00.000Z"
      })

      const ddg = fake.requestsTo("duckduckgo")[0]!
      assert.strictEqual(ddg.method, "POST")
      assert.deepInclude(ddg.body as object, { q: "effect typescript site:example.com -site:spam.com", df: "w", kl: "de-de" })
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.effect("Google's siteSearch takes a single whitelisted site", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines({ results: () => hits })
      const engines = yield* enginesAt(fake.url)
      yield* engines.get("google")!.search(query({ siteWhitelist: ["effect.website"] }))
      const google = fake.requestsTo("google")[0]!
      assert.strictEqual(google.params.q, "effect typescript")
      assert.strictEqual(google.params.siteSearch, "effect.website")
      assert.strictEqual(google.params.siteSearchFilter, "i")
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.effect("a wrong key is an EngineError with the status", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines({ results: () => hits })
      const client = yield* HttpClient.HttpClient
      const settings = settingsFor(fake.url, ["brave"])
      const engines = makeEngines(client, { ...settings, brave: { apiKey: settings.brave!.apiKey, baseUrl: `${fake.url}/nowhere` } })
      const error = yield* Effect.flip(engines.get("brave")!.search(query()))
      assert.strictEqual(error._tag, "EngineError")
      assert.strictEqual(error.engine, "brave")
      assert.strictEqual(error.status, 404)
    }).pipe(Effect.provide(FetchHttpClient.layer)))
})

describe("DuckDuckGo HTML", () => {
  it.effect("reads result links through the uddg redirect and skips ads", () =>
    Effect.gen(function*() {
      const fake = yield* fakeEngines({
        results: () => [
          { url: "https://example.com/a?x=1&y=2", title: "A & B <title>", snippet: "First snippet" },
          { url: "https://example.org/b", title: "Second", snippet: "Second snippet" }
        ],
        duckduckgoAds: [{ url: "https://ads.example.net/", title: "Buy now", snippet: "An ad" }]
      })
      const engines = yield* enginesAt(fake.url)
      const response = yield* engines.get("duckduckgo")!.search(query({ query: "A" }))
      assert.deepStrictEqual(response.hits.map((h) => h.url), ["https://example.com/a?x=1&y=2", "https://example.org/b"])
      assert.strictEqual(response.hits[0]!.title, "A & B <title>")
      assert.strictEqual(response.hits[0]!.snippet, "First snippet")
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it("parses markup with bold terms and entity-encoded links", () => {
    const html = `<div class="result results_links"><h2 class="result__title">
      <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.example.com%2Fpath%3Fa%3D1&amp;rut=abc"><b>Effect</b> &amp; friends</a></h2>
      <a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">Use <b>Effect</b> &#x27;today&#x27;</a></div>`
    assert.deepStrictEqual(parseDuckDuckGoHtml(html), [
      { title: "Effect & friends", url: "https://www.example.com/path?a=1", snippet: "Use Effect 'today'" }
    ])
  })
})
