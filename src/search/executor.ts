/**
 * The WebSearch executor, plugged into the run kernel (src/runs/kernel.ts) on the WebSearch entity,
 * one per run: it runs the run's search across its engines and ends the run with the result.
 * `Execute` is persisted, so a search under way when its runner dies (or the all-in-one process
 * is killed) is delivered again and run again, from the start, on the runner that holds the
 * shard next (a `run.resumed` event says so). A search keeps no
 * checkpoint: its engine calls are cheap to repeat and its result is written once, with the run's
 * terminal state.
 */
import { Effect, Option, Semaphore } from "effect"
import { AgentModel } from "../agent/model.ts"
import { toMicros } from "../domain/money.ts"
import { meteredModel, newMeter } from "../billing/metering.ts"
import { AppConfig } from "../config/config.ts"
import type { Run, WebSearchRunRequest } from "../domain/run.ts"
import type { WebSearchResult } from "../domain/web-search.ts"
import { WebSearch } from "../engines/web-search.ts"
import { RunStore } from "../store/runs.ts"
import { fairly } from "../fairness/fair-queue.ts"
import { type Begin, RunFailure, runEntityHandlers } from "../runs/kernel.ts"
import { WebSearchEntity } from "../entities/web-search.ts"
import type { NewRunEvent } from "../domain/events.ts"

/**
 * A follow-up's result: the pages an earlier run of the chain returned are left out, the rest
 * renumbered and cut to the run's own limit (it searched deeper to make up for them).
 */
const leaveOut = (result: WebSearchResult, excluded: ReadonlySet<string>, limit: number): WebSearchResult => {
  const kept = result.results.filter((item) => !excluded.has(item.canonical_url)).slice(0, limit)
  const removed = result.results.filter((item) => excluded.has(item.canonical_url)).length
  return {
    ...result,
    results: kept.map((item, index) => ({ ...item, final_rank: index + 1 })),
    total_unique_results: Math.max(kept.length, result.total_unique_results - removed),
    is_summarized: kept.some((item) => item.summary !== null),
    excluded_count: removed
  }
}

/** The distinct, non-blank queries of a request: what a search runs, and what it is charged per. */
const queryCount = (request: WebSearchRunRequest) => new Set(request.queries.map((query) => query.trim()).filter((query) => query !== "")).size

const webSearchExecutor = Effect.gen(function*() {
  const store = yield* RunStore
  const search = yield* WebSearch
  const model = yield* AgentModel
  const prices = (yield* AppConfig).prices

  const conduct = Effect.fn("WebSearchExecutor.conduct")(function*(run: Run, request: WebSearchRunRequest, begin: Begin) {
    // A search keeps no checkpoint: a resumed one starts again from the beginning.
    const [executor] = yield* begin(Effect.void, () => ({ from_step: 0 }))
    // A follow-up searches deeper (twice the results per query) to make up for the pages it leaves out.
    const excluded = new Set(request.exclude_canonical_urls ?? [])
    const limit = request.max_results_per_query * queryCount(request)
    const searched = excluded.size === 0 ? request : { ...request, max_results_per_query: Math.min(50, request.max_results_per_query * 2) }
    // Progress events are written in batches: an event waits while the run's previous batch is
    // written, then goes with every event that arrived meanwhile, in one transaction that takes a
    // share of the run-write lane. A burst of runs then costs the SQL pool a few transactions per
    // run instead of two per engine call, and the requests keep their connections.
    const pending: Array<NewRunEvent> = []
    const writer = Semaphore.makeUnsafe(1)
    const flush = Semaphore.withPermit(writer, Effect.suspend(() => {
      const batch = pending.splice(0)
      return batch.length === 0 ? Effect.void : store.appendEvents(run.id, batch, executor).pipe(fairly("run_write"))
    }))
    const searching = search.run(searched, {
      onProgress: (event) => Effect.suspend(() => {
        pending.push({ type: "run.search.progress", data: { ...event } })
        return flush
      })
    })
    // The search looks for a model in its context; with none it summarizes extractively. Its
    // model calls (re-rank, summaries) are metered to be charged with the run.
    const meter = newMeter()
    const outcome = yield* Effect.result(Option.isSome(model) ? Effect.provide(searching, meteredModel(model.value.layer, meter)) : searching)
    if (outcome._tag === "Failure") return yield* new RunFailure({ code: "validation_error", detail: outcome.failure.message })
    // A follow-up (it has an exclusion list, perhaps empty) always says how many pages it left out.
    const output = request.exclude_canonical_urls === undefined ? outcome.success : leaveOut(outcome.success, excluded, limit)
    // The search is done: its fee (web_search_per_query per distinct query), once per run. A
    // search cannot run out mid-way (it is one unit of work); creates are refused up front.
    yield* store.chargeRun(run.id, [{
      kind: "charge_search",
      column: "service",
      micros: toMicros(prices.web_search_per_query * queryCount(request)),
      idempotencyKey: `search:${run.id}`
    }, {
      kind: "charge_llm",
      column: "llm",
      micros: Option.isSome(model) ? toMicros(model.value.costUsd(meter.inputTokens, meter.outputTokens)) : 0,
      idempotencyKey: `llm:${run.id}`
    }], executor)
    yield* store.transition(run.id, "done", { output, terminalReason: "done", executor }).pipe(Effect.ignore)
  })

  return yield* runEntityHandlers({
    kind: "web_search",
    requestOf: (run) => run.request._tag === "WebSearch" ? run.request : undefined,
    conduct,
    internalErrorDetail: "the search failed"
  })
})

export const WebSearchEntityLive = WebSearchEntity.toLayer(
  Effect.map(webSearchExecutor, (handlers) => WebSearchEntity.of(handlers)),
  { maxIdleTime: "1 minute" }
)
