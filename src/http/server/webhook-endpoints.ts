/**
 * Handlers of /v1/projects/{pid}/webhooks. Every operation needs an admin key (or a tenant admin's
 * console session): an endpoint's URL is where the project's notifications go, as private to
 * admins as the webhook secret, so run keys and members get 403 even for reads.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ApiKeys } from "../../auth/api-keys.ts"
import { type WebhookEndpointRow, WebhookEndpoints } from "../../webhooks/webhook-endpoints.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey, requireScope } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { notFound } from "../errors.ts"
import { DEFAULT_LIMIT, decodeCursor, toPage } from "../pagination.ts"
import { requireFreshScope } from "./api-keys.ts"

export const webhookEndpointView = (row: WebhookEndpointRow) => ({
  id: row.id,
  url: row.url,
  description: row.description,
  created_at: row.created_at.toISOString()
})

const missing = (id: string) => notFound("webhook_endpoint_not_found", `no webhook endpoint ${id} in this project`)

export const WebhookEndpointsHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "webhook_endpoints",
  Effect.fn(function*(handlers) {
    const endpoints = yield* WebhookEndpoints
    const keys = yield* ApiKeys
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          yield* requireFreshScope(keys, "admin")
          const { projectId } = yield* CurrentKey
          const { row, secret } = yield* endpoints.create(projectId, { url: payload.url, description: payload.description ?? null }).pipe(httpErrors)
          return { ...webhookEndpointView(row), secret }
        }))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          yield* requireScope("admin")
          const { projectId } = yield* CurrentKey
          const limit = query.limit ?? DEFAULT_LIMIT
          const beforeId = yield* decodeCursor(query.cursor)
          const page = toPage(yield* endpoints.list(projectId, limit + 1, beforeId), limit)
          return { items: page.items.map(webhookEndpointView), next_cursor: page.next_cursor }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          yield* requireScope("admin")
          const { projectId } = yield* CurrentKey
          const row = yield* endpoints.find(projectId, params.webhook_id)
          if (row === undefined) return yield* missing(params.webhook_id)
          return webhookEndpointView(row)
        }))
      .handle("delete", ({ params }) =>
        Effect.gen(function*() {
          yield* requireFreshScope(keys, "admin")
          const { projectId } = yield* CurrentKey
          if (!(yield* endpoints.delete(projectId, params.webhook_id))) return yield* missing(params.webhook_id)
        }))
  })
)
