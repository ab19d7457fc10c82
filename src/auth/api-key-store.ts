/**
 * API keys in PostgreSQL. Only a key's hash (and its display prefix) is stored; rows are decoded
 * through Schema. The rules (scopes, the grace window's meaning, the plan's cap, the cache of
 * verified keys) are the service's (src/auth/api-keys.ts).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { apiKeyScopes } from "../domain/api-key-scope.ts"
import { makeId } from "../domain/ids.ts"
import { createOnce } from "../store/keyed-create.ts"
import { displayPrefix, hashApiKey } from "./api-key-format.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { ApiKeyId, type Principal, ProjectId } from "../domain/run.ts"
import { UserId } from "../domain/id-schemas.ts"
import { decodeRows } from "../domain/rows.ts"

/** The first key of the advisory lock that serialises a project's key creates (the second is the project's hash). */
const PROJECT_KEYS_LOCK = 0x7761_6b31 // "wak1"

export const ApiKeyRow = Schema.Struct({
  id: ApiKeyId,
  project_id: ProjectId,
  user_id: Schema.NullOr(UserId),
  prefix: Schema.String,
  name: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  disabled_at: Schema.NullOr(Schema.Date),
  grace_until: Schema.NullOr(Schema.Date),
  last_used_at: Schema.NullOr(Schema.Date),
  scope: Schema.Literals(apiKeyScopes),
  created_by_key_id: Schema.NullOr(Schema.String)
})
export type ApiKeyRow = typeof ApiKeyRow.Type

const keyRows = decodeRows(ApiKeyRow)
const PageRow = Schema.Struct({ ...ApiKeyRow.fields, total: Schema.Number })
const CountRow = Schema.Struct({ n: Schema.Number })

export interface NewApiKey {
  readonly projectId: ProjectId
  readonly name: string | null
  /** The key as handed out: stored as its hash and display prefix. */
  readonly secret: string
  readonly scope: typeof ApiKeyRow.Type["scope"]
  readonly createdByKeyId: Principal | null
  readonly userId: UserId | null
}

const columnList = "id, project_id, user_id, prefix, name, created_at, disabled_at, grace_until, last_used_at, scope, created_by_key_id"

