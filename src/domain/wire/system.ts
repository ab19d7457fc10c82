/** Liveness and readiness on the wire (src/http/api/system.ts). */
import { Schema } from "effect"

/** GET /healthz: the process is up. */
export const HealthStatus = Schema.Struct({ status: Schema.Literal("ok") })
/** GET /readyz: the service can take requests (its database answers and its migrations are applied). */
export const ReadyStatus = Schema.Struct({ status: Schema.Literal("ready") })
