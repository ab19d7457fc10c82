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
import { RefineWebSearchRequest, WebSearchFollowupRequest, WebSearchRequest } from "../../domain/web-search.ts"
import { CancelRunRequest } from "../../domain/wire/do-anything.ts"
import { FlatWebSearchRunResponse, WebSearchRunResponse } from "../../domain/wire/web-search.ts"
import { ProjectIdParam, RunIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const EventStream = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" }))
const runParams = { ...ProjectIdParam, rid: RunIdParam }
const strict = { errors: "all", onExcessProperty: "error" } as const

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
