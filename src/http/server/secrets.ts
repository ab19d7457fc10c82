/**
 * Handlers of /v1/projects/{pid}/secrets. Every operation needs an admin key (or a tenant admin's
 * console session), reads included: which secrets a project has, and where they may be typed, is
 * for admins. No response carries a value.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ApiKeys } from "../../auth/api-keys.ts"
import { ProjectSecrets, type SecretRow } from "../../secrets/service.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey, requireScope } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { notFound } from "../errors.ts"
import { cursorPage } from "../pagination.ts"
import { requireFreshScope } from "./api-keys.ts"

export const secretView = (row: SecretRow) => ({
  id: row.id,
  name: row.name,
  kind: row.kind,
  origins: [...row.origins],
  description: row.description,
  totp: row.kind === "totp" && row.totp_digits !== null && row.totp_period !== null && row.totp_algorithm !== null
    ? { digits: row.totp_digits, period: row.totp_period, algorithm: row.totp_algorithm }
    : null,
  placeholder: `{{${row.kind}:${row.name}}}`,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
  value_updated_at: row.value_updated_at.toISOString(),
  last_used_at: row.last_used_at === null ? null : row.last_used_at.toISOString()
})

const missing = (id: string) => notFound("secret_not_found", `no secret ${id} in this project`)

export const SecretsHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "secrets",
  Effect.fn(function*(handlers) {
    const secrets = yield* ProjectSecrets
    const keys = yield* ApiKeys
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          yield* requireFreshScope(keys, "admin")
          const { projectId } = yield* CurrentKey
          const row = yield* secrets.create(projectId, {
            name: payload.name,
            kind: payload.kind ?? "secret",
            value: payload.value,
            origins: payload.origins,
            description: payload.description ?? null
          }).pipe(httpErrors)
          return secretView(row)
        }))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          yield* requireScope("admin")
          const { projectId } = yield* CurrentKey
          return yield* cursorPage(query, (limit, beforeId) => secrets.list(projectId, limit, beforeId), secretView)
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          yield* requireScope("admin")
          const { projectId } = yield* CurrentKey
          const row = yield* secrets.find(projectId, params.secret_id)
          if (row === undefined) return yield* missing(params.secret_id)
          return secretView(row)
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* requireFreshScope(keys, "admin")
          const { projectId } = yield* CurrentKey
          const row = yield* secrets.update(projectId, params.secret_id, {
            ...(payload.value !== undefined ? { value: payload.value } : {}),
            ...(payload.origins !== undefined ? { origins: payload.origins } : {}),
            ...(payload.description !== undefined ? { description: payload.description } : {})
          }).pipe(httpErrors)
          if (row === undefined) return yield* missing(params.secret_id)
          return secretView(row)
        }))
      .handle("delete", ({ params }) =>
        Effect.gen(function*() {
          yield* requireFreshScope(keys, "admin")
          const { projectId } = yield* CurrentKey
          if (!(yield* secrets.delete(projectId, params.secret_id))) return yield* missing(params.secret_id)
        }))
  })
)
