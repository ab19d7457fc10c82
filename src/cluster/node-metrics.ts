/** NodeMetrics (src/observability/probes.ts) of this process: the runner figures of metrics.ts. */
import { Effect, Layer } from "effect"
import { Sharding } from "effect/cluster"
import { BrowserPool } from "../browser/pool.ts"
import { NodeMetrics } from "../observability/probes.ts"
import { renderMetrics } from "./metrics.ts"

export const NodeMetricsLive = Layer.effect(
  NodeMetrics,
  Effect.map(Effect.context<BrowserPool | Sharding.Sharding>(), (context) => NodeMetrics.of({ render: renderMetrics.pipe(Effect.provide(context)) }))
)
