/**
 * API keys: creation (secret shown once), listing, revocation with a one-hour grace window, and
 * authentication of a bearer token.
 *
 * Scopes: an `admin` key may manage the project's keys and read its webhook secret; a `run` key may
 * use the products only. A revoked key in its grace window keeps what a `run` key may do (so work
 * in flight finishes) but manages nothing, whatever its scope. Minted keys are independent of the
 * key that created them (`created_by_key_id` is recorded for audit only), so rotation works: create
 * the new key with the old one, deploy it, revoke the old one.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { makeId } from "../domain/ids.ts"
import { PlanLimitReached } from "../domain/errors.ts"

/** The first key of the advisory lock that serialises a project's key creates (the second is the project's hash). */
const PROJECT_KEYS_LOCK = 0x7761_6b31 // "wak1"
import { createOnce } from "../store/keyed-create.ts"
import { type ApiKeyScope, apiKeyScopes } from "../domain/api-key-scope.ts"
import { displayPrefix, generateApiKey, hashApiKey, isWellFormedApiKey } from "./api-key-format.ts"

/** last_used_at is refreshed at most this often, so reads do not each cost a write. */
const LAST_USED_RESOLUTION_MS = 60 * 1000
/**
 * Verified keys are remembered at most this long, and never longer than half the revocation grace
 * window: revocation only bites after that window, so a cached row cannot let a key through that
 * the database would refuse.
 */
const AUTH_CACHE_MAX_MS = 30 * 1000
const AUTH_CACHE_MAX = 10_000

// The scopes are the contract's (src/domain/api-key-scope.ts).
export { type ApiKeyScope, apiKeyScopes }

export interface ApiKeyRow {
  readonly id: string
  readonly project_id: string
  readonly user_id: string | null
  readonly prefix: string
  readonly name: string | null
  readonly created_at: Date
  readonly disabled_at: Date | null
  readonly grace_until: Date | null
  readonly last_used_at: Date | null
  readonly scope: ApiKeyScope
  readonly created_by_key_id: string | null
}

export interface CreateApiKeyOptions {
  readonly scope: ApiKeyScope
  /** The key that asked for this one over the API; null for the bootstrap and CLI keys. */
  readonly createdByKeyId: string | null
  /** The console user who asked for this key (through a console session); null otherwise. */
  readonly userId?: string | null
}

export type AuthenticationFailure = "malformed" | "unknown" | "revoked"

