/**
 * WebSearch: many queries across many engines in one run.
 *
 * 1. Engine names are resolved (unknown or unconfigured names fail with UnknownEngines).
 * 2. Every (query, engine) pair runs in parallel, each call bounded by the engine timeout and
 *    guarded by that engine's circuit breaker. A failing, slow or open-circuit engine never fails
 *    the run: it is listed in `unresponsive_engines` and the other engines' hits are used.
 * 3. Site and freshness rules are enforced on every hit (engines that took them as parameters
 *    already applied them; the rest are filtered here), then the lists are de-duplicated by
 *    canonical URL and fused with weighted Reciprocal Rank Fusion (fusion.ts).
 * 4. With `rerank`, a second pass blends in relevance to the objective (model, else BM25).
 * 5. With `summarize`, the top results are read with the Reader and summarized (model, else
 *    extractive).
 *
 * The final list holds at most `max_results_per_query` × number of queries results;
 * `total_unique_results` counts every distinct page found.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { LanguageModel } from "effect/ai"
import { FetchHttpClient, HttpClient } from "effect/http"
import { Reader } from "../reader/reader.ts"
import { fairly } from "../fairness/fair-queue.ts"
import { normalizeSite } from "./canonical-url.ts"
import { makeCircuitBreakers } from "./circuit-breaker.ts"
import { type EngineQuery, type EngineResponse, freshnessDays } from "./engine.ts"
import { makeEngines } from "./registry.ts"
import { type FilterOptions, fuseRankedLists, keepHit, rankInOrder, type RankedList } from "./fusion.ts"
import { rerankHits } from "./rerank.ts"
import {
  type SearchProgress,
  type SummaryMethod,
  UnknownEngines,
  type WebSearchRequest,
  type WebSearchResult,
  type WebSearchResultItem
} from "../domain/web-search.ts"
import {
  configuredEngineNames,
  defaultEngineNames,
  defaultSearchSettings,
  type EngineName,
  type SearchSettings,
  searchSettingsFromConfig
} from "./search-config.ts"
import { AppConfig } from "../config/config.ts"
import { summarizePage } from "./summarize.ts"

export interface RunOptions {
  /** Called as each engine call starts and ends (for run events). Must not fail. */
  readonly onProgress?: ((event: SearchProgress) => Effect.Effect<void>) | undefined
}

type CallOutcome =
  | { readonly _tag: "ok"; readonly response: EngineResponse }
  | { readonly _tag: "failed" }

/** Pages read and summarized at once. */
const SUMMARY_CONCURRENCY = 4

