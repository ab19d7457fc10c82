/** /healthz (the process answers) and /readyz (the database answers and is migrated). */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { InternalError } from "../errors.ts"
import { appliedMigrationsReader, migrationCount } from "../../store/migrations.ts"
import { WebAgentApi } from "../api/api.ts"

export const SystemHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "system",
  Effect.fn(function*(handlers) {
    const appliedMigrations = yield* appliedMigrationsReader
    const notReady = (detail: string) => new InternalError({ code: "not_ready", detail, extra: {} })
    return handlers
      .handle("healthz", () => Effect.succeed({ status: "ok" }))
      .handle("readyz", () =>
        appliedMigrations.pipe(
          Effect.timeout("2 seconds"),
          Effect.mapError(() => notReady("the database does not answer")),
          Effect.flatMap((applied) =>
            applied >= migrationCount
              ? Effect.succeed({ status: "ready" })
              : Effect.fail(notReady("migrations are not applied yet"))
          )
        ))
  })
)
