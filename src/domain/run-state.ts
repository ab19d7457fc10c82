/**
 * The DoAnything run state machine of the spec ("States and transitions"). Every change goes
 * through `canTransition`; anything else is a 409 conflict.
 */
export const RunStatuses = ["pending", "running", "awaiting_input", "paused", "done", "failed", "canceled"] as const
export type RunStatus = typeof RunStatuses[number]

/**
 * Why a run ended (its `terminal_reason`; null while it has not). The stored values, each written
 * by one place: `done` (the work finished: the agent loop, DeepResearch, WebSearch), `failed` (the
 * work failed: the run kernel, the agent loop's safety boundary), `canceled` (a cancel,
 * src/runs/cancel.ts), `budget_exceeded` and `expired` (the agent loop: credits or budget ran out,
 * max_steps reached), `duration_exceeded` (the run kernel at max_duration_minutes),
 * `outline_rejected` (DeepResearch's outline gate answered reject) and `skipped` (a Track tick that
 * did not run, src/track/monitor-store.ts; no run API shows a tick).
 */
export const TerminalReasons = ["done", "failed", "canceled", "budget_exceeded", "expired", "duration_exceeded", "outline_rejected", "skipped"] as const
export type TerminalReason = typeof TerminalReasons[number]

/** A DeepResearch run's phases, in order (src/research/executor.ts enters them; the run row keeps the current one). */
export const Phases = ["brief", "plan", "hitl_outline", "gather", "crosscheck", "synthesize"] as const
export type Phase = typeof Phases[number]

/** A DoAnything session's status. */
export const SessionStatuses = ["running", "idle", "closed"] as const

export const terminalStatuses: ReadonlySet<RunStatus> = new Set(["done", "failed", "canceled"])
export const isTerminal = (status: RunStatus) => terminalStatuses.has(status)

const transitions: Record<RunStatus, ReadonlyArray<RunStatus>> = {
  pending: ["running", "canceled", "failed"],
  running: ["awaiting_input", "paused", "done", "failed", "canceled"],
  // awaiting_input -> paused: a person took control instead of answering (src/control/take-control.ts).
  awaiting_input: ["running", "paused", "canceled", "failed"],
  paused: ["running", "canceled", "failed"],
  done: [],
  failed: [],
  canceled: []
}

export const canTransition = (from: RunStatus, to: RunStatus) => transitions[from].includes(to)

/** The states from which `cancel` is allowed. */
export const cancellable: ReadonlyArray<RunStatus> = ["pending", "running", "awaiting_input", "paused"]

/** Convention B shows `succeeded` where Convention A shows `done` (and `done` as terminal_reason). */
export const flatStatus = (status: RunStatus): Exclude<RunStatus, "done"> | "succeeded" => status === "done" ? "succeeded" : status

/** A run's statuses as Convention B (`/api/v1/...`) names them: `succeeded` for the stored `done`. */
export const FlatRunStatuses = ["pending", "running", "awaiting_input", "paused", "succeeded", "failed", "canceled"] as const

/**
 * The route convention a client speaks: "A" (`/v1/...`, status `done`) or "B" (`/api/v1/...`,
 * status `succeeded` with terminal_reason `done`). Responses, event streams and 409 envelopes name a
 * run's status in the convention of the route that serves them; a run's callback in the convention
 * of the route that created it (the stored request's `convention`, src/domain/run.ts).
 */
export type Convention = "A" | "B"

/** A run status (or any status text) as `convention` names it. */
export const statusIn = (convention: Convention, status: string): string => convention === "B" && status === "done" ? "succeeded" : status

/** A run's terminal_reason as `convention` shows it: Convention B gives `done` for a run that succeeded. */
export const terminalReasonIn = (convention: Convention, status: RunStatus, terminalReason: TerminalReason | null): TerminalReason | null =>
  convention === "B" && status === "done" ? "done" : terminalReason
