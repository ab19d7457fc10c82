/** Liveness and readiness, outside the versioned API and without auth. */
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { InternalError } from "../../domain/api-errors.ts"
import { HealthStatus, ReadyStatus } from "../../domain/wire/system.ts"

export class SystemApi extends HttpApiGroup.make("system", { topLevel: true }).add(
  HttpApiEndpoint.get("healthz", "/healthz", { success: HealthStatus }),
  HttpApiEndpoint.get("readyz", "/readyz", {
    success: ReadyStatus,
    error: InternalError.annotate({ httpApiStatus: 503 })
  })
) {}
