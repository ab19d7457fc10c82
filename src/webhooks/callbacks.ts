/**
 * Outbound callbacks, signed the Standard Webhooks way (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">` with the project's
 * `whsec_` secret), retried with exponential backoff, every attempt recorded as a delivery.
 * A target that is not public (checked before each attempt and again when the socket resolves
 * the host) is refused without retry: the delivery is `failed` with the reason in `last_error`.
 *
 * Deliveries are an outbox in PostgreSQL: `send` records one (once per run and event type) and
 * wakes this node's dispatcher; the dispatcher of any node claims due deliveries with SKIP LOCKED
 * (pushing their next attempt past the attempt timeout, so a node that dies mid-attempt leaves
 * them to the others), attempts them, and records the outcome with the next attempt time. Retries
 * therefore survive restarts, and a failed delivery can be retried through the API.
 */
import { Context, Effect, Layer, Queue, Schema } from "effect"
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

export const DeliveryStatus = Schema.Literals(["pending", "retrying", "delivered", "failed"])
export type DeliveryStatus = typeof DeliveryStatus.Type

export interface DeliveryRow {
  readonly id: string
  readonly project_id: string
  readonly run_id: string | null
  readonly url: string
  readonly event_type: string
  readonly payload: unknown
  readonly status: DeliveryStatus
  readonly attempts: number
  readonly last_status_code: number | null
  readonly last_error: string | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly delivered_at: Date | null
  readonly next_attempt_at: Date | null
}

/** Only a failed delivery can be retried. */
export class DeliveryNotRetryable extends Schema.TaggedError<DeliveryNotRetryable>()("DeliveryNotRetryable", {
  status: DeliveryStatus
}) {}

/** Due deliveries one dispatcher pass claims at most. */
const CLAIM_BATCH = 20
/** How often a dispatcher looks for due deliveries when nothing woke it. */
const POLL_INTERVAL_MS = 1_000