export class ApiKeyStore extends Context.Service<ApiKeyStore, {
  readonly insert: (key: NewApiKey) => Effect.Effect<ApiKeyRow>
  /** Gives a live key of the project a new secret (prefix and hash); undefined when it is gone or revoked. */
  readonly rekey: (projectId: ProjectId, keyId: ApiKeyId, secret: string) => Effect.Effect<ApiKeyRow | undefined>
  /** `create` once per Idempotency-Key, even across a crash (src/store/keyed-create.ts). */
  readonly createOnce: <A, E, R>(create: Effect.Effect<A, E, R>, idOf: (created: A) => string, existing: (id: string) => Effect.Effect<A | undefined, E, R>) => Effect.Effect<A, E, R>
  /** Runs `effect` in a transaction holding the project's key-create lock: its creates count and insert one at a time, on every node. */
  readonly withProjectLock: <A, E, R>(projectId: ProjectId, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The project's keys that are not revoked. */
  readonly countLive: (projectId: ProjectId) => Effect.Effect<number>
  readonly count: (projectId: ProjectId) => Effect.Effect<number>
  /** A page newest first, and the project's total. */
  readonly page: (projectId: ProjectId, limit: number, beforeId: string | undefined) => Effect.Effect<{ readonly rows: ReadonlyArray<ApiKeyRow>; readonly total: number }>
  readonly find: (projectId: ProjectId, keyId: ApiKeyId) => Effect.Effect<ApiKeyRow | undefined>
  /** Revokes with a grace window; revoking twice keeps the first window. */
  readonly revoke: (projectId: ProjectId, keyId: ApiKeyId, graceMs: number) => Effect.Effect<ApiKeyRow | undefined>
  readonly findBySecret: (token: string) => Effect.Effect<ApiKeyRow | undefined>
  readonly markUsed: (keyId: ApiKeyId) => Effect.Effect<void>
}>()("wa/auth/ApiKeyStore") {
  static readonly layer = Layer.effect(
    ApiKeyStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const columns = sql.literal(columnList)
      const count = (projectId: ProjectId) =>
        decodeRows(Schema.Struct({ total: Schema.Number }))(sql`SELECT count(*)::int AS total FROM api_keys WHERE project_id = ${projectId}`).pipe(
          Effect.map((rows) => rows[0]?.total ?? 0)
        )
      // A fixed statement: the hot read skips compiling a template on every request.
      const findStatement = `SELECT ${columnList} FROM api_keys WHERE project_id = $1 AND id = $2`
      return ApiKeyStore.of(withMethodSpans("ApiKeyStore", {
        insert: (key) =>
          keyRows(sql`
            INSERT INTO api_keys (id, project_id, prefix, name, secret_hash, scope, created_by_key_id, user_id)
            VALUES (${makeId("key")}, ${key.projectId}, ${displayPrefix(key.secret)}, ${key.name}, ${hashApiKey(key.secret)},
              ${key.scope}, ${key.createdByKeyId}, ${key.userId})
            RETURNING ${columns}`).pipe(Effect.map((rows) => rows[0]!)),
        rekey: (projectId, keyId, secret) =>
          keyRows(sql`
            UPDATE api_keys SET prefix = ${displayPrefix(secret)}, secret_hash = ${hashApiKey(secret)}
            WHERE id = ${keyId} AND project_id = ${projectId} AND disabled_at IS NULL
            RETURNING ${columns}`).pipe(Effect.map((rows) => rows[0])),
        createOnce: (create, idOf, existing) => createOnce(sql, create, idOf, existing),
        withProjectLock: (projectId, effect) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* sql`SELECT pg_advisory_xact_lock(${PROJECT_KEYS_LOCK}, hashtext(${projectId}))`
            return yield* effect
          })).pipe(Effect.catchTag("SqlError", Effect.die)),
        countLive: (projectId) =>
          decodeRows(CountRow)(sql`SELECT count(*)::int AS n FROM api_keys WHERE project_id = ${projectId} AND disabled_at IS NULL`).pipe(
            Effect.map((rows) => rows[0]!.n)
          ),
        count,
        // The page and the project's total in one round trip (the uncorrelated subquery runs once).
        page: (projectId, limit, beforeId) =>
          Effect.gen(function*() {
            const rows = yield* decodeRows(PageRow)(sql`
              SELECT ${columns}, (SELECT count(*)::int FROM api_keys WHERE project_id = ${projectId}) AS total
              FROM api_keys
              WHERE project_id = ${projectId} ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
              ORDER BY id DESC LIMIT ${limit}`)
            const total = rows[0]?.total ?? (yield* count(projectId))
            return { rows: rows.map(({ total: _, ...row }) => row), total }
          }),
        find: (projectId, keyId) => keyRows(sql.unsafe(findStatement, [projectId, keyId])).pipe(Effect.map((rows) => rows[0])),
        revoke: (projectId, keyId, graceMs) =>
          keyRows(sql`
            UPDATE api_keys
            SET disabled_at = coalesce(disabled_at, now()),
                grace_until = coalesce(grace_until, now() + ${`${graceMs} milliseconds`}::interval)
            WHERE project_id = ${projectId} AND id = ${keyId}
            RETURNING ${columns}`).pipe(Effect.map((rows) => rows[0])),
        findBySecret: (token) =>
          keyRows(sql`SELECT ${columns} FROM api_keys WHERE secret_hash = ${hashApiKey(token)}`).pipe(Effect.map((rows) => rows[0])),
        markUsed: (keyId) => sql`UPDATE api_keys SET last_used_at = now() WHERE id = ${keyId}`.pipe(Effect.asVoid, Effect.orDie)
      }))
    })
  )
}
