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
import { AppConfig } from "../config/config.ts"
import { PlanLimitReached } from "../domain/errors.ts"
import { type ApiKeyScope, apiKeyScopes } from "../domain/api-key-scope.ts"
import { generateApiKey, isWellFormedApiKey } from "./api-key-format.ts"
import { ApiKeyStore, type ApiKeyRow } from "./api-key-store.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { ApiKeyId, type Principal, type ProjectId } from "../domain/run.ts"
import type { UserId } from "../domain/id-schemas.ts"

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

export type { ApiKeyRow } from "./api-key-store.ts"

export interface CreateApiKeyOptions {
  readonly scope: ApiKeyScope
  /** The key that asked for this one over the API; null for the bootstrap and CLI keys. */
  readonly createdByKeyId: Principal | null
  /** The console user who asked for this key (through a console session); null otherwise. */
  readonly userId?: UserId | null
}

export type AuthenticationFailure = "malformed" | "unknown" | "revoked"

export class ApiKeys extends Context.Service<ApiKeys, {
  readonly create: (projectId: ProjectId, name: string | null, options: CreateApiKeyOptions) => Effect.Effect<{ readonly row: ApiKeyRow; readonly secret: string }>
  readonly list: (projectId: ProjectId, limit: number, beforeId: string | undefined) => Effect.Effect<{
    readonly rows: ReadonlyArray<ApiKeyRow>
    readonly total: number
  }>
  /**
   * `create` within the plan's cap on the project's keys (not revoked): PlanLimitReached at
   * `limit`. The project's creates count and insert one at a time, on every node.
   */
  readonly createWithinPlan: (projectId: ProjectId, name: string | null, options: CreateApiKeyOptions, limit: number) => Effect.Effect<{ readonly row: ApiKeyRow; readonly secret: string }, PlanLimitReached>
  readonly count: (projectId: ProjectId) => Effect.Effect<number>
  readonly find: (projectId: ProjectId, keyId: ApiKeyId) => Effect.Effect<ApiKeyRow | undefined>
  readonly revoke: (projectId: ProjectId, keyId: ApiKeyId) => Effect.Effect<ApiKeyRow | undefined>
  readonly authenticate: (token: string) => Effect.Effect<ApiKeyRow | AuthenticationFailure>
}>()("wa/auth/ApiKeys") {
  static readonly layer = Layer.effect(
    ApiKeys,
    Effect.gen(function*() {
      const store = yield* ApiKeyStore
      const { keyRevocationGraceSeconds } = yield* AppConfig
      const graceMs = keyRevocationGraceSeconds * 1000
      const authCacheMs = Math.min(AUTH_CACHE_MAX_MS, graceMs / 2)

      // Once per Idempotency-Key, even across a crash (src/store/keyed-create.ts).
      const create = (projectId: ProjectId, name: string | null, options: CreateApiKeyOptions) =>
        store.createOnce(
          Effect.gen(function*() {
            const secret = generateApiKey()
            const row = yield* store.insert({
              projectId, name, secret, scope: options.scope, createdByKeyId: options.createdByKeyId, userId: options.userId ?? null
            })
            return { row, secret }
          }),
          (created) => created.row.id,
          // The key an earlier attempt created, whose answer was never kept, so never sent: nobody
          // holds its secret, which is minted again for this answer.
          (id) =>
            Effect.gen(function*() {
              const secret = generateApiKey()
              const row = yield* store.rekey(projectId, ApiKeyId.make(id), secret)
              return row === undefined ? undefined : { row, secret }
            })
        )

      const createWithinPlan = (projectId: ProjectId, name: string | null, options: CreateApiKeyOptions, limit: number) =>
        store.withProjectLock(projectId, Effect.gen(function*() {
          const n = yield* store.countLive(projectId)
          if (n >= limit) return yield* new PlanLimitReached({ resource: "api_keys", count: n, limit })
          return yield* create(projectId, name, options)
        }))

      const count = store.count
      const list = store.page
      const find = store.find

      // Keyed by the presented token: a hit costs one map lookup, no checksum and no hash. Only
      // tokens the database accepted are remembered; the database itself stores only hashes.
      const verified = new Map<string, { readonly row: ApiKeyRow; readonly at: number }>()

      // Revoking twice keeps the first grace window: a second call must not extend it. This node
      // forgets the key's cached row at once, so the key loses key management here immediately;
      // other nodes learn it within the cache lifetime, and the key-management writes re-read the
      // key from the database anyway (see `find` in requireFreshScope).
      const revoke = (projectId: ProjectId, keyId: ApiKeyId) =>
        store.revoke(projectId, keyId, graceMs).pipe(
          Effect.tap((row) =>
            Effect.sync(() => {
              if (row === undefined) return
              for (const [token, entry] of verified) if (entry.row.id === row.id) verified.delete(token)
            })
          )
        )
      const lookUp = (token: string, now: number) =>
        Effect.gen(function*() {
          if (!isWellFormedApiKey(token)) return "malformed" as const
          const row = yield* store.findBySecret(token)
          if (row === undefined) return "unknown" as const
          if (verified.size >= AUTH_CACHE_MAX) verified.clear()
          verified.set(token, { row, at: now })
          if (row.grace_until !== null && row.grace_until.getTime() <= now) return "revoked" as const
          if (row.last_used_at === null || now - row.last_used_at.getTime() > LAST_USED_RESOLUTION_MS) {
            yield* store.markUsed(row.id)
          }
          return row
        })
      // The hit path is plain code with no generator: it runs on every authenticated request.
      const authenticate = (token: string): Effect.Effect<ApiKeyRow | AuthenticationFailure> => {
        const now = Date.now()
        const cached = verified.get(token)
        if (cached === undefined || now - cached.at >= authCacheMs) return lookUp(token, now)
        const graceUntil = cached.row.grace_until
        return Effect.succeed(graceUntil !== null && graceUntil.getTime() <= now ? "revoked" as const : cached.row)
      }

      return ApiKeys.of(withMethodSpans("ApiKeys", { create, createWithinPlan, list, count, find, revoke, authenticate }))
    })
  ).pipe(Layer.provide(ApiKeyStore.layer))
}
