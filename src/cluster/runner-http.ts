/**
 * The HTTP surface of `wa runner` (a runner without the API): /healthz, /readyz and /metrics on
 * WA_HOST:WA_PORT, for probes and scrapers. Ready means: the database answers and is migrated,
 * and the runner is neither draining nor shut down (it then takes and keeps shards).
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Effect, Layer } from "effect"
import { Sharding } from "effect/cluster"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { createServer } from "node:http"
import { BrowserPool } from "../browser/pool.ts"
import { AppConfig } from "../config/config.ts"
import { NodeMetrics, Readiness } from "../observability/probes.ts"
import { ReadinessLive } from "../store/readiness.ts"
import { RunnerLifecycle } from "./lifecycle.ts"
import { prometheusContentType } from "./metrics.ts"
import { NodeMetricsLive } from "./node-metrics.ts"

const notReady = (detail: string) =>
  HttpServerResponse.jsonUnsafe({ code: "not_ready", detail, extra: {} }, { status: 503 })

const Routes = Layer.mergeAll(
  HttpRouter.add("GET", "/healthz", HttpServerResponse.jsonUnsafe({ status: "ok" })),
  HttpRouter.add("GET", "/readyz", Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    const lifecycle = yield* RunnerLifecycle
    if (yield* lifecycle.draining) return notReady("the runner is draining")
    if (yield* sharding.isShutdown) return notReady("the runner is shutting down")
    // The same check as an API node's /readyz: the database answers and is migrated.
    return yield* (yield* Readiness).check.pipe(
      Effect.as(HttpServerResponse.jsonUnsafe({ status: "ready" })),
      Effect.catchTag("NotReady", (e) => Effect.succeed(notReady(e.detail)))
    )
  })),
  HttpRouter.add("GET", "/metrics", NodeMetrics.use((metrics) => metrics.render).pipe(
    Effect.map((body) => HttpServerResponse.text(body, { contentType: prometheusContentType }))
  ))
)

/** The runner's probe and metrics server on WA_HOST:WA_PORT. */
export const RunnerHttpLive: Layer.Layer<
  import("effect/http").HttpServer.HttpServer,
  never,
  AppConfig | SqlClient.SqlClient | Sharding.Sharding | RunnerLifecycle | BrowserPool
> = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  return HttpRouter.serve(Routes, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provide([ReadinessLive, NodeMetricsLive]),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: config.port, host: config.host, gracefulShutdownTimeout: "2 seconds" })),
    Layer.orDie
  )
}))
