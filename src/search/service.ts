/**
 * Search: the WebSearch product. A request becomes a run (status, events, polling like every run
 * kind) executed by its WebSearch entity (src/entities/web-search.ts): engine progress arrives as
 * `run.search.progress` events and the result is the run's output.
 *
 * A run can be canceled, refined (the same search narrowed by a text) and followed up (new
 * queries with the same settings, leaving out the pages already returned); both derived runs
 * carry `parent_run_id` and answer like a create (the wait rule included).
 */
import { Context, Effect, Layer, Option, Queue, Schema } from "effect"
import { Budget } from "../billing/budget.ts"
import { AppConfig } from "../config/config.ts"
import type { BudgetExceeded, InsufficientCredits, RunCapReached } from "../domain/errors.ts"
import { type InvalidTransition, ParentRunNotReady, type RunEnded, type RunNotFound, UnknownNames } from "../domain/errors.ts"
import { isTerminal } from "../domain/run-state.ts"
import { MAX_QUERY_LENGTH, type ProjectId, type Run, RunId, type WebSearchRunRequest } from "../domain/run.ts"
import { cancelRun } from "../runs/cancel.ts"
import { WebSearchEntity } from "../entities/web-search.ts"
import { RunEventBus } from "../events/run-event-bus.ts"
import { makeStandaloneCreate } from "../runs/create.ts"
import { RunStore } from "../store/runs.ts"
import { RunNotifier } from "../webhooks/run-notifier.ts"
import { WebSearchResult } from "../domain/web-search.ts"
import { WebSearch } from "../engines/web-search.ts"
import { withMethodSpans } from "../observability/spans.ts"

/** A run that was started, and whether it ended within the wait (the run is its newest state either way). */
export interface Started {
  readonly run: Run
  readonly ended: boolean
}

const requestOf = (run: Run): WebSearchRunRequest => {
  if (run.request._tag !== "WebSearch") throw new Error(`run ${run.id} is not a web search run`)
  return run.request
}

/**
 * A query refined by a text: the text appended (whitespace collapsed), cut at a word boundary to
 * the query limit, so engines see the original terms first.
 */
export const refineQuery = (query: string, text: string): string => {
  const joined = `${query.trim()} ${text}`.replace(/\s+/g, " ").trim()
  if (joined.length <= MAX_QUERY_LENGTH) return joined
  const cut = joined.slice(0, MAX_QUERY_LENGTH)
  const space = cut.lastIndexOf(" ")
  return space > query.trim().length ? cut.slice(0, space) : cut
}

const decodeResult = Schema.decodeUnknownOption(WebSearchResult)

