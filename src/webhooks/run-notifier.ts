/** Tells the outside world that a run ended: its `callback_url` gets the run, signed. */
import { Context, Effect, Layer } from "effect"
import { runView } from "../domain/run-view.ts"
import { researchRunView } from "../research/view.ts"
import { RunStore } from "../store/runs.ts"
import { Callbacks } from "./callbacks.ts"

export class RunNotifier extends Context.Service<RunNotifier, {
  readonly terminal: (runId: string) => Effect.Effect<void>
}>()("wa/webhooks/RunNotifier") {
  static readonly layer = Layer.effect(
    RunNotifier,
    Effect.gen(function*() {
      const store = yield* RunStore
      const callbacks = yield* Callbacks
      return RunNotifier.of({
        terminal: (runId) =>
          Effect.gen(function*() {
            const run = yield* store.getRun(runId)
            const url = (run?.request as { callback_url?: string | null } | undefined)?.callback_url
            if (run === undefined || url === undefined || url === null) return
            const data = run.kind === "deep_research" ? researchRunView(run) : runView(run)
            yield* callbacks.send({ projectId: run.project_id, runId, url, type: "run.completed", data })
          })
      })
    })
  )
}
