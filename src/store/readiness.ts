/** Readiness (src/observability/probes.ts) of a node on this database: it answers and is migrated. */
import { Effect, Layer } from "effect"
import { NotReady, Readiness } from "../observability/probes.ts"
import { appliedMigrationsReader, migrationCount } from "./migrations.ts"

export const ReadinessLive = Layer.effect(
  Readiness,
  Effect.gen(function*() {
    const appliedMigrations = yield* appliedMigrationsReader
    const check = Effect.fn("Readiness.check")(function*() {
      const applied = yield* appliedMigrations.pipe(
        Effect.timeout("2 seconds"),
        Effect.mapError(() => new NotReady({ detail: "the database does not answer" }))
      )
      if (applied < migrationCount) return yield* new NotReady({ detail: "migrations are not applied yet" })
    })
    return Readiness.of({ check: check() })
  })
)
