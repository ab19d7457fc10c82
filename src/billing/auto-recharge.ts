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
import { AppConfig } from "../config/config.ts"
import { type AutoRechargeInput, type AutoRechargeSettings, type LeasedRecharge, type Recharge, RechargeStore } from "./store/recharge-store.ts"
import { StripeBilling } from "./stripe.ts"
import type { AutoRechargeId } from "../domain/id-schemas.ts"
import { makeId } from "../domain/ids.ts"
import type { ProjectId } from "../domain/run.ts"

export type { AutoRechargeInput, AutoRechargeSettings, Recharge }

export const AUTO_RECHARGE_KIND = "topup_auto_recharge"
const MAX_ATTEMPTS = 8
const LEASE_SECONDS = 60

export interface AutoRechargeView {
  readonly settings: AutoRechargeSettings
  /** Pending and succeeded recharges of the current calendar month (UTC), micro-USD. */
  readonly monthMicros: number
  /** The latest recharges, newest first (at most 10). */
  readonly recent: ReadonlyArray<Recharge>
}

export class AutoRecharge extends Context.Service<AutoRecharge, {
  readonly view: (projectId: ProjectId) => Effect.Effect<AutoRechargeView>
  readonly update: (projectId: ProjectId, input: AutoRechargeInput) => Effect.Effect<AutoRechargeView>
  /** Re-arms and queues recharges (step 1); returns the ids queued. */
  readonly queue: Effect.Effect<ReadonlyArray<AutoRechargeId>>
  /** Sends due pending recharges (step 2); returns how many were sent. */
  readonly send: Effect.Effect<number>
}>()("wa/billing/AutoRecharge") {
  static readonly layer = Layer.effect(
    AutoRecharge,
    Effect.gen(function*() {
      const store = yield* RechargeStore
      const stripe = yield* StripeBilling

      const view = Effect.fn("AutoRecharge.view")(function*(projectId: ProjectId) {
        const { settings, monthMicros, recent } = yield* store.view(projectId)
        return {
          settings: settings ?? {
            projectId,
            enabled: false,
            thresholdMicros: 0,
            amountMicros: 0,
            monthlyCapMicros: 0,
            stripeCustomerId: null,
            stripePaymentMethodId: null,
            armed: true,
            updatedAt: null
          },
          monthMicros,
          recent
        }
      })

      const queue = Effect.fn("AutoRecharge.queue")(function*() {
        yield* store.rearm
        return yield* store.transaction(Effect.gen(function*() {
          const due = yield* store.lockDue(100)
          const queued: Array<AutoRechargeId> = []
          for (const row of due) {
            const month = yield* store.monthTotal(row.projectId)
            // Over the cap: nothing queued, the settings stay armed (next month's cap may allow it).
            if (month + row.amountMicros > row.monthlyCapMicros) continue
            const id = makeId("arc")
            yield* store.queue(id, row.projectId, row.amountMicros)
            queued.push(id)
          }
          return queued
        }))
      })

      const sendOne = (recharge: LeasedRecharge) =>
        Effect.gen(function*() {
          const settings = yield* store.paymentMethod(recharge.projectId)
          const amountMicros = recharge.amountMicros
          const outcome = yield* Effect.result(stripe.createPaymentIntent({
            amountCents: Math.round(amountMicros / 10_000),
            customerId: settings?.customerId ?? "",
            paymentMethodId: settings?.paymentMethodId ?? null,
            idempotencyKey: `auto_recharge:${recharge.id}`,
            metadata: { project_id: recharge.projectId, auto_recharge_id: recharge.id }
          }))
          if (outcome._tag === "Success") {
            yield* store.succeed(recharge.id, outcome.success.id, {
              projectId: recharge.projectId,
              micros: amountMicros,
              bucket: "additional",
              kind: AUTO_RECHARGE_KIND,
              idempotencyKey: `auto_recharge:${recharge.id}`
            })
            return
          }
          const failure = outcome.failure
          const message = failure._tag === "StripeNotConfigured" ? `${failure.variable} is not set` : failure.message
          const final = failure._tag === "StripeNotConfigured" || !failure.retryable || recharge.attempts >= MAX_ATTEMPTS
          yield* Effect.logWarning("auto-recharge payment failed").pipe(Effect.annotateLogs({ recharge_id: recharge.id, final, error: message }))
          yield* (final
            ? store.fail(recharge.id, message.slice(0, 1000))
            : store.retryLater(recharge.id, message.slice(0, 1000), Math.min(2 ** recharge.attempts, 300)))
        })

      const send = Effect.fn("AutoRecharge.send")(function*() {
        // The lease: a process that dies mid-call leaves the row due again a minute later.
        const leased = yield* store.lease(20, LEASE_SECONDS)
        yield* Effect.forEach(leased, sendOne, { concurrency: 4, discard: true })
        return leased.length
      })

      return AutoRecharge.of({
        view,
        update: Effect.fn("AutoRecharge.update")(function*(projectId: ProjectId, input: AutoRechargeInput) {
          yield* store.saveSettings(projectId, input)
          // Disabled: queued recharges never sent are dropped; one already sent may have charged
          // (a timeout), so it is finished with its Idempotency-Key like any other.
          if (!input.enabled) yield* store.dropUnsent(projectId, "auto-recharge was disabled before it was sent")
          return yield* view(projectId)
        }),
        queue: queue(),
        send: send()
      })
    })
  ).pipe(Layer.provide(Layer.mergeAll(StripeBilling.layer, RechargeStore.layer)))
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
