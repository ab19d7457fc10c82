/**
 * WebSearch as runs: a request becomes a run (status, events, polling like every run kind) whose
 * search executes in this process; `engine` progress arrives as `run.search.progress` events and
 * the result is the run's output. A run still pending or running when its process stops stays so
 * (restart recovery is the scale-out issue's work).
 */
import { Context, Deferred, Effect, FiberSet, Layer, Option } from "effect"
import { AgentModel } from "../agent/model.ts"
import { type RunRow, RunStore } from "../store/runs.ts"
import type { WebSearchRequest, WebSearchResult } from "./schema.ts"
import { WebSearch } from "./web-search.ts"

export class WebSearchRuns extends Context.Service<WebSearchRuns, {
  /** Starts a run; the returned effect resolves when it ends (or never, if it outlives the caller). */
  readonly start: (projectId: string, request: WebSearchRequest) => Effect.Effect<{ readonly run: RunRow; readonly finished: Effect.Effect<void> }>
  readonly engines: ReadonlyArray<string>
}>()("wa/search/WebSearchRuns") {
  static readonly layer = Layer.effect(
    WebSearchRuns,
    Effect.gen(function*() {
      const store = yield* RunStore
      const search = yield* WebSearch
      const model = yield* AgentModel
      const fibers = yield* FiberSet.make()

      const execute = (run: RunRow, request: WebSearchRequest) =>
        Effect.gen(function*() {
          yield* store.transition(run.id, "running").pipe(Effect.orDie)
          const searching = search.run(request, {
            onProgress: (event) => store.appendEvent(run.id, "run.search.progress", { ...event }).pipe(Effect.asVoid)
          })
          // The search looks for a model in its context; with none it summarizes extractively.
          const outcome = yield* Effect.result(Option.isSome(model) ? Effect.provide(searching, model.value.layer) : searching)
          if (outcome._tag === "Success") {
            const result: WebSearchResult = outcome.success
            yield* store.transition(run.id, "done", { output: result, terminalReason: "done" }).pipe(Effect.ignore)
          } else {
            yield* store.transition(run.id, "failed", {
              terminalReason: "failed",
              errorCode: "validation_error",
              errorDetail: outcome.failure.message
            }).pipe(Effect.ignore)
          }
        }).pipe(
          Effect.catchCause((cause) =>
            store.transition(run.id, "failed", { terminalReason: "failed", errorCode: "internal_error", errorDetail: "the search failed" }).pipe(
              Effect.ignore,
              Effect.andThen(Effect.logError("web search run failed", cause))
            )
          )
        )

      return WebSearchRuns.of({
        engines: search.engines,
        start: (projectId, request) =>
          Effect.gen(function*() {
            const run = yield* store.createStandaloneRun(projectId, "web_search", { ...request })
            const done = yield* Deferred.make<void>()
            yield* execute(run, request).pipe(Effect.ensuring(Deferred.succeed(done, undefined)), FiberSet.run(fibers))
            return { run, finished: Deferred.await(done) }
          })
      })
    })
  )
}