export class ApiKeys extends Context.Service<ApiKeys, {
  readonly create: (projectId: string, name: string | null, options: CreateApiKeyOptions) => Effect.Effect<{ readonly row: ApiKeyRow; readonly secret: string }>
  readonly list: (projectId: string, limit: number, beforeId: string | undefined) => Effect.Effect<{
    readonly rows: ReadonlyArray<ApiKeyRow>
    readonly total: number
  }>
  /**
   * `create` within the plan's cap on the project's keys (not revoked): PlanLimitReached at
   * `limit`. The project's creates count and insert one at a time, on every node.
   */
  readonly createWithinPlan: (projectId: string, name: string | null, options: CreateApiKeyOptions, limit: number) => Effect.Effect<{ readonly row: ApiKeyRow; readonly secret: string }, PlanLimitReached>
  readonly count: (projectId: string) => Effect.Effect<number>
  readonly find: (projectId: string, keyId: string) => Effect.Effect<ApiKeyRow | undefined>
  readonly revoke: (projectId: string, keyId: string) => Effect.Effect<ApiKeyRow | undefined>
  readonly authenticate: (token: string) => Effect.Effect<ApiKeyRow | AuthenticationFailure>
}>()("wa/auth/ApiKeys") {
  static readonly layer = Layer.effect(
    ApiKeys,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { keyRevocationGraceSeconds } = yield* AppConfig
      const graceMs = keyRevocationGraceSeconds * 1000
      const authCacheMs = Math.min(AUTH_CACHE_MAX_MS, graceMs / 2)
      const columnList =
        "id, project_id, user_id, prefix, name, created_at, disabled_at, grace_until, last_used_at, scope, created_by_key_id"
      const columns = sql.literal(columnList)

      // Once per Idempotency-Key, even across a crash (src/store/keyed-create.ts).
      const create = (projectId: string, name: string | null, options: CreateApiKeyOptions) =>
        createOnce(
          sql,
          Effect.gen(function*() {
            const secret = generateApiKey()
            const rows = yield* sql<ApiKeyRow>`
              INSERT INTO api_keys (id, project_id, prefix, name, secret_hash, scope, created_by_key_id, user_id)
              VALUES (${makeId("key")}, ${projectId}, ${displayPrefix(secret)}, ${name}, ${hashApiKey(secret)},
                ${options.scope}, ${options.createdByKeyId}, ${options.userId ?? null})
              RETURNING ${columns}`
            return { row: rows[0]!, secret }
          }),
          (created) => created.row.id,
          // The key an earlier attempt created, whose answer was never kept, so never sent: nobody
          // holds its secret, which is minted again for this answer.
          (id) =>
            Effect.gen(function*() {
              const secret = generateApiKey()
              const rows = yield* sql<ApiKeyRow>`
                UPDATE api_keys SET prefix = ${displayPrefix(secret)}, secret_hash = ${hashApiKey(secret)}
                WHERE id = ${id} AND project_id = ${projectId} AND disabled_at IS NULL
                RETURNING ${columns}`
              return rows[0] === undefined ? undefined : { row: rows[0], secret }
            })
        ).pipe(Effect.orDie)

      const createWithinPlan = (projectId: string, name: string | null, options: CreateApiKeyOptions, limit: number) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT pg_advisory_xact_lock(${PROJECT_KEYS_LOCK}, hashtext(${projectId}))`
          const [counted] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys WHERE project_id = ${projectId} AND disabled_at IS NULL`
          if (counted!.n >= limit) return yield* new PlanLimitReached({ resource: "api_keys", count: counted!.n, limit })
          return yield* create(projectId, name, options)
        })).pipe(Effect.catchTag("SqlError", (error) => Effect.die(error)))

      const count = (projectId: string) =>
        sql<{ total: number }>`SELECT count(*)::int AS total FROM api_keys WHERE project_id = ${projectId}`.pipe(
          Effect.map((rows) => rows[0]?.total ?? 0),
          Effect.orDie
        )

      // The page and the project's total in one round trip (the uncorrelated subquery runs once).
      const list = (projectId: string, limit: number, beforeId: string | undefined) =>
        Effect.gen(function*() {
          const rows = yield* sql<ApiKeyRow & { total: number }>`
            SELECT ${columns}, (SELECT count(*)::int FROM api_keys WHERE project_id = ${projectId}) AS total
            FROM api_keys
            WHERE project_id = ${projectId} ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`
          const total = rows[0]?.total ?? (yield* count(projectId))
          return { rows: rows.map(({ total: _, ...row }) => row as ApiKeyRow), total }
        }).pipe(Effect.orDie)

      // A fixed statement: the hot read skips compiling a template on every request.
      const findStatement = `SELECT ${columnList} FROM api_keys WHERE project_id = $1 AND id = $2`
      const find = (projectId: string, keyId: string) =>
        sql.unsafe<ApiKeyRow>(findStatement, [projectId, keyId]).pipe(
          Effect.map((rows) => rows[0]),
          Effect.orDie
        )

      // Keyed by the presented token: a hit costs one map lookup, no checksum and no hash. Only
      // tokens the database accepted are remembered; the database itself stores only hashes.
      const verified = new Map<string, { readonly row: ApiKeyRow; readonly at: number }>()

      // Revoking twice keeps the first grace window: a second call must not extend it. This node
      // forgets the key's cached row at once, so the key loses key management here immediately;
      // other nodes learn it within the cache lifetime, and the key-management writes re-read the
      // key from the database anyway (see `find` in requireFreshScope).
      const revoke = (projectId: string, keyId: string) =>
        sql<ApiKeyRow>`
          UPDATE api_keys
          SET disabled_at = coalesce(disabled_at, now()),
              grace_until = coalesce(grace_until, now() + ${`${graceMs} milliseconds`}::interval)
          WHERE project_id = ${projectId} AND id = ${keyId}
          RETURNING ${columns}`.pipe(
          Effect.map((rows) => rows[0]),
          Effect.tap((row) =>
            Effect.sync(() => {
              if (row === undefined) return
              for (const [token, entry] of verified) if (entry.row.id === row.id) verified.delete(token)
            })
          ),
          Effect.orDie
        )
      const lookUp = (token: string, now: number) =>
        Effect.gen(function*() {
          if (!isWellFormedApiKey(token)) return "malformed" as const
          const hash = hashApiKey(token)
          const rows = yield* sql<ApiKeyRow>`SELECT ${columns} FROM api_keys WHERE secret_hash = ${hash}`
          const row = rows[0]
          if (row === undefined) return "unknown" as const
          if (verified.size >= AUTH_CACHE_MAX) verified.clear()
          verified.set(token, { row, at: now })
          if (row.grace_until !== null && row.grace_until.getTime() <= now) return "revoked" as const
          if (row.last_used_at === null || now - row.last_used_at.getTime() > LAST_USED_RESOLUTION_MS) {
            yield* sql`UPDATE api_keys SET last_used_at = now() WHERE id = ${row.id}`
          }
          return row
        }).pipe(Effect.orDie)
      // The hit path is plain code with no generator: it runs on every authenticated request.
      const authenticate = (token: string): Effect.Effect<ApiKeyRow | AuthenticationFailure> => {
        const now = Date.now()
        const cached = verified.get(token)
        if (cached === undefined || now - cached.at >= authCacheMs) return lookUp(token, now)
        const graceUntil = cached.row.grace_until
        return Effect.succeed(graceUntil !== null && graceUntil.getTime() <= now ? "revoked" as const : cached.row)
      }

      return ApiKeys.of({ create, createWithinPlan, list, count, find, revoke, authenticate })
    })
  )
}
