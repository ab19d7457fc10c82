/**
 * The database of the service: the external PostgreSQL of `DATABASE_URL`, or else the embedded
 * one in the data dir. Migrations run when the layer is built.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { type EmbeddedPostgres, startEmbeddedPostgres } from "./embedded-postgres.ts"
import { migrations } from "./migrations.ts"
import { connectCoalesced, databaseEndpoint } from "./coalesced-socket.ts"
import { retryLockConflicts } from "./transactions.ts"

/** Where the database came from, for logs, readiness and the cluster. */
export class DatabaseInfo extends Context.Service<DatabaseInfo, {
  readonly embedded: boolean
  readonly url: Redacted.Redacted
  /** The embedded server's Unix socket, used instead of TCP when it has one. */
  readonly socketPath: string | undefined
}>()("wa/store/DatabaseInfo") {}

export type DatabaseMode = "own" | "attach"

const embedded = (dataDir: string, mode: DatabaseMode) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () => startEmbeddedPostgres(dataDir, { mode }),
      catch: (cause) => cause instanceof Error ? cause : new Error(String(cause))
    }).pipe(Effect.orDie),
    (db: EmbeddedPostgres) => db.owned ? Effect.promise(() => db.stop()) : Effect.void
  )

/** DatabaseInfo for the configured database, starting the embedded one if needed. */
export const databaseInfoLayer = (mode: DatabaseMode) =>
  Layer.effect(
    DatabaseInfo,
    Effect.gen(function*() {
      const config = yield* AppConfig
      if (Option.isSome(config.databaseUrl)) {
        return DatabaseInfo.of({ embedded: false, url: config.databaseUrl.value, socketPath: undefined })
      }
      const db = yield* embedded(config.dataDirAbsolute, mode)
      yield* Effect.logInfo("embedded PostgreSQL ready").pipe(Effect.annotateLogs({ port: db.port, adopted: db.adopted, socket: db.socketPath !== undefined }))
      return DatabaseInfo.of({ embedded: true, url: Redacted.make(db.url), socketPath: db.socketPath })
    })
  )

/** PgClient + SqlClient over DatabaseInfo. */
export const sqlClientLayer = Layer.unwrap(Effect.gen(function*() {
  const info = yield* DatabaseInfo
  const endpoint = databaseEndpoint(Redacted.value(info.url), info.socketPath)
  return PgClient.layer({
    url: info.url,
    ...(info.socketPath !== undefined ? { path: info.socketPath } : {}),
    // Writes held to the end of each event-loop turn: one write for the statements of many requests.
    ...(endpoint !== undefined ? { stream: () => connectCoalesced(endpoint) } : {}),
    maxConnections: 20,
    // Statements of concurrent requests share a connection and go out pipelined: fewer backends
    // woken per request, and a burst of reads costs one socket write instead of one each.
    // Transactions, LISTEN and the cluster's shard locks still reserve a connection of their own.
    multiplex: true,
    multiplexConcurrency: 16,
    applicationName: "web-agent-service"
  })
})).pipe(
  // Every transaction that loses a deadlock or a serialization conflict runs again (transactions.ts).
  Layer.tap((context) => Effect.sync(() => retryLockConflicts(Context.get(context, SqlClient.SqlClient)))),
  Layer.orDie
)

export const migratorLayer = PgMigrator.layer({ loader: migrations, table: "wa_migrations" }).pipe(
  Layer.provide(NodeServices.layer),
  Layer.orDie
)

/** The SQL client with migrations applied, for `serve` (own) and the CLI (attach). */
export const databaseLayer = (mode: DatabaseMode) =>
  migratorLayer.pipe(
    Layer.provideMerge(sqlClientLayer),
    Layer.provideMerge(databaseInfoLayer(mode))
  )
