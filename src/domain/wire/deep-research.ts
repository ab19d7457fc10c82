/**
 * DeepResearch on the wire: the research run view under both conventions, its lists, its
 * artifacts, and the query of the run list (src/http/api/deep-research.ts). The request bodies
 * are in src/domain/research.ts.
 */
import { Schema } from "effect"
import { Depth, Outline, Phases, ResearchResult } from "../research.ts"
import { PageQuery } from "../pagination.ts"
import { FlatRunStatuses, RunStatuses } from "../run-state.ts"
import { RunStatusA, RunStatusB, TerminalReason } from "./common.ts"

const Money = Schema.String.annotate({ description: "USD as a decimal string exact to the micro-dollar, at least two decimals (\"0.000182\", \"1.50\")" })

/** A research run with its status named as a convention does (RunStatusA under /v1, RunStatusB under /api/v1). */
const researchRunResponse = <S extends typeof RunStatusA | typeof RunStatusB>(status: S) => Schema.Struct({
  id: Schema.String,
  run_id: Schema.String,
  /** DeepResearch holds no browser session: always null. */
  session_id: Schema.Null,
  project_id: Schema.String,
  kind: Schema.Literal("deep_research"),
  status,
  /** The run this one was derived from (followup, refine); null for a run created directly. */
  parent_run_id: Schema.NullOr(Schema.String),
  /** A refinement's text (instructions for the planner and the writer); null otherwise. */
  instructions: Schema.NullOr(Schema.String),
  phase: Schema.NullOr(Schema.Literals(Phases)).annotate({
    description: "The step the run is at: brief, plan, hitl_outline, gather, crosscheck, synthesize; null before it " +
      "starts and once it has ended (phases apply while the run is under way). At the outline gate the run is " +
      "`awaiting_input` with phase `hitl_outline` kept and `pending_request_id` set (the run.input_request event " +
      "carries the outline); once answered it is `running` again in `gather`."
  }),
  terminal_reason: TerminalReason,
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, detail: Schema.String })),
  topic: Schema.String,
  depth: Depth,
  require_outline_approval: Schema.Boolean,
  /** The outline once planned (the one approved, with its edits, after the gate). */
  outline: Schema.NullOr(Outline),
  /** The pending outline approval request, while the run waits for it. */
  pending_request_id: Schema.NullOr(Schema.String),
  result: Schema.NullOr(ResearchResult),
  llm_cost_usd: Money,
  service_cost_usd: Money.annotate({ description: "The run's fee (deep_research_per_run of the price table)" }),
  total_cost_usd: Money.annotate({ description: "llm_cost_usd + service_cost_usd" }),
  max_cost_usd: Schema.NullOr(Schema.String),
  callback_url: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String),
  deadline_at: Schema.NullOr(Schema.String)
})

/** Convention A (and the standalone path): status done on success. */
export const ResearchRunResponse = researchRunResponse(RunStatusA)
/** Convention B: status succeeded (terminal_reason done) on success. */
export const FlatResearchRunResponse = researchRunResponse(RunStatusB)

export const ResearchRunList = Schema.Struct({
  items: Schema.Array(ResearchRunResponse),
  next_cursor: Schema.NullOr(Schema.String)
})
export const FlatResearchRunList = Schema.Struct({
  items: Schema.Array(FlatResearchRunResponse),
  next_cursor: Schema.NullOr(Schema.String)
})

export const ArtifactResponse = Schema.Struct({
  id: Schema.String,
  run_id: Schema.String,
  name: Schema.String,
  content_type: Schema.String,
  size_bytes: Schema.Int,
  created_at: Schema.String
})

export const ArtifactList = Schema.Struct({ items: Schema.Array(ArtifactResponse), next_cursor: Schema.NullOr(Schema.String) })

/**
 * The query of the run list under Convention A (`/v1`): a status as that convention names it. A
 * value outside the list is refused (422 validation_error at query.status).
 */
export const ListResearchRunsQuery = {
  ...PageQuery,
  status: Schema.optional(Schema.Literals(RunStatuses)).annotate({ description: "only runs in this status (Convention A names: done on success)" })
}
/** The query of the run list under Convention B (`/api/v1`): `succeeded` where Convention A says `done`. */
export const FlatListResearchRunsQuery = {
  ...PageQuery,
  status: Schema.optional(Schema.Literals(FlatRunStatuses)).annotate({ description: "only runs in this status (Convention B names: succeeded on success)" })
}
