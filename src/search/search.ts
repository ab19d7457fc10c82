/**
 * Search: the WebSearch product. A request becomes a run (status, events, polling like every run
 * kind) executed by its WebSearch entity (src/entities/web-search.ts): engine progress arrives as
 * `run.search.progress` events and the result is the run's output.
 */
import { Context, Effect, Layer, Queue } from "effect"
import { AppConfig } from "../config/config.ts"
import { type RunNotFound, UnknownNames } from "../domain/errors.ts"
import { isTerminal } from "../domain/run-state.ts"
import type { Run, WebSearchRunRequest } from "../domain/run.ts"
import { WebSearchEntity } from "../entities/web-search.ts"
import { RunEventBus } from "../events/run-event-bus.ts"
import { RunStore } from "../store/runs.ts"
import { WebSearch } from "./web-search.ts"

export class Search extends Context.Service<Search, {
  /**
   * Starts a run. With `wait`, waits up to WA_WEB_SEARCH_WAIT_SECONDS for it to end; `ended`
   * says whether it did (the run returned is the newest state either way).
   */
  readonly create: (projectId: string, request: WebSearchRunRequest) => Effect.Effect<{ readonly run: Run; readonly ended: boolean }, UnknownNames>
  readonly find: (projectId: string, runId: string) => Effect.Effect<Run, RunNotFound>
}>()("wa/search/Search") {
  static readonly layer = Layer.effect(
    Search,
    Effect.gen(function*() {
      const store = yield* RunStore
      const search = yield* WebSearch
      const bus = yield* RunEventBus
      const config = yield* AppConfig
      const clientFor = yield* WebSearchEntity.client

      /** The run once it has ended, or as it is when `seconds` have passed. */
      const awaitEnd = (runId: string, seconds: number) =>
        Effect.scoped(Effect.gen(function*() {
          const wakeups = yield* bus.wakeups(runId)
          const deadline = Date.now() + seconds * 1000
          while (true) {
            const run = (yield* store.getRun(runId))!
            if (isTerminal(run.status) || Date.now() >= deadline) return run
            yield* Queue.take(wakeups).pipe(Effect.timeoutOption(`${Math.max(1, Math.min(1000, deadline - Date.now()))} millis`))
          }
        }))

      const create = Effect.fn("Search.create")(function*(projectId: string, request: WebSearchRunRequest) {
        // Unknown engines are refused before anything is created.
        const engines: ReadonlyArray<string> = search.engines
        const unknown = (request.engines ?? []).filter((name) => !engines.includes(name))
        if (unknown.length > 0) return yield* new UnknownNames({ field: "engines", what: "engine", unknown, allowed: [...search.engines] })
        const created = yield* store.createStandaloneRun(projectId, request)
        // Fire-and-forget: the persisted Execute reaches the run's entity even if this request is gone.
        yield* clientFor(created.id).Execute({ runId: created.id }, { discard: true }).pipe(Effect.orDie)
        const run = request.wait ? yield* awaitEnd(created.id, config.webSearchWaitSeconds) : created
        return { run, ended: isTerminal(run.status) }
      })

      return Search.of({
        create,
        find: Effect.fn("Search.find")(function*(projectId: string, runId: string) {
          return yield* store.findRun(projectId, runId, "web_search")
        })
      })
    })
  )
}
