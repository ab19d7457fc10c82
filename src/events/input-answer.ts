/**
 * Waiting for the answer to a run's input request (`awaiting_input`), one loop for every product:
 * the agent's ask_human (src/agent/run-agent.ts) and DeepResearch's outline gate
 * (src/research/executor.ts). It reads the request after subscribing to the run's wakeups, so an
 * answer that came before the wait is seen at once, then wakes on each NOTIFY of the run (an
 * answer, a withdrawal, a cancel) and looks again at least every 2 seconds in case one was lost.
 */
import { Effect, Queue } from "effect"
import { isTerminal } from "../domain/run-state.ts"
import type { InputRequestId } from "../domain/id-schemas.ts"
import type { RunId } from "../domain/run.ts"
import type { RunStore } from "../store/runs.ts"
import type { RunEventBus } from "./run-event-bus.ts"

export type InputAnswer =
  /** The person answered. */
  | { readonly _tag: "Answered"; readonly response: unknown }
  /** The request was withdrawn: a person took control of the browser instead of answering. */
  | { readonly _tag: "Withdrawn" }
  /** The run ended meanwhile (canceled, failed, expired) or is gone. */
  | { readonly _tag: "Ended" }
  /** `handOver` said so (a draining runner): the run goes on from its checkpoint elsewhere. */
  | { readonly _tag: "HandOver" }

export const awaitInputAnswer = (
  services: { readonly store: RunStore["Service"]; readonly bus: RunEventBus["Service"] },
  runId: RunId,
  requestId: InputRequestId,
  options: { readonly handOver?: Effect.Effect<boolean> | undefined } = {}
): Effect.Effect<InputAnswer> =>
  Effect.scoped(Effect.gen(function*() {
    const wakeups = yield* services.bus.wakeups(runId)
    while (true) {
      const answer = yield* services.store.inputRequest(requestId)
      if (answer?.status === "answered") return { _tag: "Answered", response: answer.response } as const
      if (answer?.status === "withdrawn") return { _tag: "Withdrawn" } as const
      const current = yield* services.store.getRun(runId)
      if (current === undefined || isTerminal(current.status)) return { _tag: "Ended" } as const
      if (options.handOver !== undefined && (yield* options.handOver)) return { _tag: "HandOver" } as const
      yield* Queue.take(wakeups).pipe(Effect.timeoutOption("2 seconds"))
    }
  }))
