/**
 * Handlers of /v1/projects/{pid}/api_keys. Every one needs an admin key that is not revoked; the
 * reads trust the authentication cache (at most 30 s old on another node), the writes re-read the
 * calling key from the database so a key revoked a moment ago on another node cannot mint or
 * revoke keys.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { type ApiKeyRow, type ApiKeyScope, ApiKeys } from "../../auth/api-keys.ts"
import { Forbidden, notFound } from "../errors.ts"
import { Plans } from "../../billing/plans.ts"
import { httpErrors } from "../domain-errors.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey, requireScope, scopeFailure } from "../api/security.ts"
import { DEFAULT_LIMIT, decodeCursor, toPage } from "../pagination.ts"
import { iso } from "../views/timestamps.ts"


export const toApiKeyResponse = (row: ApiKeyRow) => ({
  id: row.id,
  project_id: row.project_id,
  user_id: row.user_id,
  prefix: row.prefix,
  name: row.name,
  created_at: row.created_at.toISOString(),
  disabled_at: iso(row.disabled_at),
  grace_until: iso(row.grace_until),
  last_used_at: iso(row.last_used_at),
  scope: row.scope,
  created_by_key_id: row.created_by_key_id
})

/**
 * requireScope against the key's row as the database has it now rather than as authentication
 * cached it: one primary-key read, for the rare operations a leaked key must lose at once.
 */
export const requireFreshScope = (keys: ApiKeys["Service"], required: ApiKeyScope) =>
  Effect.gen(function*() {
    yield* requireScope(required)
    const { projectId, keyId, userId } = yield* CurrentKey
    // A console user's role was read from the database by this very request's authentication.
    if (userId !== undefined) return
    // Without a console user, the acting principal is the API key itself.
    const row = yield* keys.find(projectId, keyId)
    const failure = row === undefined
      ? new Forbidden({ code: "forbidden", detail: "this API key no longer exists", extra: { required_scope: required } })
      : scopeFailure({ scope: row.scope, revoked: row.disabled_at !== null || row.grace_until !== null }, required)
    if (failure !== undefined) return yield* Effect.fail(failure)
  })

export const ApiKeysHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "api_keys",
  Effect.fn(function*(handlers) {
    const keys = yield* ApiKeys
    const plans = yield* Plans
    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          yield* requireScope("admin")
          const { projectId } = yield* CurrentKey
          const limit = query.limit ?? DEFAULT_LIMIT
          const before = yield* decodeCursor(query.cursor)
          const { rows, total } = yield* keys.list(projectId, limit + 1, before)
          const page = toPage(rows, limit)
          return { items: page.items.map(toApiKeyResponse), total, next_cursor: page.next_cursor }
        }))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          yield* requireFreshScope(keys, "admin")
          const { projectId, keyId, userId } = yield* CurrentKey
          // Run unless asked: least privilege. The new key does not depend on the one creating it.
          // A console user's key records the user (user_id); an API key's records the key.
          // The plan's cap on the project's keys (WA_MAX_KEYS_PER_PROJECT overrides it): 403 plan_limit_reached.
          const { row, secret } = yield* httpErrors(keys.createWithinPlan(projectId, payload.name ?? null, {
            scope: payload.scope ?? "run",
            createdByKeyId: userId === undefined ? keyId : null,
            userId: userId ?? null
          }, (yield* plans.capsFor(projectId)).projectKeys))
          return { ...toApiKeyResponse(row), secret_token: secret }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          yield* requireScope("admin")
          const { projectId } = yield* CurrentKey
          const row = yield* keys.find(projectId, params.key_id)
          if (row === undefined) return yield* notFound("api_key_not_found", `no API key ${params.key_id} in this project`)
          return toApiKeyResponse(row)
        }))
      .handle("revoke", ({ params }) =>
        Effect.gen(function*() {
          // Any key of the project, the calling one included (revoking the key you hold is fine).
          yield* requireFreshScope(keys, "admin")
          const { projectId } = yield* CurrentKey
          const row = yield* keys.revoke(projectId, params.key_id)
          if (row === undefined) return yield* notFound("api_key_not_found", `no API key ${params.key_id} in this project`)
          return toApiKeyResponse(row)
        }))
  })
).pipe(Layer.provide(Plans.layer))
