/**
 * Wire schemas of WebSearch (spec: "WebSearch request and result"), snake_case, plus the typed
 * errors the engine layer raises. The HTTP layer decodes requests with `WebSearchRequest` and
 * encodes results with `WebSearchResult`.
 */
import { Schema } from "effect"
import { webSearchFields } from "./run.ts"

export { Freshness } from "./run.ts"

/** How summaries were written: by the configured model, extractively (BM25 over sentences), or both. */
export const SummaryMethod = Schema.Literals(["model", "extractive", "mixed"])
export type SummaryMethod = typeof SummaryMethod.Type

export { DEFAULT_MAX_RESULTS_PER_QUERY, MAX_QUERIES, MAX_QUERY_LENGTH, MAX_SITES } from "./run.ts"

export const WebSearchRequest = Schema.Struct(webSearchFields)
export type WebSearchRequest = typeof WebSearchRequest.Type
export type WebSearchRequestEncoded = typeof WebSearchRequest.Encoded

/** A refinement's or follow-up's text: 1..2000 characters. */
const DerivedText = Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(2000))
const Wait = webSearchFields.wait.annotate({ description: "block up to WA_WEB_SEARCH_WAIT_SECONDS (30 s) for the result, as on create; default true" })

/** POST .../runs/{rid}/refine: the same search narrowed by `text` (appended to every query, and the objective). */
export const RefineWebSearchRequest = Schema.Struct({
  text: DerivedText.annotate({ description: "what to narrow the search to; appended to each query and used as the objective" }),
  wait: Wait
})
export type RefineWebSearchRequest = typeof RefineWebSearchRequest.Type

/** POST .../runs/{rid}/followup: new queries with the original's settings, leaving out what it returned. */
export const WebSearchFollowupRequest = Schema.Struct({
  queries: webSearchFields.queries.annotate({ description: "the follow-up's queries (1..50, each 1..500 characters)" }),
  text: Schema.optionalKey(Schema.NullOr(DerivedText)).annotate({ description: "the follow-up's objective; omitted or null keeps the original's" }),
  wait: Wait
})
export type WebSearchFollowupRequest = typeof WebSearchFollowupRequest.Type

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
  summary_method: Schema.NullOr(SummaryMethod),
  /** A follow-up run only: pages left out because an earlier run of the chain already returned them. */
  excluded_count: Schema.optionalKey(Schema.Int)
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
