/**
 * Auto-recharge in PostgreSQL: each project's settings (auto_recharge_settings) and its recharges
 * (auto_recharges, an outbox of payments to send). Rows are decoded through Schema (a recharge's id
 * through the AutoRechargeId brand, as the service's makeId("arc") made it); the rules
 * (when to queue, the monthly cap, retries) are the AutoRecharge service's (src/billing/auto-recharge.ts),
 * which runs the queueing steps inside `transaction`.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { type Bucket, type ChargeInput, creditInTransaction } from "./ledger.ts"
import { withMethodSpans } from "../../observability/spans.ts"
import { ProjectId } from "../../domain/run.ts"
import { AutoRechargeId } from "../../domain/id-schemas.ts"

export interface AutoRechargeSettings {
  readonly projectId: ProjectId
  readonly enabled: boolean
  readonly thresholdMicros: number
  readonly amountMicros: number
  readonly monthlyCapMicros: number
  readonly stripeCustomerId: string | null
  readonly stripePaymentMethodId: string | null
  readonly armed: boolean
  readonly updatedAt: Date | null
}

export const RechargeStatus = Schema.Literals(["pending", "succeeded", "failed"])

export interface Recharge {
  readonly id: AutoRechargeId
  readonly amountMicros: number
  readonly status: typeof RechargeStatus.Type
  readonly attempts: number
  readonly paymentIntentId: string | null
  readonly lastError: string | null
  readonly createdAt: Date
  readonly completedAt: Date | null
}

export type AutoRechargeInput = Omit<AutoRechargeSettings, "projectId" | "armed" | "updatedAt">

/** A recharge leased for sending. */
export interface LeasedRecharge {
  readonly id: AutoRechargeId
  readonly projectId: ProjectId
  readonly amountMicros: number
  readonly attempts: number
}

const decodeSettings = Schema.decodeUnknownSync(Schema.Struct({
  project_id: ProjectId,
  enabled: Schema.Boolean,
  threshold_micros: Schema.FiniteFromString,
  amount_micros: Schema.FiniteFromString,
  monthly_cap_micros: Schema.FiniteFromString,
  stripe_customer_id: Schema.NullOr(Schema.String),
  stripe_payment_method_id: Schema.NullOr(Schema.String),
  armed: Schema.Boolean,
  updated_at: Schema.Date
}))
const decodeRecharge = Schema.decodeUnknownSync(Schema.Struct({
  id: AutoRechargeId,
  amount_micros: Schema.FiniteFromString,
  status: RechargeStatus,
  attempts: Schema.Number,
  payment_intent_id: Schema.NullOr(Schema.String),
  last_error: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  completed_at: Schema.NullOr(Schema.Date)
}))
const decodeTotal = Schema.decodeUnknownSync(Schema.Struct({ total: Schema.FiniteFromString }))
const decodeDue = Schema.decodeUnknownSync(Schema.Struct({
  project_id: ProjectId,
  amount_micros: Schema.FiniteFromString,
  monthly_cap_micros: Schema.FiniteFromString
}))
const decodePayment = Schema.decodeUnknownSync(Schema.Struct({
  stripe_customer_id: Schema.NullOr(Schema.String),
  stripe_payment_method_id: Schema.NullOr(Schema.String)
}))
const decodeLeased = Schema.decodeUnknownSync(Schema.Struct({
  id: AutoRechargeId,
  project_id: ProjectId,
  amount_micros: Schema.FiniteFromString,
  attempts: Schema.Number
}))

/** The balance as charges see it: monthly credits of an ended period count as 0. */
const balanceSql = "(CASE WHEN b.period_end <= now() THEN 0 ELSE b.monthly_micros END + b.additional_micros)"

