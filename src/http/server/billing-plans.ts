/** Handlers of plans and payments: QuotaStatus, auto-recharge settings, the Stripe webhook. */
import { Effect, Layer, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AutoRecharge, type AutoRechargeView } from "../../billing/auto-recharge.ts"
import { toMicros } from "../../domain/money.ts"
import { Quota, quotaUsedPercent } from "../../billing/quota.ts"
import { StripeBilling } from "../../billing/stripe.ts"
import { AppConfig } from "../../config/config.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey, requireScope } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { badRequest, conflict, type FieldError, validationError } from "../errors.ts"
import { iso } from "../views/timestamps.ts"
import { usdFromMicros } from "../../domain/money.ts"

const autoRechargeView = (view: AutoRechargeView) => ({
  project_id: view.settings.projectId,
  enabled: view.settings.enabled,
  threshold_usd: usdFromMicros(view.settings.thresholdMicros),
  amount_usd: usdFromMicros(view.settings.amountMicros),
  monthly_cap_usd: usdFromMicros(view.settings.monthlyCapMicros),
  stripe_customer_id: view.settings.stripeCustomerId,
  stripe_payment_method_id: view.settings.stripePaymentMethodId,
  armed: view.settings.armed,
  recharged_this_month_usd: usdFromMicros(view.monthMicros),
  recent: view.recent.map((r) => ({
    id: r.id,
    amount_usd: usdFromMicros(r.amountMicros),
    status: r.status,
    attempts: r.attempts,
    payment_intent_id: r.paymentIntentId,
    last_error: r.lastError,
    created_at: r.createdAt.toISOString(),
    completed_at: iso(r.completedAt)
  })),
  updated_at: iso(view.settings.updatedAt)
})

export const BillingPlansHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "billing_plans",
  Effect.fn(function*(handlers) {
    const quota = yield* Quota
    const recharge = yield* AutoRecharge
    const config = yield* AppConfig
    return handlers
      .handle("quota", () =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const status = yield* quota.status(projectId)
          const percent = quotaUsedPercent(status)
          return {
            project_id: projectId,
            plan_id: status.plan.id,
            plan_name: status.plan.name,
            subscription_status: status.subscriptionStatus,
            monthly_credits: status.balance.monthlyMicros,
            additional_credits: status.balance.additionalMicros,
            monthly_credits_usd: usdFromMicros(status.balance.monthlyMicros),
            additional_credits_usd: usdFromMicros(status.balance.additionalMicros),
            held: status.heldMicros,
            held_usd: usdFromMicros(status.heldMicros),
            plan_monthly_credits: status.plan.monthlyCreditsMicros,
            scheduled_cap: status.scheduledCap,
            scheduled_running: status.scheduledRunning,
            concurrency: status.concurrency.map((row) => ({ key_id: row.keyId, key_name: row.keyName, running: row.running, cap: row.cap })),
            period_start: status.balance.periodStart.toISOString(),
            period_end: status.balance.periodEnd.toISOString(),
            monthly_quota: status.quotaMicros,
            monthly_quota_usd: status.quotaMicros === null ? null : usdFromMicros(status.quotaMicros),
            quota_used: status.spentMicros,
            quota_used_usd: usdFromMicros(status.spentMicros),
            quota_used_percent: percent,
            quota_warning: status.warning,
            quota_exceeded: status.exceeded
          }
        }))
      .handle("getAutoRecharge", () =>
        Effect.gen(function*() {
          yield* requireScope("admin")
          const { projectId } = yield* CurrentKey
          return autoRechargeView(yield* recharge.view(projectId))
        }))
      .handle("putAutoRecharge", ({ payload }) =>
        Effect.gen(function*() {
          yield* requireScope("admin")
          const { projectId } = yield* CurrentKey
          const threshold = toMicros(Number(payload.threshold_usd))
          const amount = toMicros(Number(payload.amount_usd))
          const cap = toMicros(Number(payload.monthly_cap_usd))
          const errors: Array<FieldError> = []
          const field = (name: string, msg: string) => errors.push({ loc: ["body", name], msg, type: "value_error" })
          if (threshold > 1_000_000_000_000) field("threshold_usd", "at most 1000000.00")
          if (amount < 500_000 || amount > 10_000_000_000) field("amount_usd", "between 0.50 and 10000.00 (Stripe's minimum charge is 0.50 USD)")
          if (cap < amount) field("monthly_cap_usd", "at least amount_usd")
          if (payload.enabled && payload.stripe_customer_id === null) field("stripe_customer_id", "required when enabled")
          if (errors.length > 0) return yield* validationError("invalid auto-recharge settings", errors)
          if (payload.enabled && Option.isNone(config.stripeSecretKey)) {
            return yield* conflict("auto-recharge charges through Stripe: the operator must set WA_STRIPE_SECRET_KEY", {}, "stripe_not_configured")
          }
          return autoRechargeView(yield* recharge.update(projectId, {
            enabled: payload.enabled,
            thresholdMicros: threshold,
            amountMicros: amount,
            monthlyCapMicros: cap,
            stripeCustomerId: payload.stripe_customer_id,
            stripePaymentMethodId: payload.stripe_payment_method_id ?? null
          }))
        }))
  })
).pipe(Layer.provide(Layer.mergeAll(Quota.layer, AutoRecharge.layer)))

export const StripeWebhookHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "stripe_webhook",
  Effect.fn(function*(handlers) {
    const stripe = yield* StripeBilling
    // Raw: the signature is over the exact bytes Stripe sent.
    return handlers.handleRaw("stripeWebhook", ({ request }) =>
      Effect.gen(function*() {
        const body = yield* request.text.pipe(Effect.mapError(() => badRequest("the request body could not be read")))
        const outcome = yield* httpErrors(stripe.handleWebhook(body, request.headers["stripe-signature"]))
        return {
          received: true,
          event_id: outcome.eventId,
          type: outcome.type,
          credited: outcome.credited,
          duplicate: outcome.duplicate,
          project_id: outcome.projectId,
          amount_usd: outcome.amountUsd,
          ignored_reason: outcome.ignoredReason
        }
      }))
  })
).pipe(Layer.provide(StripeBilling.layer))
