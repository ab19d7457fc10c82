/** /healthz (the process answers) and /readyz (the database answers and is migrated: Readiness). */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { InternalError } from "../errors.ts"
import { Readiness } from "../../observability/probes.ts"
import { WebAgentApi } from "../api/api.ts"

export const SystemHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "system",
  Effect.fn(function*(handlers) {
    const readiness = yield* Readiness
    return handlers
      .handle("healthz", () => Effect.succeed({ status: "ok" }))
      .handle("readyz", () =>
        readiness.check.pipe(
          Effect.mapError(({ detail }) => new InternalError({ code: "not_ready", detail, extra: {} })),
          Effect.as({ status: "ready" })
        ))
  })
)
