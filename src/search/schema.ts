/**
 * Wire schemas of WebSearch (spec: "WebSearch request and result"), snake_case, plus the typed
 * errors the engine layer raises. The HTTP layer decodes requests with `WebSearchRequest` and
 * encodes results with `WebSearchResult`.
 */
import { Effect, Schema } from "effect"

export const Freshness = Schema.Literals(["day", "week", "month", "year"])
export type Freshness = typeof Freshness.Type

/** How summaries were written: by the configured model, extractively (BM25 over sentences), or both. */
export const SummaryMethod = Schema.Literals(["model", "extractive", "mixed"])
export type SummaryMethod = typeof SummaryMethod.Type

export const MAX_QUERIES = 50
export const MAX_QUERY_LENGTH = 500
export const MAX_SITES = 200
export const DEFAULT_MAX_RESULTS_PER_QUERY = 10

const Query = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(MAX_QUERY_LENGTH))
const Site = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(253))
const SiteList = Schema.Array(Site).check(Schema.isMaxLength(MAX_SITES))

export const WebSearchRequest = Schema.Struct({
  queries: Schema.Array(Query).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_QUERIES)),
  /** Engine names; omitted or null means the default engine set (every configured engine). */
  engines: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String.check(Schema.isMaxLength(64))).check(Schema.isMaxLength(20)))),
  max_results_per_query: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 50 })).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed(DEFAULT_MAX_RESULTS_PER_QUERY))
  ),
  rerank: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(false))),
  summarize: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(false))),
  freshness: Schema.optionalKey(Schema.NullOr(Freshness)),
  site_whitelist: Schema.optionalKey(Schema.NullOr(SiteList)),
  site_blacklist: Schema.optionalKey(Schema.NullOr(SiteList)),
  language: Schema.optionalKey(Schema.NullOr(Schema.String.check(Schema.isMinLength(2), Schema.isMaxLength(35)))),
  objective: Schema.optionalKey(Schema.NullOr(Schema.String.check(Schema.isMaxLength(2000)))),
  /** Read by the HTTP layer (block up to 30 s); the engine layer ignores it. */
  wait: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(true)))
})
export type WebSearchRequest = typeof WebSearchRequest.Type
export type WebSearchRequestEncoded = typeof WebSearchRequest.Encoded

/** Decodes a request from plain input, filling defaults (for callers that are not the HTTP layer). */
export const decodeWebSearchRequest = Schema.decodeUnknownEffect(WebSearchRequest)

export const WebSearchResultItem = Schema.Struct({
  title: Schema.String,
  url: Schema.String,
  /** The de-duplication key (see canonical-url.ts). */
  canonical_url: Schema.String,
  snippet: Schema.String,
  summary: Schema.NullOr(Schema.String),
  /** 1-based position after fusion (and re-ranking when asked). */
  final_rank: Schema.Int,
  /** The best (lowest) 1-based rank any engine gave this page. */
  original_rank: Schema.Int,
  /** The engine and query of that best rank. */
  source_engine: Schema.String,
  source_query: Schema.String,
  /** How many engine hits were merged into this result (1 when only one engine/query found it). */
  dedup_count: Schema.Int
})
export type WebSearchResultItem = typeof WebSearchResultItem.Type

export const WebSearchResult = Schema.Struct({
  results: Schema.Array(WebSearchResultItem),
  /** Distinct pages found after de-duplication and site filters (may exceed `results.length`). */
  total_unique_results: Schema.Int,
  is_summarized: Schema.Boolean,
  /** A direct answer an engine gave (SearXNG `answers`, Tavily `answer`), if any. */
  engine_answer: Schema.NullOr(Schema.String),
  /** Engines that failed, timed out or had an open circuit for at least one query of this run. */
  unresponsive_engines: Schema.Array(Schema.String),
  summary_method: Schema.NullOr(SummaryMethod)
})
export type WebSearchResult = typeof WebSearchResult.Type

/** Progress of one engine on one query, reported while a run is under way. */
export interface SearchProgress {
  readonly engine: string
  readonly query: string
  readonly status: "started" | "succeeded" | "failed" | "timed_out" | "circuit_open"
  readonly hits: number
}

/** Requested engine names that are unknown or not configured. The HTTP layer answers 422. */
export class UnknownEngines extends Schema.TaggedError<UnknownEngines>()("UnknownEngines", {
  unknown: Schema.Array(Schema.String),
  valid: Schema.Array(Schema.String),
  message: Schema.String
}) {}

/** One engine call failed (HTTP status, transport, undecodable body). Never fails a run. */
export class EngineError extends Schema.TaggedError<EngineError>()("EngineError", {
  engine: Schema.String,
  message: Schema.String,
  status: Schema.optionalKey(Schema.Int)
}) {}
