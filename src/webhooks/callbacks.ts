/**
 * Outbound callbacks, signed the Standard Webhooks way (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">` with the project's
 * `whsec_` secret), retried with exponential backoff, every attempt recorded as a delivery.
 * A target that is not public (checked before each attempt and again when the socket resolves
 * the host) is refused without retry: the delivery is `failed` with the reason in `last_error`.
 *
 * Deliveries are an outbox in PostgreSQL: `send` records one (once per run and event type; a
 * monitor's notification passes its tick id as the run id, so a tick executed twice after a
 * failover still notifies once) and
 * wakes this node's dispatcher; the dispatcher of any node claims due deliveries with SKIP LOCKED
 * (pushing their next attempt past the attempt timeout, so a node that dies mid-attempt leaves
 * them to the others), attempts them, and records the outcome with the next attempt time. Retries
 * therefore survive restarts, and a failed delivery can be retried through the API.
 */
import { Context, Effect, Layer, Queue, Schema } from "effect"
import { createHmac } from "node:crypto"
import { HttpClientRequest } from "effect/http"
import { AppConfig } from "../config/config.ts"
import { DeliveryChannel, DeliveryStatus } from "../domain/delivery.ts"
import type { WireBody } from "../domain/errors.ts"
import { makeId } from "../domain/ids.ts"
import { outboundHttpClient, refusedAtConnect } from "../net/outbound-http.ts"
import { checkPublicUrl } from "../net/private-address.ts"
import { type ClaimedRow, CallbackStore, DeliveryRow } from "./callback-store.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { ProjectId } from "../domain/run.ts"
import { DeliveryId } from "../domain/id-schemas.ts"
import type { MonitorId } from "../domain/monitor.ts"
import { webhookBody, type WebhookMessage } from "../domain/wire/webhook-payloads.ts"

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

// The delivery record's status and channel are the contract's (src/domain/delivery.ts).
export { DeliveryChannel, DeliveryStatus }

export { DeliveryRow }

/**
 * Only a failed delivery with an HTTP target can be retried (`reason` says why another cannot:
 * an inbox delivery, one whose webhook endpoint did not exist).
 */
export class DeliveryNotRetryable extends Schema.TaggedError<DeliveryNotRetryable>()("DeliveryNotRetryable", {
  status: DeliveryStatus,
  reason: Schema.optional(Schema.String)
}) {
  // One answer on both retry routes (webhook deliveries and a monitor's): the specific code.
  get httpStatus() { return 409 as const }
  get code() { return "delivery_not_retryable" }
  wire(): WireBody {
    return { detail: this.reason ?? `the delivery is ${this.status}; only a failed delivery can be retried`, extra: { status: this.status } }
  }
}

/** What `send` records. */
export interface SendInput {
  readonly projectId: ProjectId
  /** The run (or a monitor's tick) the event is about: one delivery per (runId, type). */
  readonly runId: string | null
  readonly url: string
  /** The body's type and data (src/domain/wire/webhook-payloads.ts); the body is `{type, timestamp, data}`. */
  readonly message: WebhookMessage
  readonly monitorId?: MonitorId | null | undefined
  /** Default `callback_url`. */
  readonly channel?: DeliveryChannel | undefined
  /** The `whsec_` secret that signs it; absent or null: the project's webhook secret. */
  readonly secret?: string | null | undefined
  /**
   * Record the delivery as already settled, without any attempt: `delivered` (a console inbox
   * notification) or `failed` with the reason (a target that does not exist).
   */
  readonly settled?: { readonly status: "delivered" } | { readonly status: "failed"; readonly error: string } | undefined
}

/** Due deliveries one dispatcher pass claims at most. */
const CLAIM_BATCH = 20
/** How often a dispatcher looks for due deliveries when nothing woke it. */
const POLL_INTERVAL_MS = 1_000

/** What one recorded attempt came to. */
export interface AttemptOutcome {
  readonly deliveryId: DeliveryId
  readonly runId: string | null
  readonly monitorId: MonitorId | null
  readonly status: DeliveryStatus
  readonly attempts: number
  readonly statusCode: number | null
  readonly error: string | null
}

