/**
 * Tells the outside world that a run ended: its `callback_url` gets the run, signed. The one
 * place that does it (the entities call it when a run they execute ends; the product services
 * when they cancel one). The body is rendered by the HTTP layer's view, given at composition.
 */
import { Context, Effect, Layer } from "effect"
import type { Run, RunId } from "../domain/run.ts"
import type { RunCompletedData } from "../domain/wire/webhook-payloads.ts"
import { RunStore } from "../store/runs.ts"
import { Callbacks } from "./callbacks.ts"

export class RunNotifier extends Context.Service<RunNotifier, {
  readonly terminal: (runId: RunId) => Effect.Effect<void>
}>()("wa/webhooks/RunNotifier") {
  /**
   * `render` gives the callback's data for a run (src/http/views/callback-view.ts): the run as its
   * product's GET shows it, a `run.completed` body's data (src/domain/wire/webhook-payloads.ts);
   * undefined for a run that has no callback.
   */
  static readonly layer = (render: (run: Run) => RunCompletedData | undefined) => Layer.effect(
    RunNotifier,
    Effect.gen(function*() {
      const store = yield* RunStore
      const callbacks = yield* Callbacks
      return RunNotifier.of({
        terminal: Effect.fn("RunNotifier.terminal")(function*(runId: RunId) {
          // A Track tick (kind track_tick) has no callback: its monitor's channel is told what it found.
          const run = yield* store.getRun(runId)
          if (run === undefined || run.request._tag === "WebSearch" || run.request._tag === "TrackTick") return
          const url = run.request.callback_url
          if (url === undefined || url === null) return
          const data = render(run)
          if (data === undefined) return
          yield* callbacks.send({ projectId: run.project_id, runId, url, message: { type: "run.completed", data } })
        })
      })
    })
  )
}
