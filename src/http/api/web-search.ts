/**
 * WebSearch runs under both conventions: `/v1/projects/{pid}/web_search/runs` and
 * `/api/v1/projects/{pid}/web_search/runs`. With `wait` (default true) the POST blocks up to 30 s
 * and answers 200 with the result; past that, or with `wait: false`, 202 and the client polls.
 * A run can be canceled, refined (`POST .../runs/{rid}/refine`) and followed up
 * (`POST .../runs/{rid}/followup`); a derived run shows its `parent_run_id`.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, NotFound, PaymentRequired, ValidationError } from "../../domain/api-errors.ts"
import { RefineWebSearchRequest, WebSearchFollowupRequest, WebSearchRequest, WebSearchResult } from "../../domain/web-search.ts"
import { CancelRunRequest } from "./do-anything.ts"
import { ProjectIdParam, RunIdParam, RunStatusA, RunStatusB } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

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
  terminal_reason: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, detail: Schema.String })),
  results: Schema.NullOr(WebSearchResult),
  llm_cost_usd: Schema.String.annotate({ description: "Model tokens of the re-rank and the summaries, charged when the search ends", examples: ["0.00"] }),
  service_cost_usd: Schema.String.annotate({ description: "The search's fee (web_search_per_query of the price table, per distinct query), charged when it ends", examples: ["0.01"] }),
  total_cost_usd: Schema.String.annotate({ description: "Everything charged for this run: llm_cost_usd + service_cost_usd", examples: ["0.01"] }),
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String)
})

const EventStream = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" }))
const runParams = { ...ProjectIdParam, rid: RunIdParam }
const strict = { errors: "all", onExcessProperty: "error" } as const
/** Convention A: status done on success. */
export const WebSearchRunResponse = webSearchRunResponse(RunStatusA)
/** Convention B: status succeeded (terminal_reason done) on success. */
export const FlatWebSearchRunResponse = webSearchRunResponse(RunStatusB)

/** A derived run answers like a create: 200 with the result within the wait, else 202. */
const conventionA = { run: WebSearchRunResponse, started: [WebSearchRunResponse, WebSearchRunResponse.annotate({ httpApiStatus: 202 })] as const }
const conventionB = {
  run: FlatWebSearchRunResponse,
  started: [FlatWebSearchRunResponse, FlatWebSearchRunResponse.annotate({ httpApiStatus: 202 })] as const
}

/** The operations, answering `schemas` (by convention). */
const endpoints = <const Name extends string, R extends Schema.Top, S extends readonly [Schema.Top, Schema.Top]>(
  name: Name,
  schemas: { readonly run: R; readonly started: S }
) =>
  HttpApiGroup.make(name)
    .add(
      HttpApiEndpoint.post("createRun", "/runs", {
        params: ProjectIdParam,
        payload: WebSearchRequest,
        success: schemas.started,
        error: [ValidationError, PaymentRequired]
      }),
      HttpApiEndpoint.get("getRun", "/runs/:rid", { params: runParams, success: schemas.run, error: NotFound }),
      HttpApiEndpoint.get("runEvents", "/runs/:rid/events", {
        params: runParams,
        headers: { "last-event-id": Schema.optional(Schema.String) },
        success: EventStream,
        error: NotFound
      }),
      HttpApiEndpoint.post("cancel", "/runs/:rid/cancel", {
        params: runParams,
        payload: CancelRunRequest,
        success: schemas.run,
        error: [ValidationError, BadRequest, NotFound, Conflict]
      }).annotate(
        OpenApi.Description,
        "Cancels a run that has not ended: it becomes canceled (terminal_reason canceled, the reason in its " +
          "run.status_changed event), its search stops and its callback is sent. A run that has ended is 409 conflict."
      ),
      HttpApiEndpoint.post("refine", "/runs/:rid/refine", {
        params: runParams,
        payload: RefineWebSearchRequest,
        success: schemas.started,
        error: [ValidationError, BadRequest, NotFound, PaymentRequired]
      }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
        OpenApi.Description,
        "Starts a new run of the same search narrowed by `text`: each query gets the text appended (cut to 500 " +
          "characters at a word), the text becomes the objective, and engines, max_results_per_query, rerank, " +
          "summarize, freshness, site lists and language are the original's. The original may still be running. " +
          "The new run has parent_run_id set and answers like a create: 200 with results within the wait, else 202."
      ),
      HttpApiEndpoint.post("followup", "/runs/:rid/followup", {
        params: runParams,
        payload: WebSearchFollowupRequest,
        success: schemas.started,
        error: [ValidationError, BadRequest, NotFound, Conflict, PaymentRequired]
      }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
        OpenApi.Description,
        "Starts a new run with new `queries` and the original's settings (`text`, if given, is its objective). " +
          "Its results leave out every page (by canonical_url) the original, and the runs it was derived from, " +
          "returned; it searches twice as deep per query to make up for them, and results.excluded_count says how " +
          "many were left out. The original must have ended (409 conflict otherwise). parent_run_id is set; " +
          "answers like a create: 200 with results within the wait, else 202."
      )
    )
    .middleware(Idempotency)
    .middleware(RateLimit)
    .middleware(Authentication)

export class WebSearchApi extends endpoints("web_search", conventionA)
  .prefix("/v1/projects/:pid/web_search")
  .annotateMerge(OpenApi.annotations({ title: "WebSearch (Convention A)" }))
{}

export class WebSearchFlatApi extends endpoints("web_search_flat", conventionB)
  .prefix("/api/v1/projects/:pid/web_search")
  .annotateMerge(OpenApi.annotations({
    title: "WebSearch (Convention B)",
    description: "status succeeded, terminal_reason done, everywhere under /api/v1: responses, events (run.status_changed and " +
      "run.completed data) and 409 extra.status"
  }))
{}
