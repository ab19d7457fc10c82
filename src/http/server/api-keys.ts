/** Handlers of /v1/projects/{pid}/api_keys. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { type ApiKeyRow, ApiKeys } from "../../auth/api-keys.ts"
import { notFound } from "../../domain/errors.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { DEFAULT_LIMIT, decodeCursor, toPage } from "../pagination.ts"

const iso = (date: Date | null) => date === null ? null : date.toISOString()

export const toApiKeyResponse = (row: ApiKeyRow) => ({
  id: row.id,
  project_id: row.project_id,
  user_id: row.user_id,
  prefix: row.prefix,
  name: row.name,
  created_at: row.created_at.toISOString(),
  disabled_at: iso(row.disabled_at),
  grace_until: iso(row.grace_until),
  last_used_at: iso(row.last_used_at)
})

export const ApiKeysHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "api_keys",
  Effect.fn(function*(handlers) {
    const keys = yield* ApiKeys
    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const limit = query.limit ?? DEFAULT_LIMIT
          const before = yield* decodeCursor(query.cursor)
          const { rows, total } = yield* keys.list(projectId, limit + 1, before)
          const page = toPage(rows, limit)
          return { items: page.items.map(toApiKeyResponse), total, next_cursor: page.next_cursor }
        }))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const { row, secret } = yield* keys.create(projectId, payload.name ?? null)
          return { ...toApiKeyResponse(row), secret_token: secret }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const row = yield* keys.find(projectId, params.key_id)
          if (row === undefined) return yield* notFound("api_key_not_found", `no API key ${params.key_id} in this project`)
          return toApiKeyResponse(row)
        }))
      .handle("revoke", ({ params }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const row = yield* keys.revoke(projectId, params.key_id)
          if (row === undefined) return yield* notFound("api_key_not_found", `no API key ${params.key_id} in this project`)
          return toApiKeyResponse(row)
        }))
  })
)
