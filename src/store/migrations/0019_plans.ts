/**
 * Tables of plans, Stripe top-ups and auto-recharge (src/billing/plans.ts, auto-recharge.ts).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // A project's subscription, set by the operator (`wa plans set`). No row: the project is on the
  // default plan (WA_DEFAULT_PLAN) without a subscription, so it gets no monthly credits.
  // monthly_credits_micros and monthly_quota_micros mirror the plan table (refreshed at start), so the ledger can grant
  // a period's credits in the transaction that opens the period (src/billing/ledger.ts).
  yield* sql`
    CREATE TABLE project_plans (
      project_id text PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
      plan_id text NOT NULL,
      monthly_credits_micros bigint NOT NULL DEFAULT 0,
      monthly_quota_micros bigint,
      subscription_status text NOT NULL DEFAULT 'active' CHECK (subscription_status IN ('active', 'canceled')),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  // The default plan's monthly quota (null: none), mirrored at start like the subscriptions' own
  // (monthly_quota_micros above), so the ledger reads a project's cap in the statement that locks
  // its balance (capSubquery in src/store/ledger.ts). One row.
  yield* sql`
    CREATE TABLE plan_defaults (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      plan_id text NOT NULL,
      monthly_quota_micros bigint
    )`
  // Auto-recharge settings per project. `armed` is false from the moment a recharge is queued
  // until the balance is back at or above the threshold: one recharge per threshold crossing.
  yield* sql`
    CREATE TABLE auto_recharge_settings (
      project_id text PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
      enabled boolean NOT NULL,
      threshold_micros bigint NOT NULL,
      amount_micros bigint NOT NULL,
      monthly_cap_micros bigint NOT NULL,
      stripe_customer_id text,
      stripe_payment_method_id text,
      armed boolean NOT NULL DEFAULT true,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  // The recharge outbox: queued in the transaction that disarms the settings, sent to the
  // provider outside it with the row id as the Idempotency-Key, credited once (ledger key
  // auto_recharge:<id>). month_start: the calendar month (UTC) whose cap the recharge counts against.
  yield* sql`
    CREATE TABLE auto_recharges (
      id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
      amount_micros bigint NOT NULL,
      month_start timestamptz NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL DEFAULT now(),
      payment_intent_id text,
      last_error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz
    )`
  yield* sql`CREATE INDEX auto_recharges_project ON auto_recharges (project_id, month_start)`
  yield* sql`CREATE INDEX auto_recharges_due ON auto_recharges (next_attempt_at) WHERE status = 'pending'`
})
