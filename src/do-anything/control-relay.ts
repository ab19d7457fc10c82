/**
 * ControlRelay: what a control page's WebSocket (src/http/server/control.ts) relays to and from,
 * wherever the cluster placed the session: the live frames of the session's page and the
 * person's input (the Session entity's `ControlFrames` and `ControlInput`, src/do-anything/executor.ts
 * via src/control/live-control.ts), and the moment control ends for that page (released,
 * taken over by a newer page opened with the URL, or the run ended: every event of the run
 * wakes the check). The grants themselves are TakeControl's (src/control/take-control.ts).
 */
import { Context, Effect, Layer, Queue } from "effect"
import type { Grant } from "../control/take-control.ts"
import { TakeControl } from "../control/take-control.ts"
import { isTerminal } from "../domain/run-state.ts"
import { SessionEntity } from "../entities/session.ts"
import { RunEventBus } from "../events/run-event-bus.ts"
import { RunStore } from "../store/runs.ts"
import { LiveInput } from "../browser/live-view.ts"
import { withMethodSpans } from "../observability/spans.ts"

/** The person's input as the control page sends it (a schema: the socket decodes it). */
export { LiveInput }

const make = Effect.gen(function*() {
  const take = yield* TakeControl
  const store = yield* RunStore
  const bus = yield* RunEventBus
  const clientFor = yield* SessionEntity.client
  return {
    /** The session of a grant, reached through the cluster: its page's frames, and input for it. */
    session: (grant: Grant) => {
      const client = clientFor(grant.sessionId)
      return {
        frames: client.ControlFrames({ grantId: grant.id }),
        input: (inputs: ReadonlyArray<LiveInput>) => client.ControlInput({ grantId: grant.id, inputs })
      }
    },
    /**
     * Waits until control ends for the page holding `controller` (the token of its connect) and
     * says why: released, ended, taken over by another page, or the run ended.
     */
    controlEnded: (grant: Grant, controller: string): Effect.Effect<string> =>
      Effect.scoped(Effect.gen(function*() {
        const wakeups = yield* bus.wakeups(grant.runId)
        while (true) {
          const current = yield* take.grant(grant.id)
          if (current === undefined || current.status !== "active") {
            return current?.status === "released" ? "control was released to the agent" : "control has ended"
          }
          if (current.controller !== controller) return "control was taken over by another page opened with this URL"
          const run = yield* store.getRun(grant.runId)
          if (run === undefined || isTerminal(run.status)) return `the run is ${run?.status ?? "gone"}`
          yield* Queue.take(wakeups).pipe(Effect.timeoutOption("5 seconds"))
        }
      }))
  }
})

export class ControlRelay extends Context.Service<ControlRelay, Effect.Success<typeof make>>()("wa/do-anything/ControlRelay") {
  static readonly layer = Layer.effect(ControlRelay, Effect.map(make, (relay) => ControlRelay.of(withMethodSpans("ControlRelay", relay))))
}
