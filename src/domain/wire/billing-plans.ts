/**
 * Plans and payments on the wire: a project's quota status, its auto-recharge settings and
 * recharges, and the answer to a Stripe webhook delivery (src/http/api/billing-plans.ts).
 */
import { Schema } from "effect"

const Micros = (description: string) => Schema.Int.annotate({ description: `${description}, in integer micro-USD (1 USD = 1,000,000)` })
const Usd = (description: string) => Schema.String.annotate({ description: `${description}; a decimal string exact to the micro-dollar, at least two decimals`, examples: ["12.50"] })

export const ConcurrencyUsage = Schema.Struct({
  key_id: Schema.String,
  key_name: Schema.NullOr(Schema.String),
  running: Schema.Int.annotate({ description: "Open (not closed) DoAnything sessions the key holds now: what the cap counts" }),
  cap: Schema.Int.annotate({ description: "Open sessions the key may hold (the plan's concurrency); one more gets 429 too_many_concurrent_sessions" })
}).annotate({ identifier: "ConcurrencyUsage" })

export const QuotaStatusResponse = Schema.Struct({
  project_id: Schema.String,
  plan_id: Schema.String.annotate({ description: "free, dev, business, scaleup (the operator's plan table)" }),
  plan_name: Schema.String,
  subscription_status: Schema.Literals(["active", "none"]).annotate({
    description: "active: the operator put the project on this plan (monthly credits are granted each period); none: the default plan, no monthly credits"
  }),
  monthly_credits: Micros("Monthly credits left in the current period"),
  additional_credits: Micros("Additional credits left (top-ups, auto-recharge; never expire)"),
  monthly_credits_usd: Usd("monthly_credits in USD"),
  additional_credits_usd: Usd("additional_credits in USD"),
  held: Micros("Credits held for runs and monitor ticks under way (their estimated charges, admitted against the balance and settled when each ends): not free to spend until then"),
  held_usd: Usd("held in USD"),
  plan_monthly_credits: Micros("Credits the plan grants each billing period to a subscribed project"),
  scheduled_cap: Schema.Int.annotate({ description: "Scheduled runs the project may have active at once" }),
  scheduled_running: Schema.Int.annotate({ description: "Scheduled runs active now" }),
  concurrency: Schema.Array(ConcurrencyUsage).annotate({ description: "One row per API key of the project that can still open sessions" }),
  period_start: Schema.String,
  period_end: Schema.String,
  monthly_quota: Schema.NullOr(Micros("The project's monthly spending quota (null: none)")),
  monthly_quota_usd: Schema.NullOr(Schema.String),
  quota_used: Micros("Charges of the current period"),
  quota_used_usd: Usd("quota_used in USD"),
  quota_used_percent: Schema.NullOr(Schema.Int).annotate({ description: "quota_used as a whole percentage of monthly_quota (rounded down); null without a quota" }),
  quota_warning: Schema.Boolean.annotate({ description: "quota_used is at or above 80 % of monthly_quota" }),
  quota_exceeded: Schema.Boolean.annotate({ description: "quota_used is at or above monthly_quota (the hard stop)" })
}).annotate({ identifier: "QuotaStatusResponse" })

const UsdAmount = Schema.String.check(Schema.isPattern(/^[0-9]{1,7}(\.[0-9]{1,2})?$/u)).annotate({
  description: "USD as a decimal string with at most two decimals",
  examples: ["10.00"]
})
const StripeId = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_]{1,255}$/u))

export const AutoRechargeRequest = Schema.Struct({
  enabled: Schema.Boolean,
  threshold_usd: UsdAmount.annotate({ description: "Recharge when the balance falls below this" }),
  amount_usd: UsdAmount.annotate({ description: "Top-up amount of one recharge (0.50 to 10000.00)" }),
  monthly_cap_usd: UsdAmount.annotate({ description: "Recharges of one calendar month (UTC) never add up to more than this" }),
  stripe_customer_id: Schema.NullOr(StripeId).annotate({ description: "The Stripe customer charged (cus_...); needed when enabled" }),
  stripe_payment_method_id: Schema.optionalKey(Schema.NullOr(StripeId)).annotate({
    description: "The saved payment method charged (pm_...); null: the customer's default"
  })
}).annotate({ identifier: "AutoRechargeRequest" })

export const AutoRechargeEntry = Schema.Struct({
  id: Schema.String,
  amount_usd: Schema.String,
  status: Schema.Literals(["pending", "succeeded", "failed"]),
  attempts: Schema.Int,
  payment_intent_id: Schema.NullOr(Schema.String),
  last_error: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  completed_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "AutoRechargeEntry" })

export const AutoRechargeResponse = Schema.Struct({
  project_id: Schema.String,
  enabled: Schema.Boolean,
  threshold_usd: Schema.String,
  amount_usd: Schema.String,
  monthly_cap_usd: Schema.String,
  stripe_customer_id: Schema.NullOr(Schema.String),
  stripe_payment_method_id: Schema.NullOr(Schema.String),
  armed: Schema.Boolean.annotate({ description: "false from a recharge until the balance is back at or above the threshold (one recharge per crossing)" }),
  recharged_this_month_usd: Schema.String.annotate({ description: "Pending and succeeded recharges of the calendar month (UTC)" }),
  recent: Schema.Array(AutoRechargeEntry).annotate({ description: "The latest recharges, newest first (at most 10)" }),
  updated_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "AutoRechargeResponse" })

export const StripeWebhookResponse = Schema.Struct({
  received: Schema.Boolean,
  event_id: Schema.String,
  type: Schema.String.annotate({ description: "the Stripe event's type as Stripe sent it (checkout.session.completed and checkout.session.async_payment_succeeded credit; any other is acknowledged and ignored)" }),
  credited: Schema.Boolean.annotate({ description: "This delivery credited the project (false: ignored, or credited by an earlier delivery)" }),
  duplicate: Schema.Boolean,
  project_id: Schema.NullOr(Schema.String),
  amount_usd: Schema.NullOr(Schema.String),
  ignored_reason: Schema.NullOr(Schema.String)
}).annotate({ identifier: "StripeWebhookResponse" })
