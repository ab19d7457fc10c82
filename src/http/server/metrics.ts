/** /metrics of an API node (a `wa serve` process is also a runner, so it reports its runner figures). */
import { Effect } from "effect"
import { Sharding } from "effect/cluster"
import { HttpApiBuilder } from "effect/http-api"
import { BrowserPool } from "../../browser/pool.ts"
import { renderMetrics } from "../../cluster/metrics.ts"
import { WebAgentApi } from "../api/api.ts"

export const MetricsHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "metrics",
  Effect.fn(function*(handlers) {
    const context = yield* Effect.context<BrowserPool | Sharding.Sharding>()
    return handlers.handle("metrics", () => renderMetrics.pipe(Effect.provide(context)))
  })
)
