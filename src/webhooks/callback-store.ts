/**
 * The outbox of outbound deliveries in PostgreSQL (webhook_deliveries): recording a delivery,
 * claiming due ones for a dispatcher (SKIP LOCKED), recording an attempt's outcome, and reading
 * them. Rows are decoded through DeliveryRow; the rules (signing, backoff, what may be retried)
 * are the Callbacks service's (src/webhooks/callbacks.ts).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { DeliveryChannel, DeliveryEventTypes, DeliveryStatus } from "../domain/delivery.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { ProjectId } from "../domain/run.ts"
import { MonitorId } from "../domain/monitor.ts"
import { DeliveryId } from "../domain/id-schemas.ts"

export const DeliveryRow = Schema.Struct({
  id: DeliveryId,
  project_id: ProjectId,
  run_id: Schema.NullOr(Schema.String),
  monitor_id: Schema.NullOr(MonitorId),
  channel: DeliveryChannel,
  url: Schema.String,
  event_type: Schema.Literals(DeliveryEventTypes),
  payload: Schema.Unknown,
  status: DeliveryStatus,
  attempts: Schema.Number,
  last_status_code: Schema.NullOr(Schema.Number),
  last_error: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  delivered_at: Schema.NullOr(Schema.Date),
  next_attempt_at: Schema.NullOr(Schema.Date)
})
export type DeliveryRow = typeof DeliveryRow.Type
const decodeRow = Schema.decodeUnknownSync(DeliveryRow)

/** A delivery a dispatcher claimed, with the secret that signs it. */
export const ClaimedRow = Schema.Struct({
  id: DeliveryId,
  run_id: Schema.NullOr(Schema.String),
  monitor_id: Schema.NullOr(MonitorId),
  url: Schema.String,
  payload: Schema.Unknown,
  attempts: Schema.Number,
  secret: Schema.String
})
export type ClaimedRow = typeof ClaimedRow.Type
const decodeClaimed = Schema.decodeUnknownSync(ClaimedRow)

const decodeId = Schema.decodeUnknownSync(Schema.Struct({ id: DeliveryId }))
const decodeState = Schema.decodeUnknownSync(Schema.Struct({ status: DeliveryStatus, channel: DeliveryChannel }))

const columns = "id, project_id, run_id, monitor_id, channel, url, event_type, payload, status, attempts, last_status_code, last_error, created_at, updated_at, delivered_at, next_attempt_at"

/** What `insert` records. */
export interface NewDelivery {
  readonly id: DeliveryId
  readonly projectId: ProjectId
  readonly runId: string | null
  readonly monitorId: MonitorId | null
  readonly channel: DeliveryChannel
  readonly secret: string | null
  readonly url: string
  readonly type: string
  /** The body, as JSON text. */
  readonly body: string
  readonly status: DeliveryStatus
  readonly error: string | null
  /** Due now (a delivery to attempt); false: settled, never attempted. */
  readonly due: boolean
}

