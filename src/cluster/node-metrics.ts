/** NodeMetrics (src/observability/probes.ts) of this process: the runner figures of metrics.ts. */
import { Effect, Layer } from "effect"
import { Sharding } from "effect/cluster"
import { BrowserPool } from "../browser/pool.ts"
import { NodeMetrics } from "../observability/probes.ts"
import { renderMetrics } from "./metrics.ts"

export const NodeMetricsLive = Layer.effect(
  NodeMetrics,
  Effect.gen(function*() {
    const context = yield* Effect.context<BrowserPool | Sharding.Sharding>()
    const render = Effect.fn("NodeMetrics.render")(function*() {
      return yield* renderMetrics.pipe(Effect.provide(context))
    })
    return NodeMetrics.of({ render: render() })
  })
)
