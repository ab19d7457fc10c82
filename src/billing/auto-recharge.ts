/**
 * Auto-recharge: when a project's balance falls below its threshold, charge its saved Stripe
 * customer the top-up amount and credit the additional bucket, never past the monthly cap.
 *
 * Outside the charge transaction, as an outbox:
 * 1. `queue` (every process, every WA_AUTO_RECHARGE_POLL_MS): for each enabled, armed project
 *    whose balance is below the threshold, in one transaction under the settings row's lock
 *    (SKIP LOCKED: one process takes it), check the month's cap (pending and succeeded recharges
 *    of the calendar month, UTC, plus this one), insert a `pending` recharge and disarm the
 *    settings. Settings re-arm when a credit (a recharge, top-up or grant) brings the balance back
 *    to the threshold, and at each pass that sees it there: at most one recharge per crossing.
 * 2. `send`: a due pending recharge is leased (next_attempt_at moved a minute on, so one process
 *    sends it), then sent to the provider as a confirmed off-session PaymentIntent whose
 *    Idempotency-Key is the recharge id: a retry after a crash or timeout charges once. On success
 *    the additional bucket is credited under the ledger key `auto_recharge:<id>` and the recharge
 *    is `succeeded` in one transaction (a credit that lifts the balance to the threshold re-arms the
 *    settings, in the crediting transaction: src/store/ledger.ts); a declined payment is `failed` at once (the settings stay
 *    disarmed until the balance is back above the threshold); other errors are retried with
 *    backoff, up to MAX_ATTEMPTS.
 */
