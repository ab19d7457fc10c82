/**
 * WebSearch on the wire: the search run view under both conventions (src/http/api/web-search.ts).
 * The request bodies and the result are in src/domain/web-search.ts.
 */
import { Schema } from "effect"
import { WebSearchResult } from "../web-search.ts"
import { RunStatusA, RunStatusB, TerminalReason } from "./common.ts"

/** A search run with its status named as a convention does (RunStatusA under /v1, RunStatusB under /api/v1). */
const webSearchRunResponse = <S extends typeof RunStatusA | typeof RunStatusB>(status: S) => Schema.Struct({
  id: Schema.String,
  run_id: Schema.String,
  session_id: Schema.Null,
  kind: Schema.Literal("web_search"),
  status,
  /** The run this one was refined or followed up from; null for a run created directly. */
  parent_run_id: Schema.NullOr(Schema.String),
  /** What the run searches: the request as decoded (defaults filled in). */
  request: Schema.Struct({
    queries: Schema.Array(Schema.String),
    engines: Schema.NullOr(Schema.Array(Schema.String)),
    max_results_per_query: Schema.Int,
    rerank: Schema.Boolean,
    summarize: Schema.Boolean,
    freshness: Schema.NullOr(Schema.String),
    site_whitelist: Schema.NullOr(Schema.Array(Schema.String)),
    site_blacklist: Schema.NullOr(Schema.Array(Schema.String)),
    language: Schema.NullOr(Schema.String),
    objective: Schema.NullOr(Schema.String)
  }),
  terminal_reason: TerminalReason,
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, detail: Schema.String })),
  results: Schema.NullOr(WebSearchResult),
  llm_cost_usd: Schema.String.annotate({ description: "Model tokens of the re-rank and the summaries, charged when the search ends", examples: ["0.00"] }),
  service_cost_usd: Schema.String.annotate({ description: "The search's fee (web_search_per_query of the price table, per distinct query), charged when it ends", examples: ["0.01"] }),
  total_cost_usd: Schema.String.annotate({ description: "Everything charged for this run: llm_cost_usd + service_cost_usd", examples: ["0.01"] }),
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String)
})

/** Convention A: status done on success. */
export const WebSearchRunResponse = webSearchRunResponse(RunStatusA)
/** Convention B: status succeeded (terminal_reason done) on success. */
export const FlatWebSearchRunResponse = webSearchRunResponse(RunStatusB)
