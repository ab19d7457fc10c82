/** The wire shape of a WebSearch run (both conventions). */
import { flatStatus } from "../../domain/run-state.ts"
import type { Run } from "../../domain/run.ts"
import type { WebSearchResult } from "../../search/schema.ts"

const iso = (date: Date | null) => date === null ? null : date.toISOString()

export const webSearchRunView = (run: Run, flat: boolean) => ({
  id: run.id,
  run_id: run.id,
  session_id: null,
  kind: "web_search" as const,
  status: flat ? flatStatus(run.status) : run.status,
  terminal_reason: run.status === "done" ? "done" : run.terminal_reason,
  error: run.error_code === null ? null : { code: run.error_code, detail: run.error_detail ?? "" },
  results: (run.output ?? null) as WebSearchResult | null,
  created_at: run.created_at.toISOString(),
  started_at: iso(run.started_at),
  finished_at: iso(run.finished_at)
})