import { Context, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { creditInTransaction } from "../store/ledger.ts"
import { StripeBilling } from "./stripe.ts"

export const AUTO_RECHARGE_KIND = "topup_auto_recharge"
const MAX_ATTEMPTS = 8
const LEASE_SECONDS = 60

export interface AutoRechargeSettings {
  readonly projectId: string
  readonly enabled: boolean
  readonly thresholdMicros: number
  readonly amountMicros: number
  readonly monthlyCapMicros: number
  readonly stripeCustomerId: string | null
  readonly stripePaymentMethodId: string | null
  readonly armed: boolean
  readonly updatedAt: Date | null
}

export interface Recharge {
  readonly id: string
  readonly amountMicros: number
  readonly status: "pending" | "succeeded" | "failed"
  readonly attempts: number
  readonly paymentIntentId: string | null
  readonly lastError: string | null
  readonly createdAt: Date
  readonly completedAt: Date | null
}

export interface AutoRechargeView {
  readonly settings: AutoRechargeSettings
  /** Pending and succeeded recharges of the current calendar month (UTC), micro-USD. */
  readonly monthMicros: number
  /** The latest recharges, newest first (at most 10). */
  readonly recent: ReadonlyArray<Recharge>
}

export type AutoRechargeInput = Omit<AutoRechargeSettings, "projectId" | "armed" | "updatedAt">

interface SettingsRow {
  readonly project_id: string
  readonly enabled: boolean
  readonly threshold_micros: string
  readonly amount_micros: string
  readonly monthly_cap_micros: string
  readonly stripe_customer_id: string | null
  readonly stripe_payment_method_id: string | null
  readonly armed: boolean
  readonly updated_at: Date
}

const toSettings = (row: SettingsRow): AutoRechargeSettings => ({
  projectId: row.project_id,
  enabled: row.enabled,
  thresholdMicros: Number(row.threshold_micros),
  amountMicros: Number(row.amount_micros),
  monthlyCapMicros: Number(row.monthly_cap_micros),
  stripeCustomerId: row.stripe_customer_id,
  stripePaymentMethodId: row.stripe_payment_method_id,
  armed: row.armed,
  updatedAt: row.updated_at
})

/** The balance as charges see it: monthly credits of an ended period count as 0. */
const balanceSql = "(CASE WHEN b.period_end <= now() THEN 0 ELSE b.monthly_micros END + b.additional_micros)"

export class AutoRecharge extends Context.Service<AutoRecharge, {
  readonly view: (projectId: string) => Effect.Effect<AutoRechargeView>
  readonly update: (projectId: string, input: AutoRechargeInput) => Effect.Effect<AutoRechargeView>
  /** Re-arms and queues recharges (step 1); returns the ids queued. */
  readonly queue: Effect.Effect<ReadonlyArray<string>>
  /** Sends due pending recharges (step 2); returns how many were sent. */
  readonly send: Effect.Effect<number>
}>()("wa/billing/AutoRecharge") {
  static readonly layer = Layer.effect(
    AutoRecharge,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const stripe = yield* StripeBilling

      const view = Effect.fn("AutoRecharge.view")(function*(projectId: string) {
        // One snapshot for the three reads: a recharge that succeeds between them must not show
        // as succeeded beside the settings as they were before its credit re-armed them.
        return yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`
          const [row] = yield* sql<SettingsRow>`
            SELECT project_id, enabled, threshold_micros::text, amount_micros::text, monthly_cap_micros::text,
              stripe_customer_id, stripe_payment_method_id, armed, updated_at
            FROM auto_recharge_settings WHERE project_id = ${projectId}`
          const [month] = yield* sql<{ total: string }>`
            SELECT coalesce(sum(amount_micros), 0)::text AS total FROM auto_recharges
            WHERE project_id = ${projectId} AND month_start = date_trunc('month', now(), 'UTC') AND status IN ('pending', 'succeeded')`
          const recent = yield* sql<{
            id: string
            amount_micros: string
            status: Recharge["status"]
            attempts: number
            payment_intent_id: string | null
            last_error: string | null
            created_at: Date
            completed_at: Date | null
          }>`
            SELECT id, amount_micros::text, status, attempts, payment_intent_id, last_error, created_at, completed_at
            FROM auto_recharges WHERE project_id = ${projectId} ORDER BY created_at DESC, id DESC LIMIT 10`
          return {
            settings: row === undefined
              ? {
                projectId,
                enabled: false,
                thresholdMicros: 0,
                amountMicros: 0,
                monthlyCapMicros: 0,
                stripeCustomerId: null,
                stripePaymentMethodId: null,
                armed: true,
                updatedAt: null
              }
              : toSettings(row),
            monthMicros: Number(month!.total),
            recent: recent.map((r) => ({
              id: r.id,
              amountMicros: Number(r.amount_micros),
              status: r.status,
              attempts: r.attempts,
              paymentIntentId: r.payment_intent_id,
              lastError: r.last_error,
              createdAt: r.created_at,
              completedAt: r.completed_at
            }))
          }
        }))
      }, Effect.orDie)

      const queue = Effect.gen(function*() {
        yield* sql`
          UPDATE auto_recharge_settings s SET armed = true
          FROM credit_balances b
          WHERE b.project_id = s.project_id AND NOT s.armed AND ${sql.literal(balanceSql)} >= s.threshold_micros
            AND NOT EXISTS (SELECT 1 FROM auto_recharges r WHERE r.project_id = s.project_id AND r.status = 'pending')`
        return yield* sql.withTransaction(Effect.gen(function*() {
          const due = yield* sql<{ project_id: string; amount_micros: string; monthly_cap_micros: string }>`
            SELECT s.project_id, s.amount_micros::text, s.monthly_cap_micros::text
            FROM auto_recharge_settings s JOIN credit_balances b ON b.project_id = s.project_id
            WHERE s.enabled AND s.armed AND s.stripe_customer_id IS NOT NULL AND ${sql.literal(balanceSql)} < s.threshold_micros
              AND NOT EXISTS (SELECT 1 FROM auto_recharges r WHERE r.project_id = s.project_id AND r.status = 'pending')
            ORDER BY s.project_id
            LIMIT 100
            FOR UPDATE OF s SKIP LOCKED`
          const queued: Array<string> = []
          for (const row of due) {
            const amount = Number(row.amount_micros)
            const [month] = yield* sql<{ total: string }>`
              SELECT coalesce(sum(amount_micros), 0)::text AS total FROM auto_recharges
              WHERE project_id = ${row.project_id} AND month_start = date_trunc('month', now(), 'UTC') AND status IN ('pending', 'succeeded')`
            // Over the cap: nothing queued, the settings stay armed (next month's cap may allow it).
            if (Number(month!.total) + amount > Number(row.monthly_cap_micros)) continue
            const id = `arc_${crypto.randomUUID().replaceAll("-", "")}`
            yield* sql`
              INSERT INTO auto_recharges (id, project_id, amount_micros, month_start, status)
              VALUES (${id}, ${row.project_id}, ${amount}, date_trunc('month', now(), 'UTC'), 'pending')`
            yield* sql`UPDATE auto_recharge_settings SET armed = false WHERE project_id = ${row.project_id}`
            queued.push(id)
          }
          return queued
        }))
      }).pipe(Effect.orDie, Effect.withSpan("AutoRecharge.queue"))

      const sendOne = (recharge: { id: string; project_id: string; amount_micros: string; attempts: number }) =>
        Effect.gen(function*() {
          const [settings] = yield* sql<{ stripe_customer_id: string | null; stripe_payment_method_id: string | null }>`
            SELECT stripe_customer_id, stripe_payment_method_id FROM auto_recharge_settings WHERE project_id = ${recharge.project_id}`
          const amountMicros = Number(recharge.amount_micros)
          const outcome = yield* Effect.result(stripe.createPaymentIntent({
            amountCents: Math.round(amountMicros / 10_000),
            customerId: settings?.stripe_customer_id ?? "",
            paymentMethodId: settings?.stripe_payment_method_id ?? null,
            idempotencyKey: `auto_recharge:${recharge.id}`,
            metadata: { project_id: recharge.project_id, auto_recharge_id: recharge.id }
          }))
          if (outcome._tag === "Success") {
            yield* sql.withTransaction(Effect.gen(function*() {
              yield* creditInTransaction(sql, {
                projectId: recharge.project_id,
                micros: amountMicros,
                bucket: "additional",
                kind: AUTO_RECHARGE_KIND,
                idempotencyKey: `auto_recharge:${recharge.id}`
              })
              yield* sql`
                UPDATE auto_recharges SET status = 'succeeded', payment_intent_id = ${outcome.success.id}, last_error = NULL, completed_at = now()
                WHERE id = ${recharge.id} AND status = 'pending'`
            }))
            return
          }
          const failure = outcome.failure
          const message = failure._tag === "StripeNotConfigured" ? `${failure.variable} is not set` : failure.message
          const final = failure._tag === "StripeNotConfigured" || !failure.retryable || recharge.attempts >= MAX_ATTEMPTS
          yield* Effect.logWarning("auto-recharge payment failed").pipe(Effect.annotateLogs({ recharge_id: recharge.id, final, error: message }))
          yield* (final
            ? sql`UPDATE auto_recharges SET status = 'failed', last_error = ${message.slice(0, 1000)}, completed_at = now() WHERE id = ${recharge.id} AND status = 'pending'`
            : sql`UPDATE auto_recharges SET last_error = ${message.slice(0, 1000)},
                next_attempt_at = now() + ${`${Math.min(2 ** recharge.attempts, 300)} seconds`}::interval
                WHERE id = ${recharge.id} AND status = 'pending'`)
        })

      const send = Effect.gen(function*() {
        // The lease: a process that dies mid-call leaves the row due again a minute later.
        const leased = yield* sql<{ id: string; project_id: string; amount_micros: string; attempts: number }>`
          UPDATE auto_recharges SET attempts = attempts + 1, next_attempt_at = now() + ${`${LEASE_SECONDS} seconds`}::interval
          WHERE id IN (
            SELECT id FROM auto_recharges WHERE status = 'pending' AND next_attempt_at <= now()
            ORDER BY next_attempt_at LIMIT 20 FOR UPDATE SKIP LOCKED)
          RETURNING id, project_id, amount_micros::text, attempts`
        yield* Effect.forEach(leased, sendOne, { concurrency: 4, discard: true })
        return leased.length
      }).pipe(Effect.orDie, Effect.withSpan("AutoRecharge.send"))

      return AutoRecharge.of({
        view,
        update: Effect.fn("AutoRecharge.update")(function*(projectId: string, input: AutoRechargeInput) {
          yield* sql`
            INSERT INTO auto_recharge_settings (project_id, enabled, threshold_micros, amount_micros, monthly_cap_micros, stripe_customer_id, stripe_payment_method_id)
            VALUES (${projectId}, ${input.enabled}, ${input.thresholdMicros}, ${input.amountMicros}, ${input.monthlyCapMicros},
              ${input.stripeCustomerId}, ${input.stripePaymentMethodId})
            ON CONFLICT (project_id) DO UPDATE SET enabled = EXCLUDED.enabled, threshold_micros = EXCLUDED.threshold_micros,
              amount_micros = EXCLUDED.amount_micros, monthly_cap_micros = EXCLUDED.monthly_cap_micros,
              stripe_customer_id = EXCLUDED.stripe_customer_id, stripe_payment_method_id = EXCLUDED.stripe_payment_method_id,
              updated_at = now()`.pipe(Effect.orDie)
          // Disabled: queued recharges never sent are dropped; one already sent may have charged
          // (a timeout), so it is finished with its Idempotency-Key like any other.
          if (!input.enabled) {
            yield* sql`
              UPDATE auto_recharges SET status = 'failed', last_error = 'auto-recharge was disabled before it was sent', completed_at = now()
              WHERE project_id = ${projectId} AND status = 'pending' AND attempts = 0`.pipe(Effect.orDie)
          }
          return yield* view(projectId)
        }),
        queue,
        send
      })
    })
  ).pipe(Layer.provide(StripeBilling.layer))
}

/** The background loop of every API process: queue, then send, every WA_AUTO_RECHARGE_POLL_MS. */
export const AutoRechargeLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  const recharge = yield* AutoRecharge
  yield* Effect.forkScoped(
    Effect.gen(function*() {
      yield* recharge.queue
      yield* recharge.send
    }).pipe(
      Effect.catchCause((cause) => Effect.logWarning("auto-recharge pass failed", cause)),
      Effect.repeat(Schedule.spaced(`${config.autoRechargePollMs} millis`))
    )
  )
})).pipe(Layer.provide(AutoRecharge.layer))