export class Search extends Context.Service<Search, {
  /**
   * Starts a run. With `wait`, waits up to WA_WEB_SEARCH_WAIT_SECONDS for it to end; `ended`
   * says whether it did (the run returned is the newest state either way).
   */
  readonly create: (projectId: ProjectId, request: WebSearchRunRequest) => Effect.Effect<Started, UnknownNames | InsufficientCredits | BudgetExceeded | RunCapReached>
  readonly find: (projectId: ProjectId, runId: RunId) => Effect.Effect<Run, RunNotFound>
  /** Cancels a run that has not ended (its search is interrupted, the callback sent); an ended one is RunEnded. */
  readonly cancel: (run: Run, reason: string | null) => Effect.Effect<Run, RunEnded | RunNotFound | InvalidTransition>
  /**
   * A new run of the same search refined by `text`: every query gets the text appended, the text
   * becomes the objective, all other settings are the original's. The original may still run.
   */
  readonly refine: (run: Run, input: { readonly text: string; readonly wait: boolean }) => Effect.Effect<Started, UnknownNames | InsufficientCredits | BudgetExceeded | RunCapReached>
  /**
   * A new run with new queries and the original's settings (`text`, if given, becomes its
   * objective) that leaves out every page the original, and the runs it derives from, returned.
   * The original must have ended.
   */
  readonly followup: (
    run: Run,
    input: { readonly queries: ReadonlyArray<string>; readonly text: string | null; readonly wait: boolean }
  ) => Effect.Effect<Started, UnknownNames | ParentRunNotReady | InsufficientCredits | BudgetExceeded | RunCapReached>
}>()("wa/search/Search") {
  static readonly layer = Layer.effect(
    Search,
    Effect.gen(function*() {
      const store = yield* RunStore
      const search = yield* WebSearch
      const bus = yield* RunEventBus
      const config = yield* AppConfig
      const notifier = yield* RunNotifier
      const clientFor = yield* WebSearchEntity.client
      const createStandalone = yield* makeStandaloneCreate
      const cancel = cancelRun(store, notifier, (run) => clientFor(run.id).Interrupt({ runId: run.id }, { discard: true }))

      /** The run once it has ended, or as it is when `seconds` have passed. */
      const awaitEnd = (runId: RunId, seconds: number) =>
        Effect.scoped(Effect.gen(function*() {
          const wakeups = yield* bus.wakeups(runId)
          const deadline = Date.now() + seconds * 1000
          while (true) {
            const run = (yield* store.getRun(runId))!
            if (isTerminal(run.status) || Date.now() >= deadline) return run
            yield* Queue.take(wakeups).pipe(Effect.timeoutOption(`${Math.max(1, Math.min(1000, deadline - Date.now()))} millis`))
          }
        }))

      const start = Effect.fn("Search.start")(function*(
        projectId: ProjectId,
        request: WebSearchRunRequest,
        derived: { readonly parentRunId: RunId; readonly instructions: string | null } | undefined = undefined
      ) {
        // Unknown engines are refused before anything is created.
        const engines: ReadonlyArray<string> = search.engines
        const unknown = (request.engines ?? []).filter((name) => !engines.includes(name))
        if (unknown.length > 0) return yield* new UnknownNames({ field: "engines", what: "engine", unknown, allowed: [...search.engines] })
        const created = yield* createStandalone({
          projectId,
          entityType: "WebSearch",
          insert: store.createStandaloneRun(projectId, request, derived ?? {}),
          dispatch: (runId) => clientFor(runId).Execute({ runId }, { discard: true }).pipe(Effect.orDie)
        })
        const run = request.wait ? yield* awaitEnd(created.id, config.webSearchWaitSeconds) : created
        // 200 only for a search that waited and ended within the wait. Without wait the answer is
        // 202 whatever the run's state: a keyed retry of a create whose answer was lost may find the
        // run ended already, and must answer as the first attempt did.
        return { run, ended: request.wait && isTerminal(run.status) }
      })

      return Search.of({
        ...withMethodSpans<Pick<Search["Service"], "create" | "cancel">>("Search", { create: (projectId, request) => start(projectId, request), cancel }),
        find: Effect.fn("Search.find")(function*(projectId: ProjectId, runId: RunId) {
          return yield* store.findRun(projectId, runId, "web_search")
        }),
        refine: Effect.fn("Search.refine")(function*(run: Run, input: { readonly text: string; readonly wait: boolean }) {
          const original = requestOf(run)
          const text = input.text.replace(/\s+/g, " ").trim()
          return yield* start(run.project_id, {
            ...original,
            queries: [...new Set(original.queries.map((query) => refineQuery(query, text)))],
            objective: text,
            wait: input.wait
          }, { parentRunId: run.id, instructions: input.text })
        }),
        followup: Effect.fn("Search.followup")(function*(
          run: Run,
          input: { readonly queries: ReadonlyArray<string>; readonly text: string | null; readonly wait: boolean }
        ) {
          if (!isTerminal(run.status)) return yield* new ParentRunNotReady({ runId: run.id, status: run.status, operation: "followup", needs: "ended" })
          const original = requestOf(run)
          const returned = Option.match(decodeResult(run.output), { onNone: () => [], onSome: (result) => result.results.map((item) => item.canonical_url) })
          const { objective, ...settings } = original
          const text = input.text?.trim() || null
          return yield* start(run.project_id, {
            ...settings,
            queries: input.queries,
            ...(text !== null ? { objective: text } : objective !== undefined ? { objective } : {}),
            wait: input.wait,
            exclude_canonical_urls: [...new Set([...(original.exclude_canonical_urls ?? []), ...returned])]
          }, { parentRunId: run.id, instructions: input.text })
        })
      })
    })
  ).pipe(Layer.provide(Budget.layer))
}
