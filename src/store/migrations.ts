/**
 * Schema migrations: one file each in `migrations/`, named `<number>_<name>.ts` with the migration
 * as its default export, loaded and ordered by number by effect's `MigratorFileSystem`. They are
 * applied in order, one transaction each, at start and by `wa migrate`. Add a file with the next
 * number for every change; never edit one that has shipped.
 */
import { readdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as MigratorFileSystem from "effect/sql/MigratorFileSystem"
import { decodeRowsKeepingFailure } from "../domain/rows.ts"

const directory = fileURLToPath(new URL("./migrations", import.meta.url))

/** The migrator's own file pattern (`<id>_<name>.ts`). */
const migrationFile = /^(\d+)_([^.]+)\.(js|ts|mjs|mts)$/

export const migrations = MigratorFileSystem.fromFileSystem(directory)

/** How many migrations this build has; /readyz waits until all are applied. */
export const migrationCount = readdirSync(directory).filter((file) => migrationFile.test(file)).length

/** The count of applied migrations, as text. */
const AppliedRow = Schema.Struct({ applied: Schema.String })

/**
 * The reader of how many migrations the database has applied (/readyz of serve and of a
 * runner), built once with the database's client so each probe needs nothing more.
 */
export const appliedMigrationsReader = Effect.map(SqlClient.SqlClient, (sql) =>
  // The statement's failure stays one: Readiness answers it as "the database does not answer".
  decodeRowsKeepingFailure(AppliedRow)(sql`SELECT count(*)::text AS applied FROM wa_migrations`).pipe(
    Effect.map(([row]) => Number(row?.applied))
  ))
