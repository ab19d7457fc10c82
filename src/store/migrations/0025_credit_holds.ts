/**
 * Credit holds (src/store/credit-holds.ts): what a run or a monitor tick was admitted against, held from
 * the balance until it ends.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE credit_holds (
      -- The run (kind run) or the monitor tick (kind tick) the hold was taken for; one hold each.
      run_id text PRIMARY KEY,
      project_id text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('run', 'tick')),
      amount_micros bigint NOT NULL CHECK (amount_micros >= 0),
      -- What the ledger has charged the run since (kept by every charge): the hold shrinks by it.
      charged_micros bigint NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX credit_holds_project ON credit_holds (project_id)`
})
