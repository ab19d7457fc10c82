/**
 * Billing on the wire: a project's credit account, its ledger entries, its budget, and the query
 * of the ledger (src/http/api/billing.ts).
 */
import { Schema } from "effect"
import { LedgerKinds } from "../billing.ts"
import { UsdAmount } from "../run.ts"
import { PageQuery } from "../pagination.ts"

const Usd = (description: string) => Schema.String.annotate({ description, examples: ["12.50"] })

export const BillingAccountResponse = Schema.Struct({
  project_id: Schema.String,
  period_start: Schema.String.annotate({ description: "Start of the current billing period (a calendar month, UTC), ISO 8601" }),
  period_end: Schema.NullOr(Schema.String).annotate({ description: "End of the current billing period (exclusive); monthly credits expire then" }),
  plan: Schema.String.annotate({
    description: "The id of the plan in effect (the shipped table: free, dev, business, scaleup; see GET .../billing/quota). " +
      "The spec's `default` is the operator's default plan, the one a project without a plan of its own is on: it is named " +
      "by its id here (WA_DEFAULT_PLAN; shipped: dev), so `plan` always names a row of the plan table. An operator who " +
      "wants the literal value names that plan `default` in WA_PLANS_FILE.",
    examples: ["dev"]
  }),
  sessions_count: Schema.Int.annotate({ description: "DoAnything sessions created in the current period" }),
  credit_balance_usd: Usd("Credits left: monthly plus additional (can be slightly negative by the last charge in flight)"),
  held_usd: Usd("Of credit_balance_usd, what is held for runs and monitor ticks under way (their estimated charges, settled when each ends): not free to spend until then"),
  monthly_credits_usd: Usd("Monthly credits left in the current period (spent first; expire at period_end)"),
  additional_credits_usd: Usd("Additional credits left (top-ups; never expire)"),
  llm_cost_usd: Usd("LLM charges in the current period"),
  browser_cost_usd: Usd("Browser charges in the current period"),
  proxy_cost_usd: Usd("Proxy charges in the current period"),
  service_cost_usd: Usd("Product fees in the current period: DeepResearch runs, WebSearch queries, Track ticks"),
  total_cost_usd: Usd("All charges in the current period (llm + browser + proxy + service)")
}).annotate({ identifier: "BillingAccountResponse" })

export const LedgerEntry = Schema.Struct({
  id: Schema.String,
  kind: Schema.Literals(LedgerKinds).annotate({
    description: "Credits: grant_monthly (the plan's monthly grant), topup (an operator's grant), topup_stripe (a Stripe checkout), " +
      "topup_auto_recharge (an automatic recharge); expire_monthly (monthly credits left at the period's end, written off); " +
      "charges (the period's spend): charge_llm, charge_browser, charge_proxy, charge_research, charge_search, charge_track"
  }),
  bucket: Schema.Literals(["monthly", "additional"]),
  amount_usd: Schema.String.annotate({ description: "Signed, six decimals (exact): + credit, - debit", examples: ["-0.001234"] }),
  amount_micros: Schema.Int.annotate({ description: "The same amount in integer micro-USD" }),
  run_id: Schema.NullOr(Schema.String),
  session_id: Schema.NullOr(Schema.String),
  idempotency_key: Schema.String.annotate({ description: "A charge's key, e.g. llm:<run_id>:<step>; a split charge has one entry per bucket under one key" }),
  period_start: Schema.String,
  created_at: Schema.String
}).annotate({ identifier: "LedgerEntry" })

export const UsageResponse = Schema.Struct({
  items: Schema.Array(LedgerEntry),
  next_cursor: Schema.NullOr(Schema.String)
})

export const BudgetResponse = Schema.Struct({
  project_id: Schema.String,
  monthly_cap_usd: Schema.NullOr(Schema.String).annotate({ description: "The monthly spending cap (the monthly quota); null: no cap", examples: ["25.00"] }),
  spent_usd: Usd("Charged in the current billing period"),
  remaining_usd: Schema.NullOr(Schema.String).annotate({ description: "Cap minus spend, not below 0.00; null without a cap" }),
  warning: Schema.Boolean.annotate({ description: "Spend is at or above 80 % of the cap (one billing.quota_warning per period goes to the inbox)" }),
  exceeded: Schema.Boolean.annotate({ description: "Spend is at or above the cap: running runs end budget_exceeded, new runs get 402 budget_exceeded" }),
  period_start: Schema.String,
  period_end: Schema.String
}).annotate({ identifier: "BudgetResponse" })

export const SetBudgetRequest = Schema.Struct({
  monthly_cap_usd: Schema.NullOr(UsdAmount).annotate({ description: "USD per billing period (\"25.00\" or 25), at most 1000000; null removes the cap" })
}).annotate({ identifier: "SetBudgetRequest" })

/** The query of the ledger: a page, filtered by kind and creation time. */
export const UsageQuery = {
  ...PageQuery,
  kind: Schema.optional(Schema.Literals(LedgerKinds)).annotate({ description: "Only entries of this kind (another value: 422 validation_error)" }),
  from: Schema.optional(Schema.String.check(Schema.isMaxCodePoints(64))).annotate({ description: "Entries created at or after (ISO 8601)" }),
  to: Schema.optional(Schema.String.check(Schema.isMaxCodePoints(64))).annotate({ description: "Entries created before (ISO 8601)" })
}
