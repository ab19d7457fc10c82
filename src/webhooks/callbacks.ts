/**
 * Outbound callbacks, signed the Standard Webhooks way (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">` with the project's
 * `whsec_` secret), retried with exponential backoff, every attempt recorded as a delivery.
 * A target that is not public (checked before each attempt and again when the socket resolves
 * the host) is refused without retry: the delivery is `failed` with the reason in `last_error`.
 * Retries live in this process; a restart drops the pending ones (their rows stay `pending`).
 */
import { Context, Effect, FiberSet, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { createHmac } from "node:crypto"
import { request as httpRequest } from "node:http"
import { request as httpsRequest } from "node:https"
import { AppConfig } from "../config/config.ts"
import { makeId } from "../domain/ids.ts"
import { checkPublicUrl, PrivateLookupError, publicLookup } from "../net/private-address.ts"

export const signPayload = (secret: string, id: string, timestamp: number, body: string) => {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64")
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`
}

const MAX_ATTEMPTS = 6
const ATTEMPT_TIMEOUT_MS = 10_000

interface AttemptResult {
  readonly status: number | null
  readonly error: string | null
  /** No retry: the target was refused. */
  readonly final: boolean
}

/**
 * POSTs the body; never rejects. Unless private networks are allowed, the socket resolves the
 * host through `publicLookup`, so it connects only to an address checked at connect time (a name
 * re-pointed at 127.0.0.1 after the check is refused, not reached). Redirects are not followed.
 */
const post = (url: string, headers: Record<string, string>, body: string, allowPrivate: boolean) =>
  new Promise<AttemptResult>((resolve) => {
    const target = new URL(url)
    const send = target.protocol === "https:" ? httpsRequest : httpRequest
    const request = send(target, {
      method: "POST",
      headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      ...(allowPrivate ? {} : { lookup: publicLookup })
    }, (response) => {
      const status = response.statusCode ?? 0
      response.resume()
      response.once("end", () => resolve({ status, error: status >= 300 ? `HTTP ${status}` : null, final: false }))
      response.once("error", (error) => resolve({ status, error: String(error), final: false }))
    })
    request.once("error", (error) => {
      const refused = error instanceof PrivateLookupError || (error as { cause?: unknown }).cause instanceof PrivateLookupError
      resolve({ status: null, error: refused ? `refused: ${error.message}` : String(error), final: refused })
    })
    request.end(body)
  })

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

      /**
       * One delivery attempt. A refused target (not http(s), or a non-public address, now or at
       * connect time) is not retried: the delivery is recorded failed with attempts 1 and the
       * reason. Any other failure is recorded `retrying` and fails, so the schedule retries it.
       */
      const attempt = (deliveryId: string, url: string, secret: string, body: string) =>
        Effect.gen(function*() {
          const refused = yield* checkPublicUrl(url, config.allowPrivateNetworks).pipe(
            Effect.match({ onFailure: (e) => e.message, onSuccess: () => undefined })
          )
          const timestamp = Math.floor(Date.now() / 1000)
          const result = refused !== undefined
            ? { status: null, error: `refused: ${refused}`, final: true }
            : yield* Effect.promise(() =>
              post(url, {
                "content-type": "application/json",
                "user-agent": "web-agent-service-webhooks/1",
                "webhook-id": deliveryId,
                "webhook-timestamp": String(timestamp),
                "webhook-signature": signPayload(secret, deliveryId, timestamp, body)
              }, body, config.allowPrivateNetworks)
            )
          const { status, error, final } = result
          yield* sql`
            UPDATE webhook_deliveries SET attempts = attempts + 1, last_status_code = ${status}, last_error = ${error},
              status = ${error === null ? "delivered" : final ? "failed" : "retrying"},
              delivered_at = CASE WHEN ${error === null} THEN now() ELSE delivered_at END
            WHERE id = ${deliveryId}`.pipe(Effect.orDie)
          if (error !== null && !final) return yield* Effect.fail(error)
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
