/** Liveness and readiness on the wire (src/http/api/system.ts). */
import { Schema } from "effect"

export const HealthStatus = Schema.Struct({ status: Schema.String })
