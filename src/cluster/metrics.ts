/**
 * Per-runner metrics in the Prometheus text format, served at /metrics by both `wa serve` and
 * `wa runner`. The figures are Effect metrics of this process: Effect Cluster's own gauges
 * (`effect_cluster_entities{type}` resident entities, `effect_cluster_shards` shards held,
 * `effect_cluster_runners`), the browser pool's (`wa_browser_*`) and the runs executing here
 * (`wa_runs_in_flight`). Gauges that are only written on change are refreshed before each scrape.
 */
import { Effect, Metric } from "effect"
import { Sharding } from "effect/cluster"
import { PrometheusMetrics } from "effect/observability"
import { BrowserPool } from "../browser/pool.ts"

export const runnerMetrics = {
  runsInFlight: Metric.gauge("wa_runs_in_flight", { description: "DoAnything runs executing on this runner" }),
  contextsLeased: Metric.gauge("wa_browser_contexts_in_use", { description: "Browser contexts leased from this runner's pool and not released" }),
  contextsWarm: Metric.gauge("wa_browser_contexts_warm", { description: "Browser contexts opened ahead on this runner, ready for the next sessions (WA_BROWSER_WARM_CONTEXTS)" }),
  residentEntities: Metric.gauge("wa_cluster_entities_resident", { description: "Cluster entities resident on this runner (all types)" }),
  up: Metric.gauge("wa_runner_up", { description: "1 while this runner serves" })
}

/** Counts `effect` as a run in flight while it runs (the drain on SIGTERM waits for zero). A
 * Session counts a run from before its draining check until the run is finished. */
export const trackRunInFlight = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.acquireUseRelease(
    Metric.modify(runnerMetrics.runsInFlight, 1),
    () => effect,
    () => Metric.modify(runnerMetrics.runsInFlight, -1)
  )

export const runsInFlight: Effect.Effect<number> = Metric.value(runnerMetrics.runsInFlight).pipe(
  Effect.map((state) => Number(state.value))
)

/** The Prometheus exposition of this process's metrics, gauges refreshed first. */
export const renderMetrics: Effect.Effect<string, never, BrowserPool | Sharding.Sharding> = Effect.gen(function*() {
  const pool = yield* BrowserPool
  const stats = yield* pool.stats
  yield* Metric.update(runnerMetrics.contextsLeased, stats.contextsOpen)
  yield* Metric.update(runnerMetrics.contextsWarm, stats.contextsWarm)
  yield* Metric.update(runnerMetrics.up, 1)
  yield* Metric.modify(runnerMetrics.runsInFlight, 0) // registers the gauge before the first run
  const sharding = yield* Sharding.Sharding
  yield* Metric.update(runnerMetrics.residentEntities, yield* sharding.activeEntityCount)
  return yield* PrometheusMetrics.format()
})

export { prometheusContentType } from "../domain/limits.ts"
