/**
 * Readiness (src/store/readiness.ts), what /readyz of an API node and of `wa runner` asks: a
 * database whose migrations cannot be read answers "not ready" (503 on the wire), never a defect
 * (a 500); a migrated one is ready.
 */
import { PgClient } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted } from "effect"
import { Readiness } from "../../src/observability/probes.ts"
import { ReadinessLive } from "../../src/store/readiness.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { AppConfig } from "../../src/config/config.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"

/** A database of this file with nothing in it: no wa_migrations table to read. */
const EmptyDatabase = Layer.unwrap(Effect.map(freshDatabase("readiness_empty"), (url) => PgClient.layer({ url: Redacted.make(url) })))

layer(ReadinessLive.pipe(Layer.provide(EmptyDatabase)), { excludeTestServices: true, timeout: 60_000 })("an unmigrated database", (it) => {
  it.effect("is not ready, with the reason, and the check does not die", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit((yield* Readiness).check)
      expect(Exit.isFailure(exit) && exit.cause.reasons.every((reason) => reason._tag === "Fail")).toBe(true)
      const error = yield* Effect.flip((yield* Readiness).check)
      expect(error._tag).toBe("NotReady")
      expect(error.detail).toBe("the database does not answer")
    }))
})

const Migrated = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabase("readiness_migrated")
  const dataDir = yield* freshDataDir("wa-readiness")
  return databaseLayer("own").pipe(Layer.provide(AppConfig.layerFrom({ DATABASE_URL: url, WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Warn" })))
}))

layer(ReadinessLive.pipe(Layer.provide(Migrated)), { excludeTestServices: true, timeout: 120_000 })("a migrated database", (it) => {
  it.effect("is ready", () => Effect.gen(function*() {
    yield* (yield* Readiness).check
  }))
})