export class Callbacks extends Context.Service<Callbacks, {
  /**
   * Records a signed POST of `{type, timestamp, data}` to the URL and wakes the dispatcher; returns
   * the delivery id, the existing one when the run already has a delivery of that type.
   */
  readonly send: (input: SendInput) => Effect.Effect<DeliveryId>
  /** The project's deliveries, newest first (optionally of one run, monitor or status). */
  readonly list: (projectId: ProjectId, filter: {
    readonly runId?: string | undefined
    readonly monitorId?: string | undefined
    readonly status?: DeliveryStatus | undefined
    readonly limit: number
    readonly beforeId?: string | undefined
  }) => Effect.Effect<ReadonlyArray<DeliveryRow>>
  readonly find: (projectId: ProjectId, deliveryId: DeliveryId) => Effect.Effect<DeliveryRow | undefined>
  /** Makes a failed delivery due again (attempts go on counting). */
  readonly retry: (projectId: ProjectId, deliveryId: DeliveryId) => Effect.Effect<DeliveryRow | undefined, DeliveryNotRetryable>
  /**
   * Calls `listener` after every attempt this node's dispatcher records (Track reports its
   * monitors' deliveries on their event streams this way). A failing listener is logged only.
   */
  readonly onAttempt: (listener: (attempt: AttemptOutcome) => Effect.Effect<void>) => Effect.Effect<void>
  /**
   * Wakes this node's dispatcher. `send` wakes it too, but a send inside a transaction wakes it
   * before the delivery is committed (and visible): the caller wakes it again after the commit.
   */
  readonly wake: Effect.Effect<void>
}>()("wa/webhooks/Callbacks") {
  static readonly layer = Layer.effect(
    Callbacks,
    Effect.gen(function*() {
      const store = yield* CallbackStore
      const config = yield* AppConfig
      const retryBaseMs = config.webhookRetryBaseMs
      const wake = yield* Queue.sliding<void>(1)
      // Guarded unless private networks are allowed; follows no redirects.
      const client = yield* outboundHttpClient(!config.allowPrivateNetworks)

      /** One attempt: what happened, and whether another attempt may follow. */
      const attempt = (deliveryId: DeliveryId, url: string, secret: string, body: string) =>
        Effect.gen(function*() {
          const refused = yield* checkPublicUrl(url, config.allowPrivateNetworks).pipe(
            Effect.match({ onFailure: (e) => e.message, onSuccess: () => undefined })
          )
          if (refused !== undefined) return { status: null, error: `refused: ${refused}`, final: true } satisfies AttemptResult
          const timestamp = Math.floor(Date.now() / 1000)
          const request = HttpClientRequest.post(url).pipe(
            HttpClientRequest.setHeaders({
              "user-agent": "web-agent-service-webhooks/1",
              "webhook-id": deliveryId,
              "webhook-timestamp": String(timestamp),
              "webhook-signature": signPayload(secret, deliveryId, timestamp, body)
            }),
            HttpClientRequest.bodyText(body, "application/json")
          )
          return yield* client.execute(request).pipe(
            // The body is read to the end (and dropped), so the connection can be reused.
            Effect.tap((response) => Effect.ignore(response.arrayBuffer)),
            Effect.timeout(ATTEMPT_TIMEOUT_MS),
            Effect.match({
              onSuccess: (response): AttemptResult => ({
                status: response.status,
                error: response.status >= 300 ? `HTTP ${response.status}` : null,
                final: false
              }),
              onFailure: (error): AttemptResult => {
                const refused = refusedAtConnect(error)
                return refused !== undefined
                  ? { status: null, error: `refused: ${refused.message}`, final: true }
                  : { status: null, error: String(error), final: false }
              }
            })
          )
        })

      // Claims due deliveries for this node: their next attempt moves past the attempt timeout, so
      // no other dispatcher takes them meanwhile, and they come back if this node dies.
      const claim = store.claim(CLAIM_BATCH, 2 * ATTEMPT_TIMEOUT_MS)
      const listeners: Array<(attempt: AttemptOutcome) => Effect.Effect<void>> = []

      const deliver = (row: ClaimedRow) =>
        Effect.gen(function*() {
          const body = typeof row.payload === "string" ? row.payload : JSON.stringify(row.payload)
          const { status, error, final } = yield* attempt(row.id, row.url, row.secret, body)
          const attempts = row.attempts + 1
          const outcome: DeliveryStatus = error === null ? "delivered" : final || attempts >= MAX_ATTEMPTS ? "failed" : "retrying"
          // Exponential backoff: the base, then twice that, four times, ...
          const delayMs = retryBaseMs * 2 ** (attempts - 1)
          yield* store.recordAttempt(row.id, { attempts, statusCode: status, error, status: outcome, delayMs })
          if (outcome === "failed") yield* Effect.logWarning("callback delivery failed").pipe(Effect.annotateLogs({ delivery_id: row.id, attempts, error }))
          const recorded: AttemptOutcome = { deliveryId: row.id, runId: row.run_id, monitorId: row.monitor_id, status: outcome, attempts, statusCode: status, error }
          for (const listener of listeners) {
            yield* listener(recorded).pipe(Effect.catchCause((cause) => Effect.logWarning("delivery listener failed", cause)))
          }
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

      return Callbacks.of(withMethodSpans("Callbacks", {
        onAttempt: (listener) => Effect.sync(() => {
          listeners.push(listener)
        }),
        send: (input) =>
          Effect.gen(function*() {
            const id = DeliveryId.make(`msg_${makeId("dlv").slice(4)}`)
            const { type } = input.message
            const body = JSON.stringify(webhookBody(input.message, new Date()))
            const settled = input.settled
            const status: DeliveryStatus = settled?.status ?? "pending"
            const error = settled?.status === "failed" ? settled.error : null
            const inserted = yield* store.insert({
              id,
              projectId: input.projectId,
              runId: input.runId,
              monitorId: input.monitorId ?? null,
              channel: input.channel ?? "callback_url",
              secret: input.secret ?? null,
              url: input.url,
              type,
              body,
              status,
              error,
              due: settled === undefined
            })
            if (!inserted) {
              // Already recorded (the same run and type): that delivery stands.
              const existing = input.runId === null ? undefined : yield* store.idOfRun(input.runId, type)
              return existing ?? id
            }
            if (settled === undefined) yield* Queue.offer(wake, undefined)
            return id
          }).pipe(Effect.orDie),
        wake: Queue.offer(wake, undefined).pipe(Effect.asVoid),
        list: store.list,
        find: (projectId, deliveryId) => store.find(projectId, deliveryId),
        retry: (projectId, deliveryId) =>
          Effect.gen(function*() {
            const retried = yield* store.retryFailed(projectId, deliveryId)
            if (retried !== undefined) {
              yield* Queue.offer(wake, undefined)
              return retried
            }
            const row = yield* store.state(projectId, deliveryId)
            if (row === undefined) return undefined
            if (row.status !== "failed") return yield* new DeliveryNotRetryable({ status: row.status })
            return yield* new DeliveryNotRetryable({
              status: row.status,
              reason: row.channel === "console_inbox"
                ? "an inbox delivery is not sent over HTTP; there is nothing to retry"
                : "the delivery has no HTTP target (its webhook endpoint did not exist); there is nothing to retry"
            })
          })
      }))
    })
  ).pipe(Layer.provide(CallbackStore.layer))
}