export class WebSearch extends Context.Service<WebSearch, {
  readonly run: (request: WebSearchRequest, options?: RunOptions) => Effect.Effect<WebSearchResult, UnknownEngines>
  /** Engines this instance can use (configured ones, plus DuckDuckGo). */
  readonly engines: ReadonlyArray<EngineName>
  /** Engines used when a request names none. */
  readonly defaultEngines: ReadonlyArray<EngineName>
}>()("wa/search/WebSearch") {
  static readonly make = Effect.fnUntraced(function*(settings: SearchSettings) {
    const client = yield* HttpClient.HttpClient
    const reader = yield* Reader
    // A model provided to the layer; a model in the context of a `run` call takes precedence.
    const layerModel = yield* Effect.serviceOption(LanguageModel.LanguageModel)
    const engines = makeEngines(client, settings)
    const available = configuredEngineNames(settings)
    const defaults = defaultEngineNames(settings)
    // Circuit state lives in this instance: two WebSearch instances never share it.
    const breakers = makeCircuitBreakers({ failures: settings.breakerFailures, cooldownMs: settings.breakerCooldownMs })

    const resolveEngines = (requested: ReadonlyArray<string> | null | undefined) => {
      if (requested === null || requested === undefined || requested.length === 0) return Effect.succeed(defaults)
      const names = [...new Set(requested.map((name) => name.trim().toLowerCase()))]
      const unknown = names.filter((name) => !(available as ReadonlyArray<string>).includes(name))
      if (unknown.length > 0) {
        return Effect.fail(
          new UnknownEngines({
            unknown,
            valid: [...available],
            message: `unknown or unconfigured engine${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}; valid engines: ${available.join(", ")}`
          })
        )
      }
      return Effect.succeed(names as ReadonlyArray<EngineName>)
    }

    const callEngine = (
      name: EngineName,
      query: EngineQuery,
      progress: (event: SearchProgress) => Effect.Effect<void>
    ): Effect.Effect<CallOutcome> =>
      Effect.gen(function*() {
        const engine = engines.get(name)!
        if (!(yield* breakers.admit(name))) {
          yield* progress({ engine: name, query: query.query, status: "circuit_open", hits: 0 })
          return { _tag: "failed" } as const
        }
        yield* progress({ engine: name, query: query.query, status: "started", hits: 0 })
        // The call waits for its fair share of engine calls (src/fairness/fair-queue.ts); the engine's
        // timeout counts from when it starts, so a wait in line never trips the circuit breaker.
        const outcome = yield* engine.search(query).pipe(Effect.timeoutOption(settings.engineTimeoutMs), fairly("engine_call"), Effect.result)
        if (outcome._tag === "Failure") {
          yield* breakers.recordFailure(name)
          yield* Effect.logWarning(`search engine ${name} failed: ${outcome.failure.message}`)
          yield* progress({ engine: name, query: query.query, status: "failed", hits: 0 })
          return { _tag: "failed" } as const
        }
        if (Option.isNone(outcome.success)) {
          yield* breakers.recordFailure(name)
          yield* Effect.logWarning(`search engine ${name} timed out after ${settings.engineTimeoutMs} ms`)
          yield* progress({ engine: name, query: query.query, status: "timed_out", hits: 0 })
          return { _tag: "failed" } as const
        }
        yield* breakers.recordSuccess(name)
        const response = outcome.success.value
        yield* progress({ engine: name, query: query.query, status: "succeeded", hits: response.hits.length })
        return { _tag: "ok", response } as const
      })

    const run = Effect.fn("WebSearch.run")(function*(request: WebSearchRequest, options: RunOptions = {}) {
      const names = yield* resolveEngines(request.engines)
      const queries = [...new Set(request.queries.map((query) => query.trim()).filter((query) => query !== ""))]
      const maxPerQuery = request.max_results_per_query
      const siteWhitelist = [...new Set((request.site_whitelist ?? []).map(normalizeSite).filter((site) => site !== ""))]
      const siteBlacklist = [...new Set((request.site_blacklist ?? []).map(normalizeSite).filter((site) => site !== ""))]
      const freshness = request.freshness ?? undefined
      const language = request.language ?? undefined
      const objective = request.objective?.trim() || undefined
      const focus = objective ?? queries.join(" ")
      const now = yield* Clock.currentTimeMillis
      const progress = options.onProgress ?? (() => Effect.void)
      const runtimeModel = yield* Effect.serviceOption(LanguageModel.LanguageModel)
      const model = Option.getOrUndefined(Option.orElse(runtimeModel, () => layerModel))

      const pairs = queries.flatMap((query) => names.map((engine) => ({ query, engine })))
      const outcomes = yield* Effect.forEach(
        pairs,
        ({ engine, query }) =>
          callEngine(engine, {
            query,
            count: maxPerQuery,
            freshness,
            language,
            siteWhitelist,
            siteBlacklist,
            now
          }, progress),
        { concurrency: settings.concurrency }
      )

      const filter: FilterOptions = {
        siteWhitelist,
        siteBlacklist,
        publishedAfter: freshness === undefined ? undefined : now - freshnessDays[freshness] * 86_400_000
      }
      const unresponsive = new Set<string>()
      const lists: Array<RankedList> = []
      let engineAnswer: string | null = null
      pairs.forEach(({ engine, query }, index) => {
        const outcome = outcomes[index]!
        if (outcome._tag === "failed") {
          unresponsive.add(engine)
          return
        }
        engineAnswer ??= outcome.response.answer ?? null
        const hits = rankInOrder(outcome.response.hits.slice(0, maxPerQuery)).filter((hit) => keepHit(hit, filter))
        lists.push({ engine, query, hits })
      })

      const fused = fuseRankedLists(lists, { k: settings.rrfK, weights: settings.engineWeights })
      const ordered = request.rerank ? (yield* rerankHits(fused, focus, model)).hits : fused
      const limited = ordered.slice(0, maxPerQuery * queries.length)

      const summaries = new Map<string, string>()
      const methods = new Set<"model" | "extractive">()
      if (request.summarize && limited.length > 0) {
        const top = limited.slice(0, settings.summarizeTop)
        yield* Effect.forEach(top, (hit) =>
          reader.read(hit.url).pipe(
            fairly("page_read"),
            Effect.flatMap((page) => summarizePage(page, focus, model)),
            Effect.tap((summary) =>
              Effect.sync(() => {
                if (summary.summary !== "") {
                  summaries.set(hit.canonicalUrl, summary.summary)
                  methods.add(summary.method)
                }
              })
            ),
            Effect.catch((error) => Effect.logWarning(`could not read ${hit.url} for its summary: ${error.message}`))
          ), { concurrency: SUMMARY_CONCURRENCY, discard: true })
      }
      const summaryMethod: SummaryMethod | null = methods.size === 0
        ? null
        : methods.size > 1
        ? "mixed"
        : methods.has("model")
        ? "model"
        : "extractive"

      const results: Array<WebSearchResultItem> = limited.map((hit, index) => ({
        title: hit.title,
        url: hit.url,
        canonical_url: hit.canonicalUrl,
        snippet: hit.snippet,
        summary: summaries.get(hit.canonicalUrl) ?? null,
        final_rank: index + 1,
        original_rank: hit.originalRank,
        source_engine: hit.sourceEngine,
        source_query: hit.sourceQuery,
        dedup_count: hit.dedupCount
      }))
      return {
        results,
        total_unique_results: fused.length,
        is_summarized: summaries.size > 0,
        engine_answer: engineAnswer,
        unresponsive_engines: names.filter((name) => unresponsive.has(name)),
        summary_method: summaryMethod
      } satisfies WebSearchResult
    })

    return WebSearch.of({ run, engines: available, defaultEngines: defaults })
  })

  /** With explicit settings (tests); needs an HttpClient and a Reader. */
  static readonly layerWith = (settings: Partial<SearchSettings> = {}) =>
    Layer.effect(WebSearch, WebSearch.make({ ...defaultSearchSettings, ...settings }))

  /** Settings from the application's AppConfig (WA_SEARXNG_URL, WA_BRAVE_*, WA_SEARCH_*, ...); needs an HttpClient and a Reader. */
  static readonly layer = Layer.effect(
    WebSearch,
    Effect.gen(function*() {
      return yield* WebSearch.make(searchSettingsFromConfig(yield* AppConfig))
    })
  )

  /** Settings from AppConfig, with the fetch HttpClient; needs a Reader. */
  static readonly layerFetch = WebSearch.layer.pipe(Layer.provide(FetchHttpClient.layer))
}
