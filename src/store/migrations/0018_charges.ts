/**
 * Charges of every kind and the monthly budget cap (src/billing/budget.ts): each project's cap,
 * the period's spend kept beside the balance (so a charge checks the cap without summing the
 * ledger), and the cost columns runs and tick runs were missing.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // A project's monthly spending cap in micro-USD (null or no row: no cap).
  yield* sql`
    CREATE TABLE project_budgets (
      project_id text PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
      monthly_cap_micros bigint CHECK (monthly_cap_micros >= 0),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  // Charges of the current period (positive micro-USD), kept in the transaction that appends them.
  yield* sql`ALTER TABLE credit_balances ADD COLUMN period_spent_micros bigint NOT NULL DEFAULT 0`
  yield* sql`
    UPDATE credit_balances b SET period_spent_micros = coalesce((
      SELECT -sum(amount_micros) FROM credit_ledger l
      WHERE l.project_id = b.project_id AND l.period_start = b.period_start AND l.kind LIKE 'charge\\_%'), 0)`
  // A run's browser time, proxy traffic and product fee (DeepResearch, WebSearch), beside llm_cost_usd.
  yield* sql`
    ALTER TABLE runs
      ADD COLUMN browser_cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
      ADD COLUMN proxy_cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
      ADD COLUMN service_cost_usd numeric(14, 6) NOT NULL DEFAULT 0`
  // A tick's fee (track_per_tick), beside its llm_cost_micros.
  yield* sql`ALTER TABLE monitor_runs ADD COLUMN service_cost_micros bigint NOT NULL DEFAULT 0`
})
