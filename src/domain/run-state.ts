/**
 * The DoAnything run state machine of the spec ("States and transitions"). Every change goes
 * through `canTransition`; anything else is a 409 conflict.
 */
export const RunStatuses = ["pending", "running", "awaiting_input", "paused", "done", "failed", "canceled"] as const
export type RunStatus = typeof RunStatuses[number]

/** A run's status as the wire shows it: the stored ones, and `succeeded` (Convention B's `done`, see flatStatus). */
export const WireRunStatuses = [...RunStatuses, "succeeded"] as const

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
export const flatStatus = (status: RunStatus): RunStatus | "succeeded" => status === "done" ? "succeeded" : status
