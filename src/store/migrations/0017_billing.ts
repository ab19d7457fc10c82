/**
 * Tables of billing (src/billing/ledger.ts): the append-only credit ledger and each project's
 * balance row, which is both the derived balance and the per-project lock charges take.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Amounts in integer micro-USD: + credit, - debit. A charge split across both buckets is two
  // rows with the same idempotency key, one per bucket, so (key, bucket) is unique.
  yield* sql`
    CREATE TABLE credit_ledger (
      id bigserial PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
      kind text NOT NULL,
      bucket text NOT NULL CHECK (bucket IN ('monthly', 'additional')),
      amount_micros bigint NOT NULL,
      run_id text,
      session_id text,
      idempotency_key text NOT NULL,
      period_start timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (idempotency_key, bucket)
    )`
  yield* sql`CREATE INDEX credit_ledger_project ON credit_ledger (project_id, id DESC)`
  // Sums of the ledger per bucket (kept in the transaction that appends), and the current period.
  yield* sql`
    CREATE TABLE credit_balances (
      project_id text PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
      monthly_micros bigint NOT NULL DEFAULT 0,
      additional_micros bigint NOT NULL DEFAULT 0,
      period_start timestamptz NOT NULL,
      period_end timestamptz NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
})
