/** Liveness and readiness, outside the versioned API and without auth. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { InternalError } from "../../domain/api-errors.ts"

export const HealthStatus = Schema.Struct({ status: Schema.String })

export class SystemApi extends HttpApiGroup.make("system", { topLevel: true }).add(
  HttpApiEndpoint.get("healthz", "/healthz", { success: HealthStatus }),
  HttpApiEndpoint.get("readyz", "/readyz", {
    success: HealthStatus,
    error: InternalError.annotate({ httpApiStatus: 503 })
  })
) {}
