/** The wire shape of a WebSearch run (both conventions). */
import { flatStatus } from "../../domain/run-state.ts"
import type { Run } from "../../domain/run.ts"
import type { WebSearchResult } from "../../domain/web-search.ts"
import { usd, usdSum } from "../../domain/money.ts"
import { iso } from "./timestamps.ts"


/** The search a run does, as its request was decoded (the wire fields only). */
const requestView = (run: Run) => {
  const request = run.request._tag === "WebSearch" ? run.request : undefined
  return {
    queries: request?.queries ?? [],
    engines: request?.engines ?? null,
    max_results_per_query: request?.max_results_per_query ?? 0,
    rerank: request?.rerank ?? false,
    summarize: request?.summarize ?? false,
    freshness: request?.freshness ?? null,
    site_whitelist: request?.site_whitelist ?? null,
    site_blacklist: request?.site_blacklist ?? null,
    language: request?.language ?? null,
    objective: request?.objective ?? null
  }
}

export const webSearchRunView = (run: Run, flat: boolean) => ({
  id: run.id,
  run_id: run.id,
  session_id: null,
  kind: "web_search" as const,
  status: flat ? flatStatus(run.status) : run.status,
  parent_run_id: run.parent_run_id,
  request: requestView(run),
  terminal_reason: run.status === "done" ? "done" : run.terminal_reason,
  error: run.error_code === null ? null : { code: run.error_code, detail: run.error_detail ?? "" },
  results: (run.output ?? null) as WebSearchResult | null,
  llm_cost_usd: usd(run.llm_cost_usd),
  service_cost_usd: usd(run.service_cost_usd),
  total_cost_usd: usdSum(run.llm_cost_usd, run.service_cost_usd),
  created_at: run.created_at.toISOString(),
  started_at: iso(run.started_at),
  finished_at: iso(run.finished_at)
})
