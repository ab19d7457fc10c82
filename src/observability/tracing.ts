/**
 * Where the spans of requests, runs and store calls go. With WA_OTLP_TRACES_URL set they are
 * exported (OTLP/HTTP, JSON) to that collector, batched, and flushed when the process stops.
 * Unset, tracing is off: a span that goes nowhere still costs its object, its context updates and
 * its end (about a twentieth of an authenticated read's CPU), so none is recorded.
 */
import { Effect, Layer, Option, References } from "effect"
import { AppConfig } from "../config/config.ts"

export const tracingLayer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  if (Option.isNone(config.otlpTracesUrl)) return Layer.succeed(References.TracerEnabled, false)
  const url = config.otlpTracesUrl.value
  // Loaded only when tracing is on: the exporter is not part of every start.
  const [{ FetchHttpClient }, { OtlpSerialization, OtlpTracer }] = yield* Effect.promise(() =>
    Promise.all([import("effect/http"), import("effect/observability")])
  )
  return OtlpTracer.layer({ url, resource: { serviceName: "web-agent-service" }, exportInterval: "2 seconds" }).pipe(
    Layer.provide([OtlpSerialization.layerJson, FetchHttpClient.layer])
  )
}))
