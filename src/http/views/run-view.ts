/** The wire shapes of sessions and runs, for both route conventions and for callbacks. */
import { flatStatus } from "../../domain/run-state.ts"
import type { Run, Session } from "../../domain/run.ts"
import { costFields, usd } from "../../domain/money.ts"
import { iso } from "./timestamps.ts"
import { recordingSettingsView } from "./recording-view.ts"
import { inboxAddressOf } from "../../mail/inbound/inbox-store.ts"


export const runView = (run: Run) => {
  const request = run.request._tag === "DoAnything" ? run.request : undefined
  return {
    id: run.id,
    session_id: run.session_id,
    status: run.status,
    terminal_reason: run.terminal_reason,
    expired: run.expired,
    instructions: run.instructions,
    output: run.output ?? null,
    error: run.error_code === null ? null : {
      code: run.error_code,
      detail: run.error_detail ?? "",
      // The safety boundary's refusal (src/safety/): its detail is the reason.
      ...(run.error_code === "safety_boundary_violated" ? { extra: { reason: run.error_detail ?? "" } } : {})
    },
    step_count: run.step_count,
    max_steps: run.max_steps,
    model: run.model,
    parent_run_id: run.parent_run_id,
    skills: request?.skills ?? [],
    allowed_actions: request?.allowed_actions ?? [],
    keep_alive: request?.keep_alive ?? true,
    callback_url: request?.callback_url ?? null,
    output_schema: request?.output_schema ?? null,
    // Completed with the stored recording by GET run (recording-view.ts).
    recording: recordingSettingsView(run),
    llm_cost_usd: usd(run.llm_cost_usd),
    created_at: run.created_at.toISOString(),
    started_at: iso(run.started_at),
    finished_at: iso(run.finished_at),
    deadline_at: iso(run.deadline_at)
  }
}

/**
 * `mailDomain`: the service's inbox domain (src/mail/inbound/inbox-store.ts mailDomainOf), null when it
 * receives no mail. `runs` start with the session's first run, whose `agentmail` decides the inbox.
 */
export const sessionView = (session: Session, runs: ReadonlyArray<Run>, mailDomain: string | null = null) => ({
  id: session.id,
  project_id: session.project_id,
  status: session.status,
  profile_id: session.profile_id,
  workspace_id: session.workspace_id,
  inbox_address: inboxAddressOf(session.id, runs[0]?.request._tag === "DoAnything" ? runs[0].request.agentmail : undefined, mailDomain),
  latest_run_id: session.latest_run_id,
  runs: runs.map(runView),
  ...costFields(session),
  created_at: session.created_at.toISOString(),
  updated_at: session.updated_at.toISOString(),
  closed_at: iso(session.closed_at)
})

/** Convention B's flat run envelope: `succeeded` as status, `done` as terminal_reason. */
export const flatRunView = (run: Run) => {
  const view = runView(run)
  return {
    ...view,
    run_id: run.id,
    status: flatStatus(run.status),
    terminal_reason: run.status === "done" ? "done" : run.terminal_reason
  }
}