export class RechargeStore extends Context.Service<RechargeStore, {
  /** Runs `effect` in one transaction (an SqlError is a defect). */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * The settings (undefined: never set), the month's pending and succeeded recharges and the 10
   * latest, from one snapshot (a recharge that succeeds meanwhile does not show beside the
   * settings as they were before its credit re-armed them).
   */
  readonly view: (projectId: ProjectId) => Effect.Effect<{
    readonly settings: AutoRechargeSettings | undefined
    readonly monthMicros: number
    readonly recent: ReadonlyArray<Recharge>
  }>
  readonly saveSettings: (projectId: ProjectId, input: AutoRechargeInput) => Effect.Effect<void>
  /** Fails the project's pending recharges never sent (attempts 0). */
  readonly dropUnsent: (projectId: ProjectId, reason: string) => Effect.Effect<void>
  /** Re-arms the disarmed settings whose balance is back at the threshold (none of their recharges pending). */
  readonly rearm: Effect.Effect<void>
  /**
   * Enabled, armed settings below their threshold with a customer and no pending recharge, locked
   * (SKIP LOCKED: one process takes each), at most `limit`. Inside a transaction.
   */
  readonly lockDue: (limit: number) => Effect.Effect<ReadonlyArray<{ readonly projectId: ProjectId; readonly amountMicros: number; readonly monthlyCapMicros: number }>>
  /** Pending and succeeded recharges of the project's current calendar month (UTC). */
  readonly monthTotal: (projectId: ProjectId) => Effect.Effect<number>
  /** Queues a pending recharge of this month and disarms the settings. */
  readonly queue: (id: AutoRechargeId, projectId: ProjectId, amountMicros: number) => Effect.Effect<void>
  /** Leases due pending recharges (at most `limit`): attempts counted, due again `leaseSeconds` on. */
  readonly lease: (limit: number, leaseSeconds: number) => Effect.Effect<ReadonlyArray<LeasedRecharge>>
  readonly paymentMethod: (projectId: ProjectId) => Effect.Effect<{ readonly customerId: string | null; readonly paymentMethodId: string | null } | undefined>
  /** The credit and the recharge's success, in one transaction. */
  readonly succeed: (rechargeId: AutoRechargeId, paymentIntentId: string, credit: ChargeInput & { readonly bucket: Bucket }) => Effect.Effect<void>
  readonly fail: (rechargeId: AutoRechargeId, error: string) => Effect.Effect<void>
  readonly retryLater: (rechargeId: AutoRechargeId, error: string, delaySeconds: number) => Effect.Effect<void>
}>()("wa/billing/RechargeStore") {
  static readonly layer = Layer.effect(
    RechargeStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const monthTotal = (projectId: ProjectId) =>
        sql`
          SELECT coalesce(sum(amount_micros), 0)::text AS total FROM auto_recharges
          WHERE project_id = ${projectId} AND month_start = date_trunc('month', now(), 'UTC') AND status IN ('pending', 'succeeded')`.pipe(
          Effect.map((rows) => decodeTotal(rows[0]).total)
        )
      return RechargeStore.of(withMethodSpans("RechargeStore", {
        transaction: (effect) => sql.withTransaction(effect).pipe(Effect.catchTag("SqlError", Effect.die)),
        view: (projectId) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`
            const [row] = yield* sql`
              SELECT project_id, enabled, threshold_micros::text, amount_micros::text, monthly_cap_micros::text,
                stripe_customer_id, stripe_payment_method_id, armed, updated_at
              FROM auto_recharge_settings WHERE project_id = ${projectId}`
            const month = yield* monthTotal(projectId)
            const recent = yield* sql`
              SELECT id, amount_micros::text, status, attempts, payment_intent_id, last_error, created_at, completed_at
              FROM auto_recharges WHERE project_id = ${projectId} ORDER BY created_at DESC, id DESC LIMIT 10`
            const settings = row === undefined ? undefined : decodeSettings(row)
            return {
              settings: settings === undefined ? undefined : {
                projectId: settings.project_id,
                enabled: settings.enabled,
                thresholdMicros: settings.threshold_micros,
                amountMicros: settings.amount_micros,
                monthlyCapMicros: settings.monthly_cap_micros,
                stripeCustomerId: settings.stripe_customer_id,
                stripePaymentMethodId: settings.stripe_payment_method_id,
                armed: settings.armed,
                updatedAt: settings.updated_at
              },
              monthMicros: month,
              recent: recent.map((raw) => {
                const r = decodeRecharge(raw)
                return {
                  id: r.id,
                  amountMicros: r.amount_micros,
                  status: r.status,
                  attempts: r.attempts,
                  paymentIntentId: r.payment_intent_id,
                  lastError: r.last_error,
                  createdAt: r.created_at,
                  completedAt: r.completed_at
                }
              })
            }
          })).pipe(Effect.orDie),
        saveSettings: (projectId, input) =>
          sql`
            INSERT INTO auto_recharge_settings (project_id, enabled, threshold_micros, amount_micros, monthly_cap_micros, stripe_customer_id, stripe_payment_method_id)
            VALUES (${projectId}, ${input.enabled}, ${input.thresholdMicros}, ${input.amountMicros}, ${input.monthlyCapMicros},
              ${input.stripeCustomerId}, ${input.stripePaymentMethodId})
            ON CONFLICT (project_id) DO UPDATE SET enabled = EXCLUDED.enabled, threshold_micros = EXCLUDED.threshold_micros,
              amount_micros = EXCLUDED.amount_micros, monthly_cap_micros = EXCLUDED.monthly_cap_micros,
              stripe_customer_id = EXCLUDED.stripe_customer_id, stripe_payment_method_id = EXCLUDED.stripe_payment_method_id,
              updated_at = now()`.pipe(Effect.asVoid, Effect.orDie),
        dropUnsent: (projectId, reason) =>
          sql`
            UPDATE auto_recharges SET status = 'failed', last_error = ${reason}, completed_at = now()
            WHERE project_id = ${projectId} AND status = 'pending' AND attempts = 0`.pipe(Effect.asVoid, Effect.orDie),
        rearm: sql`
          UPDATE auto_recharge_settings s SET armed = true
          FROM credit_balances b
          WHERE b.project_id = s.project_id AND NOT s.armed AND ${sql.literal(balanceSql)} >= s.threshold_micros
            AND NOT EXISTS (SELECT 1 FROM auto_recharges r WHERE r.project_id = s.project_id AND r.status = 'pending')`.pipe(Effect.asVoid, Effect.orDie),
        lockDue: (limit) =>
          sql`
            SELECT s.project_id, s.amount_micros::text, s.monthly_cap_micros::text
            FROM auto_recharge_settings s JOIN credit_balances b ON b.project_id = s.project_id
            WHERE s.enabled AND s.armed AND s.stripe_customer_id IS NOT NULL AND ${sql.literal(balanceSql)} < s.threshold_micros
              AND NOT EXISTS (SELECT 1 FROM auto_recharges r WHERE r.project_id = s.project_id AND r.status = 'pending')
            ORDER BY s.project_id
            LIMIT ${limit}
            FOR UPDATE OF s SKIP LOCKED`.pipe(
            Effect.map((rows) =>
              rows.map((raw) => {
                const row = decodeDue(raw)
                return { projectId: row.project_id, amountMicros: row.amount_micros, monthlyCapMicros: row.monthly_cap_micros }
              })
            ),
            Effect.orDie
          ),
        monthTotal: (projectId) => monthTotal(projectId).pipe(Effect.orDie),
        queue: (id, projectId, amountMicros) =>
          Effect.gen(function*() {
            yield* sql`
              INSERT INTO auto_recharges (id, project_id, amount_micros, month_start, status)
              VALUES (${id}, ${projectId}, ${amountMicros}, date_trunc('month', now(), 'UTC'), 'pending')`
            yield* sql`UPDATE auto_recharge_settings SET armed = false WHERE project_id = ${projectId}`
          }).pipe(Effect.orDie),
        lease: (limit, leaseSeconds) =>
          sql`
            UPDATE auto_recharges SET attempts = attempts + 1, next_attempt_at = now() + ${`${leaseSeconds} seconds`}::interval
            WHERE id IN (
              SELECT id FROM auto_recharges WHERE status = 'pending' AND next_attempt_at <= now()
              ORDER BY next_attempt_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
            RETURNING id, project_id, amount_micros::text, attempts`.pipe(
            Effect.map((rows) =>
              rows.map((raw) => {
                const row = decodeLeased(raw)
                return { id: row.id, projectId: row.project_id, amountMicros: row.amount_micros, attempts: row.attempts }
              })
            ),
            Effect.orDie
          ),
        paymentMethod: (projectId) =>
          sql`SELECT stripe_customer_id, stripe_payment_method_id FROM auto_recharge_settings WHERE project_id = ${projectId}`.pipe(
            Effect.map((rows) => {
              if (rows[0] === undefined) return undefined
              const row = decodePayment(rows[0])
              return { customerId: row.stripe_customer_id, paymentMethodId: row.stripe_payment_method_id }
            }),
            Effect.orDie
          ),
        succeed: (rechargeId, paymentIntentId, credit) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* creditInTransaction(sql, credit)
            yield* sql`
              UPDATE auto_recharges SET status = 'succeeded', payment_intent_id = ${paymentIntentId}, last_error = NULL, completed_at = now()
              WHERE id = ${rechargeId} AND status = 'pending'`
          })).pipe(Effect.orDie),
        fail: (rechargeId, error) =>
          sql`UPDATE auto_recharges SET status = 'failed', last_error = ${error}, completed_at = now() WHERE id = ${rechargeId} AND status = 'pending'`.pipe(
            Effect.asVoid,
            Effect.orDie
          ),
        retryLater: (rechargeId, error, delaySeconds) =>
          sql`UPDATE auto_recharges SET last_error = ${error},
              next_attempt_at = now() + ${`${delaySeconds} seconds`}::interval
              WHERE id = ${rechargeId} AND status = 'pending'`.pipe(Effect.asVoid, Effect.orDie)
      }))
    })
  )
}
