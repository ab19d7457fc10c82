/** /metrics of an API node (a `wa serve` process is also a runner, so it reports its runner figures). */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { NodeMetrics } from "../../observability/probes.ts"
import { WebAgentApi } from "../api/api.ts"

export const MetricsHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "metrics",
  Effect.fn(function*(handlers) {
    const metrics = yield* NodeMetrics
    return handlers.handle("metrics", () => metrics.render)
  })
)
