/** The wire shape of a DeepResearch run (all three prefixes, and its terminal callback). */
import { flatStatus, isTerminal, type RunStatus } from "../../domain/run-state.ts"
import type { DeepResearchRequest, Run } from "../../domain/run.ts"
import { Option, Schema } from "effect"
import { type Outline, ResearchResult } from "../../domain/research.ts"
import { usd, usdSum } from "../../domain/money.ts"
import { iso } from "./timestamps.ts"

/**
 * A done run's stored output, decoded as the research result it was written as; a row that does not
 * decode (written by hand, or by a bug) shows no result rather than a body the document does not allow.
 */
const decodeResult = (output: unknown): ResearchResult | null =>
  Option.getOrNull(Schema.decodeUnknownOption(ResearchResult)(output))

/** `flat`: Convention B's names (status `succeeded` for the stored `done`); the status's type says which. */
export const researchRunView = <Flat extends boolean = false>(
  run: Run,
  request: DeepResearchRequest,
  options: { readonly flat?: Flat; readonly outline?: Outline | null; readonly pendingRequestId?: string | null } = {}
) => {
  const cap = request.max_cost_usd
  return {
    id: run.id,
    run_id: run.id,
    session_id: null,
    project_id: run.project_id,
    kind: "deep_research" as const,
    status: (options.flat === true ? flatStatus(run.status) : run.status) as Flat extends true ? ReturnType<typeof flatStatus> : RunStatus,
    parent_run_id: run.parent_run_id,
    instructions: run.instructions,
    phase: isTerminal(run.status) ? null : run.phase,
    terminal_reason: run.status === "done" ? "done" : run.terminal_reason,
    error: run.error_code === null ? null : { code: run.error_code, detail: run.error_detail ?? "" },
    topic: request.topic,
    depth: request.depth,
    require_outline_approval: request.require_outline_approval,
    outline: options.outline ?? null,
    pending_request_id: options.pendingRequestId ?? null,
    result: run.status === "done" ? decodeResult(run.output) : null,
    llm_cost_usd: usd(run.llm_cost_usd),
    service_cost_usd: usd(run.service_cost_usd),
    total_cost_usd: usdSum(run.llm_cost_usd, run.service_cost_usd),
    max_cost_usd: cap === undefined || cap === null ? null : usd(cap),
    callback_url: request.callback_url ?? null,
    created_at: run.created_at.toISOString(),
    started_at: iso(run.started_at),
    finished_at: iso(run.finished_at),
    deadline_at: iso(run.deadline_at)
  }
}
