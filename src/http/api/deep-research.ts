/**
 * DeepResearch runs under three prefixes with the same operations:
 * Convention A `/v1/projects/{pid}/deep_research/runs`, Convention B
 * `/api/v1/projects/{pid}/deep_research/runs` (status `succeeded`), and the standalone
 * `/v1/deep_research`, where the project comes from the bearer token.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, NotFound, PaymentRequired, ValidationError } from "../../domain/api-errors.ts"
import {
  CreateResearchRequest,
  ResearchFollowupRequest,
  ResearchInterveneRequest,
  ResearchRefineRequest
} from "../../domain/research.ts"
import { PageQuery } from "../../domain/pagination.ts"
import {
  ArtifactList,
  FlatListResearchRunsQuery,
  FlatResearchRunList,
  FlatResearchRunResponse,
  ListResearchRunsQuery,
  ResearchRunList,
  ResearchRunResponse
} from "../../domain/wire/deep-research.ts"
import { CancelRunRequest, FeedbackRequest } from "../../domain/wire/do-anything.ts"
import { ArtifactId } from "../../domain/id-schemas.ts"
import { RESEARCH_JSON_ARTIFACT } from "./openapi-artifact-name.ts"
import { ProjectIdParam, RunIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const strict = { errors: "all", onExcessProperty: "error" } as const
/** An artifact id in a path, decoded as the branded ArtifactId (on the wire the same string, at most 64 characters). */
const ArtifactIdParam = ArtifactId.check(Schema.isMaxCodePoints(64))
const EventStream = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" }))
const ArtifactContent = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/markdown" }))
/**
 * An artifact is sent as its own type: the report (final.md) as text/markdown, citations.json and
 * confidence.json as application/json (src/research/executor.ts), so the 200 declares both; the JSON
 * is one of the two artifacts' schemas.
 */
const jsonArtifacts = (operation: Record<string, any>) => {
  const ok = operation["responses"]?.["200"]
  // The component is added with the document (openapi-artifacts.ts), so the SDK does not carry its JSON Schema.
  if (ok?.["content"] !== undefined) ok["content"]["application/json"] ??= { schema: { $ref: `#/components/schemas/${RESEARCH_JSON_ARTIFACT}` } }
  return operation
}
const writeErrors = [ValidationError, NotFound, Conflict] as const
const deriveErrors = [ValidationError, BadRequest, NotFound, Conflict, PaymentRequired] as const

const conventionA = {
  run: ResearchRunResponse,
  started: ResearchRunResponse.annotate({ httpApiStatus: 202 }),
  list: ResearchRunList,
  query: ListResearchRunsQuery
}
const conventionB = {
  run: FlatResearchRunResponse,
  started: FlatResearchRunResponse.annotate({ httpApiStatus: 202 }),
  list: FlatResearchRunList,
  query: FlatListResearchRunsQuery
}

/** The operations, under `base` (a path without a trailing slash) with `params` for its variables, answering `schemas` (by convention). */
const endpoints = <
  const Name extends string,
  P extends Record<string, Schema.Top>,
  R extends Schema.Top,
  S extends Schema.Top,
  L extends Schema.Top,
  Q extends Record<string, Schema.Top>