export class CallbackStore extends Context.Service<CallbackStore, {
  /**
   * Claims due deliveries (at most `batch`): their next attempt moves `leaseMs` on, so no other
   * dispatcher takes them meanwhile, and they come back if this node dies.
   */
  readonly claim: (batch: number, leaseMs: number) => Effect.Effect<ReadonlyArray<ClaimedRow>>
  /** Records an attempt's outcome; the next attempt `delayMs` on when it is `retrying`. */
  readonly recordAttempt: (deliveryId: DeliveryId, attempt: {
    readonly attempts: number
    readonly statusCode: number | null
    readonly error: string | null
    readonly status: DeliveryStatus
    readonly delayMs: number
  }) => Effect.Effect<void>
  /** Records a delivery; false when the run already has one of that type (ON CONFLICT). */
  readonly insert: (delivery: NewDelivery) => Effect.Effect<boolean>
  /** The id of the run's delivery of that type. */
  readonly idOfRun: (runId: string, type: string) => Effect.Effect<DeliveryId | undefined>
  readonly list: (projectId: ProjectId, filter: {
    readonly runId?: string | undefined
    readonly monitorId?: string | undefined
    readonly status?: DeliveryStatus | undefined
    readonly limit: number
    readonly beforeId?: string | undefined
  }) => Effect.Effect<ReadonlyArray<DeliveryRow>>
  readonly find: (projectId: ProjectId, deliveryId: DeliveryId) => Effect.Effect<DeliveryRow | undefined>
  /** Makes a failed delivery with an HTTP target due again; undefined when it is not one. */
  readonly retryFailed: (projectId: ProjectId, deliveryId: DeliveryId) => Effect.Effect<DeliveryRow | undefined>
  readonly state: (projectId: ProjectId, deliveryId: DeliveryId) => Effect.Effect<{ readonly status: DeliveryStatus; readonly channel: DeliveryChannel } | undefined>
}>()("wa/webhooks/CallbackStore") {
  static readonly layer = Layer.effect(
    CallbackStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const cols = sql.literal(columns)
      return CallbackStore.of(withMethodSpans("CallbackStore", {
        claim: (batch, leaseMs) =>
          sql.withTransaction(sql`
            UPDATE webhook_deliveries d
            SET next_attempt_at = now() + ${`${leaseMs} milliseconds`}::interval, updated_at = now()
            FROM projects p
            WHERE p.id = d.project_id AND d.id IN (
              SELECT id FROM webhook_deliveries
              WHERE status IN ('pending', 'retrying') AND next_attempt_at <= now()
              ORDER BY next_attempt_at
              LIMIT ${batch}
              FOR UPDATE SKIP LOCKED
            )
            RETURNING d.id, d.run_id, d.monitor_id, d.url, d.payload, d.attempts, COALESCE(d.secret, p.webhook_secret) AS secret`).pipe(
            Effect.map((rows) => rows.map((row) => decodeClaimed(row))),
            Effect.orDie
          ),
        recordAttempt: (deliveryId, attempt) =>
          sql`
            UPDATE webhook_deliveries SET attempts = ${attempt.attempts}, last_status_code = ${attempt.statusCode}, last_error = ${attempt.error},
              status = ${attempt.status}, updated_at = now(),
              next_attempt_at = CASE WHEN ${attempt.status === "retrying"} THEN now() + ${`${attempt.delayMs} milliseconds`}::interval ELSE NULL END,
              delivered_at = CASE WHEN ${attempt.error === null} THEN now() ELSE delivered_at END
            WHERE id = ${deliveryId}`.pipe(Effect.asVoid, Effect.orDie),
        insert: (d) =>
          sql`
            INSERT INTO webhook_deliveries (id, project_id, run_id, monitor_id, channel, secret, url, event_type, payload,
              status, last_error, next_attempt_at, delivered_at)
            VALUES (${d.id}, ${d.projectId}, ${d.runId}, ${d.monitorId}, ${d.channel},
              ${d.secret}, ${d.url}, ${d.type}, ${d.body}::jsonb, ${d.status}, ${d.error},
              CASE WHEN ${d.due} THEN now() ELSE NULL END,
              CASE WHEN ${d.status === "delivered"} THEN now() ELSE NULL END)
            ON CONFLICT DO NOTHING
            RETURNING id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
        idOfRun: (runId, type) =>
          sql`SELECT id FROM webhook_deliveries WHERE run_id = ${runId} AND event_type = ${type}`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : decodeId(rows[0]).id),
            Effect.orDie
          ),
        list: (projectId, filter) =>
          sql`
            SELECT ${cols} FROM webhook_deliveries
            WHERE project_id = ${projectId}
              ${filter.runId === undefined ? sql`` : sql`AND run_id = ${filter.runId}`}
              ${filter.monitorId === undefined ? sql`` : sql`AND monitor_id = ${filter.monitorId}`}
              ${filter.status === undefined ? sql`` : sql`AND status = ${filter.status}`}
              ${filter.beforeId === undefined ? sql`` : sql`AND id < ${filter.beforeId}`}
            ORDER BY id DESC LIMIT ${filter.limit}`.pipe(Effect.map((rows) => rows.map((row) => decodeRow(row))), Effect.orDie),
        find: (projectId, deliveryId) =>
          sql`SELECT ${cols} FROM webhook_deliveries WHERE project_id = ${projectId} AND id = ${deliveryId}`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : decodeRow(rows[0])),
            Effect.orDie
          ),
        retryFailed: (projectId, deliveryId) =>
          sql`
            UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), updated_at = now()
            WHERE project_id = ${projectId} AND id = ${deliveryId} AND status = 'failed' AND url ~* '^https?://'
            RETURNING ${cols}`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : decodeRow(rows[0])),
            Effect.orDie
          ),
        state: (projectId, deliveryId) =>
          sql`SELECT status, channel FROM webhook_deliveries WHERE project_id = ${projectId} AND id = ${deliveryId}`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : decodeState(rows[0])),
            Effect.orDie
          )
      }))
    })
  )
}
