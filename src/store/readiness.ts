/** Readiness (src/observability/probes.ts) of a node on this database: it answers and is migrated. */
import { Effect, Layer } from "effect"
import { NotReady, Readiness } from "../observability/probes.ts"
import { appliedMigrationsReader, migrationCount } from "./migrations.ts"

export const ReadinessLive = Layer.effect(
  Readiness,
  Effect.gen(function*() {
    const appliedMigrations = yield* appliedMigrationsReader
    return Readiness.of({
      check: appliedMigrations.pipe(
        Effect.timeout("2 seconds"),
        Effect.mapError(() => new NotReady({ detail: "the database does not answer" })),
        Effect.flatMap((applied) => applied >= migrationCount ? Effect.void : Effect.fail(new NotReady({ detail: "migrations are not applied yet" })))
      )
    })
  })
)