>(name: Name, base: `/${string}`, params: P, schemas: { readonly run: R; readonly started: S; readonly list: L; readonly query: Q }) => {
  const run = { ...params, rid: RunIdParam }
  return HttpApiGroup.make(name).add(
    HttpApiEndpoint.post("createRun", base, {
      params,
      payload: CreateResearchRequest,
      success: schemas.started,
      error: [ValidationError, PaymentRequired]
    }).annotate(HttpApi.PayloadParseOptions, strict),
    HttpApiEndpoint.get("listRuns", base, {
      params,
      query: schemas.query,
      success: schemas.list,
      error: [ValidationError, BadRequest]
    }),
    HttpApiEndpoint.get("getRun", `${base}/:rid`, { params: run, success: schemas.run, error: NotFound }),
    HttpApiEndpoint.get("runEvents", `${base}/:rid/events`, {
      params: run,
      headers: { "last-event-id": Schema.optional(Schema.String) },
      success: EventStream,
      error: NotFound
    }),
    HttpApiEndpoint.post("intervene", `${base}/:rid/intervene`, {
      params: run,
      payload: ResearchInterveneRequest,
      success: schemas.run,
      error: writeErrors
    }).annotate(HttpApi.PayloadParseOptions, strict),
    HttpApiEndpoint.post("cancel", `${base}/:rid/cancel`, {
      params: run,
      payload: CancelRunRequest,
      success: schemas.run,
      error: writeErrors
    }),
    HttpApiEndpoint.post("feedback", `${base}/:rid/feedback`, {
      params: run,
      payload: FeedbackRequest,
      success: schemas.run,
      error: writeErrors
    }).annotate(HttpApi.PayloadParseOptions, strict),
    HttpApiEndpoint.post("followup", `${base}/:rid/followup`, {
      params: run,
      payload: ResearchFollowupRequest,
      success: schemas.started,
      error: deriveErrors
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "send_followup: a follow-up question on a finished report. Starts a new run (202) whose topic is `text`, with " +
        "the parent's depth, audience, domain lists, budgets, require_outline_approval and callback_url; the parent's " +
        "report is given to the brief, the planner and the writer, so the new report builds on it and does not repeat " +
        "it. parent_run_id is set. The parent must have finished successfully (done); 409 conflict otherwise."
    ),
    HttpApiEndpoint.post("refine", `${base}/:rid/refine`, {
      params: run,
      payload: ResearchRefineRequest,
      success: schemas.started,
      error: deriveErrors
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "refine: the same topic and settings again, with `text` as instructions for the planner and the writer " +
        "(shown as `instructions`). When the parent's outline was final (approved, or no approval asked) its brief, " +
        "outline, sources and claims are reused: nothing is searched again and every section is rewritten; otherwise " +
        "the run plans again from the parent's brief with the text (and asks for approval again if the parent did). " +
        "Starts a new run (202) with parent_run_id set. The parent must have ended; 409 conflict otherwise."
    ),
    HttpApiEndpoint.get("listArtifacts", `${base}/:rid/artifacts`, { params: run, query: PageQuery, success: ArtifactList, error: [BadRequest, NotFound] }),
    HttpApiEndpoint.get("getArtifact", `${base}/:rid/artifacts/:aid`, {
      params: { ...run, aid: ArtifactIdParam },
      success: ArtifactContent,
      error: NotFound
    }).annotate(OpenApi.Transform, jsonArtifacts)
  )
    .middleware(Idempotency)
    .middleware(RateLimit)
    .middleware(Authentication)
}

export class DeepResearchApi extends endpoints("deep_research", "/v1/projects/:pid/deep_research/runs", ProjectIdParam, conventionA)
  .annotateMerge(OpenApi.annotations({
    title: "DeepResearch (Convention A)",
    description: "A topic in, a Markdown report with citations and confidence out; phases brief, plan, " +
      "hitl_outline (when require_outline_approval), gather, crosscheck, synthesize."
  }))
{}

export class DeepResearchFlatApi extends endpoints("deep_research_flat", "/api/v1/projects/:pid/deep_research/runs", ProjectIdParam, conventionB)
  .annotateMerge(OpenApi.annotations({
    title: "DeepResearch (Convention B)",
    description: "status succeeded, terminal_reason done, everywhere under /api/v1: responses, events (run.status_changed and " +
      "run.completed data), 409 extra.status and the callback_url body of a run created here"
  }))
{}

export class DeepResearchStandaloneApi extends endpoints("deep_research_standalone", "/v1/deep_research", {}, conventionA)
  .annotateMerge(OpenApi.annotations({ title: "DeepResearch (standalone)", description: "The project comes from the bearer token." }))
{}
