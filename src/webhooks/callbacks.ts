/**
 * Outbound callbacks, signed the Standard Webhooks way (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">` with the project's
 * `whsec_` secret), retried with exponential backoff, every attempt recorded as a delivery.
 * Retries live in this process; a restart drops the pending ones (their rows stay `pending`).
 */
import { Context, Effect, FiberSet, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { createHmac } from "node:crypto"
import { AppConfig } from "../config/config.ts"
import { makeId } from "../domain/ids.ts"
import { checkPublicUrl } from "../net/private-address.ts"

export const signPayload = (secret: string, id: string, timestamp: number, body: string) => {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64")
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`
}

const MAX_ATTEMPTS = 6
const ATTEMPT_TIMEOUT_MS = 10_000

export class Callbacks extends Context.Service<Callbacks, {
  /** Queues a signed POST of `{type, data}` to the URL; returns the delivery id. */
  readonly send: (input: {
    readonly projectId: string
    readonly runId: string | null
    readonly url: string
    readonly type: string
    readonly data: unknown
  }) => Effect.Effect<string>
}>()("wa/webhooks/Callbacks") {
  static readonly layer = Layer.effect(
    Callbacks,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const fibers = yield* FiberSet.make()
      const retryBaseMs = config.webhookRetryBaseMs

      const attempt = (deliveryId: string, url: string, secret: string, body: string) =>
        Effect.gen(function*() {
          yield* checkPublicUrl(url, config.allowPrivateNetworks)
          const timestamp = Math.floor(Date.now() / 1000)
          const result = yield* Effect.tryPromise(() =>
            fetch(url, {
              method: "POST",
              redirect: "manual",
              signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
              headers: {
                "content-type": "application/json",
                "user-agent": "web-agent-service-webhooks/1",
                "webhook-id": deliveryId,
                "webhook-timestamp": String(timestamp),
                "webhook-signature": signPayload(secret, deliveryId, timestamp, body)
              },
              body
            })
          ).pipe(Effect.result)
          const status = result._tag === "Success" ? result.success.status : null
          const error = result._tag === "Failure" ? String((result.failure as Error).cause ?? result.failure) : status !== null && status >= 300 ? `HTTP ${status}` : null
          yield* sql`
            UPDATE webhook_deliveries SET attempts = attempts + 1, last_status_code = ${status}, last_error = ${error},
              status = ${error === null ? "delivered" : "retrying"},
              delivered_at = CASE WHEN ${error === null} THEN now() ELSE delivered_at END
            WHERE id = ${deliveryId}`.pipe(Effect.orDie)
          if (error !== null) return yield* Effect.fail(error)
        })

      return Callbacks.of({
        send: (input) =>
          Effect.gen(function*() {
            const id = `msg_${makeId("dlv").slice(4)}`
            const body = JSON.stringify({ type: input.type, timestamp: new Date().toISOString(), data: input.data })
            const [project] = yield* sql<{ webhook_secret: string }>`SELECT webhook_secret FROM projects WHERE id = ${input.projectId}`
            const inserted = yield* sql`
              INSERT INTO webhook_deliveries (id, project_id, run_id, url, event_type, payload)
              VALUES (${id}, ${input.projectId}, ${input.runId}, ${input.url}, ${input.type}, ${body}::jsonb)
              ON CONFLICT DO NOTHING RETURNING id`
            if (inserted.length === 0) return id // already sent for this run
            yield* attempt(id, input.url, project!.webhook_secret, body).pipe(
              Effect.retry({ schedule: Schedule.exponential(retryBaseMs), times: MAX_ATTEMPTS - 1 }),
              Effect.catch(() => sql`UPDATE webhook_deliveries SET status = 'failed' WHERE id = ${id}`.pipe(Effect.orDie)),
              Effect.catchCause((cause) => Effect.logWarning("callback delivery failed", cause)),
              FiberSet.run(fibers)
            )
            return id
          }).pipe(Effect.orDie)
      })
    })
  )
}