export class Callbacks extends Context.Service<Callbacks, {
  /** Records a signed POST of `{type, data}` to the URL and wakes the dispatcher; returns the delivery id. */
  readonly send: (input: {
    readonly projectId: string
    readonly runId: string | null
    readonly url: string
    readonly type: string
    readonly data: unknown
  }) => Effect.Effect<string>
  /** The project's deliveries, newest first (optionally of one run or status). */
  readonly list: (projectId: string, filter: {
    readonly runId?: string | undefined
    readonly status?: DeliveryStatus | undefined
    readonly limit: number
    readonly beforeId?: string | undefined
  }) => Effect.Effect<ReadonlyArray<DeliveryRow>>
  readonly find: (projectId: string, deliveryId: string) => Effect.Effect<DeliveryRow | undefined>
  /** Makes a failed delivery due again (attempts go on counting). */
  readonly retry: (projectId: string, deliveryId: string) => Effect.Effect<DeliveryRow | undefined, DeliveryNotRetryable>
}>()("wa/webhooks/Callbacks") {
  static readonly layer = Layer.effect(
    Callbacks,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const retryBaseMs = config.webhookRetryBaseMs
      const wake = yield* Queue.sliding<void>(1)

      /** One attempt: what happened, and whether another attempt may follow. */
      const attempt = (deliveryId: string, url: string, secret: string, body: string) =>
        Effect.gen(function*() {
          const refused = yield* checkPublicUrl(url, config.allowPrivateNetworks).pipe(
            Effect.match({ onFailure: (e) => e.message, onSuccess: () => undefined })
          )
          if (refused !== undefined) return { status: null, error: `refused: ${refused}`, final: true } satisfies AttemptResult
          const timestamp = Math.floor(Date.now() / 1000)
          return yield* Effect.promise(() =>
            post(url, {
              "content-type": "application/json",
              "user-agent": "web-agent-service-webhooks/1",
              "webhook-id": deliveryId,
              "webhook-timestamp": String(timestamp),
              "webhook-signature": signPayload(secret, deliveryId, timestamp, body)
            }, body, config.allowPrivateNetworks)
          )
        })

      // Claims due deliveries for this node: their next attempt moves past the attempt timeout, so
      // no other dispatcher takes them meanwhile, and they come back if this node dies.
      const claim = sql.withTransaction(sql<{ id: string; url: string; payload: unknown; attempts: number; webhook_secret: string }>`
        UPDATE webhook_deliveries d
        SET next_attempt_at = now() + ${`${2 * ATTEMPT_TIMEOUT_MS} milliseconds`}::interval, updated_at = now()
        FROM projects p
        WHERE p.id = d.project_id AND d.id IN (
          SELECT id FROM webhook_deliveries
          WHERE status IN ('pending', 'retrying') AND next_attempt_at <= now()
          ORDER BY next_attempt_at
          LIMIT ${CLAIM_BATCH}
          FOR UPDATE SKIP LOCKED
        )
        RETURNING d.id, d.url, d.payload, d.attempts, p.webhook_secret`)

      const deliver = (row: { id: string; url: string; payload: unknown; attempts: number; webhook_secret: string }) =>
        Effect.gen(function*() {
          const body = typeof row.payload === "string" ? row.payload : JSON.stringify(row.payload)
          const { status, error, final } = yield* attempt(row.id, row.url, row.webhook_secret, body)
          const attempts = row.attempts + 1
          const outcome: DeliveryStatus = error === null ? "delivered" : final || attempts >= MAX_ATTEMPTS ? "failed" : "retrying"
          // Exponential backoff: the base, then twice that, four times, ...
          const delayMs = retryBaseMs * 2 ** (attempts - 1)
          yield* sql`
            UPDATE webhook_deliveries SET attempts = ${attempts}, last_status_code = ${status}, last_error = ${error},
              status = ${outcome}, updated_at = now(),
              next_attempt_at = CASE WHEN ${outcome === "retrying"} THEN now() + ${`${delayMs} milliseconds`}::interval ELSE NULL END,
              delivered_at = CASE WHEN ${error === null} THEN now() ELSE delivered_at END
            WHERE id = ${row.id}`
          if (outcome === "failed") yield* Effect.logWarning("callback delivery failed").pipe(Effect.annotateLogs({ delivery_id: row.id, attempts, error }))
        })

      // The dispatcher: a pass over what is due, then a wait for a wake-up or the poll interval.
      const pass: Effect.Effect<void> = claim.pipe(
        Effect.flatMap((rows) => Effect.forEach(rows, deliver, { concurrency: 8, discard: true })),
        Effect.catchCause((cause) => Effect.logWarning("callback dispatcher pass failed", cause))
      )
      yield* pass.pipe(
        Effect.andThen(Queue.take(wake).pipe(Effect.timeoutOption(`${POLL_INTERVAL_MS} millis`))),
        Effect.forever,
        Effect.forkScoped
      )

      const columns = sql.literal(
        "id, project_id, run_id, url, event_type, payload, status, attempts, last_status_code, last_error, created_at, updated_at, delivered_at, next_attempt_at"
      )

      return Callbacks.of({
        send: (input) =>
          Effect.gen(function*() {
            const id = `msg_${makeId("dlv").slice(4)}`
            const body = JSON.stringify({ type: input.type, timestamp: new Date().toISOString(), data: input.data })
            yield* sql`
              INSERT INTO webhook_deliveries (id, project_id, run_id, url, event_type, payload, next_attempt_at)
              VALUES (${id}, ${input.projectId}, ${input.runId}, ${input.url}, ${input.type}, ${body}::jsonb, now())
              ON CONFLICT DO NOTHING`
            yield* Queue.offer(wake, undefined)
            return id
          }).pipe(Effect.orDie),
        list: (projectId, filter) =>
          sql<DeliveryRow>`
            SELECT ${columns} FROM webhook_deliveries
            WHERE project_id = ${projectId}
              ${filter.runId === undefined ? sql`` : sql`AND run_id = ${filter.runId}`}
              ${filter.status === undefined ? sql`` : sql`AND status = ${filter.status}`}
              ${filter.beforeId === undefined ? sql`` : sql`AND id < ${filter.beforeId}`}
            ORDER BY id DESC LIMIT ${filter.limit}`.pipe(Effect.orDie),
        find: (projectId, deliveryId) =>
          sql<DeliveryRow>`SELECT ${columns} FROM webhook_deliveries WHERE project_id = ${projectId} AND id = ${deliveryId}`.pipe(
            Effect.map((rows) => rows[0]),
            Effect.orDie
          ),
        retry: (projectId, deliveryId) =>
          Effect.gen(function*() {
            const rows = yield* sql<DeliveryRow>`
              UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), updated_at = now()
              WHERE project_id = ${projectId} AND id = ${deliveryId} AND status = 'failed'
              RETURNING ${columns}`.pipe(Effect.orDie)
            if (rows[0] !== undefined) {
              yield* Queue.offer(wake, undefined)
              return rows[0]
            }
            const existing = yield* sql<{ status: DeliveryStatus }>`
              SELECT status FROM webhook_deliveries WHERE project_id = ${projectId} AND id = ${deliveryId}`.pipe(Effect.orDie)
            if (existing[0] === undefined) return undefined
            return yield* new DeliveryNotRetryable({ status: existing[0].status })
          })
      })
    })
  )
}
