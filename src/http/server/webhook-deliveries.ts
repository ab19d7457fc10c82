/** Handlers of /v1/projects/{pid}/webhook_deliveries. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Callbacks, type DeliveryRow } from "../../webhooks/callbacks.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { notFound } from "../errors.ts"
import { cursorPage } from "../pagination.ts"
import { iso } from "../views/timestamps.ts"


export const deliveryView = (row: DeliveryRow) => ({
  id: row.id,
  run_id: row.run_id,
  monitor_id: row.monitor_id,
  channel: row.channel,
  url: row.url,
  event_type: row.event_type,
  status: row.status,
  attempts: row.attempts,
  last_status_code: row.last_status_code,
  last_error: row.last_error,
  payload: row.payload,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
  delivered_at: iso(row.delivered_at),
  next_attempt_at: iso(row.next_attempt_at)
})

const missing = (id: string) => notFound("delivery_not_found", `no webhook delivery ${id} in this project`)

export const WebhookDeliveriesHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "webhook_deliveries",
  Effect.fn(function*(handlers) {
    const callbacks = yield* Callbacks
    return handlers
      .handle("list", ({ query }) =>
        CurrentKey.use(({ projectId }) =>
          cursorPage(query, (limit, beforeId) =>
            callbacks.list(projectId, { runId: query.run_id, monitorId: query.monitor_id, status: query.status, limit, beforeId }), deliveryView)
        ))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const row = yield* callbacks.find(projectId, params.delivery_id)
          if (row === undefined) return yield* missing(params.delivery_id)
          return deliveryView(row)
        }))
      .handle("retry", ({ params }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const row = yield* httpErrors(callbacks.retry(projectId, params.delivery_id))
          if (row === undefined) return yield* missing(params.delivery_id)
          return deliveryView(row)
        }))
  })
)
