/**
 * WebSearch runs under both conventions: `/v1/projects/{pid}/web_search/runs` and
 * `/api/v1/projects/{pid}/web_search/runs`. With `wait` (default true) the POST blocks up to 30 s
 * and answers 200 with the result; past that, or with `wait: false`, 202 and the client polls.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { NotFound, ValidationError } from "../errors.ts"
import { WebSearchRequest, WebSearchResult } from "../../search/schema.ts"
import { MaxString, ProjectIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

export const WebSearchRunResponse = Schema.Struct({
  id: Schema.String,
  run_id: Schema.String,
  session_id: Schema.Null,
  kind: Schema.Literal("web_search"),
  status: Schema.String,
  terminal_reason: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, detail: Schema.String })),
  results: Schema.NullOr(WebSearchResult),
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String)
})

const EventStream = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" }))
const runParams = { ...ProjectIdParam, rid: MaxString(64) }

const endpoints = <const Name extends string>(name: Name) =>
  HttpApiGroup.make(name)
    .add(
      HttpApiEndpoint.post("createRun", "/runs", {
        params: ProjectIdParam,
        payload: WebSearchRequest,
        success: [WebSearchRunResponse, WebSearchRunResponse.annotate({ httpApiStatus: 202 })],
        error: ValidationError
      }),
      HttpApiEndpoint.get("getRun", "/runs/:rid", { params: runParams, success: WebSearchRunResponse, error: NotFound }),
      HttpApiEndpoint.get("runEvents", "/runs/:rid/events", {
        params: runParams,
        headers: { "last-event-id": Schema.optional(Schema.String) },
        success: EventStream,
        error: NotFound
      })
    )
    .middleware(Idempotency)
    .middleware(RateLimit)
    .middleware(Authentication)

export class WebSearchApi extends endpoints("web_search")
  .prefix("/v1/projects/:pid/web_search")
  .annotateMerge(OpenApi.annotations({ title: "WebSearch (Convention A)" }))
{}

export class WebSearchFlatApi extends endpoints("web_search_flat")
  .prefix("/api/v1/projects/:pid/web_search")
  .annotateMerge(OpenApi.annotations({ title: "WebSearch (Convention B)", description: "status succeeded, terminal_reason done" }))
{}
