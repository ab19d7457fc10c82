/** /metrics: this node's metrics in the Prometheus text format, outside the versioned API and without auth. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { prometheusContentType } from "../../domain/limits.ts"

export const PrometheusText = Schema.String.pipe(HttpApiSchema.asText({ contentType: prometheusContentType }))

export class MetricsApi extends HttpApiGroup.make("metrics", { topLevel: true }).add(
  HttpApiEndpoint.get("metrics", "/metrics", { success: PrometheusText })
) {}
