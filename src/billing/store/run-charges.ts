/**
 * What a run is charged (its steps' model tokens, its browser time, a product's fee) and the
 * credit hold a new run takes: with WA_BILLING=on each charge is also an entry of the credit
 * ledger (src/billing/store/ledger.ts), once per idempotency key, and a new run is admitted against its
 * estimated charge (src/billing/store/credit-holds.ts). The run's and its session's cost fields take what
 * was charged, with one `run.cost_update` event. Every function here runs inside the caller's
 * transaction, which holds the run row lock (src/store/run-log.ts), so the work, its charge and
 * the cost fields commit together.
 */
import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../../config/config.ts"
import { browserUsd } from "../../config/prices.ts"
import type { Exhausted, LedgerKind } from "../../domain/billing.ts"
import { costFields, toMicros, usd, usdFromMicros, usdSum } from "../../domain/money.ts"
import type { ProjectId, Run, RunId, SessionId } from "../../domain/run.ts"
import type { EventData } from "../../domain/events.ts"
import { estimatedChargeMicros, holdInTransaction } from "./credit-holds.ts"
import { chargeAllInTransaction } from "./ledger.ts"
import { decodeRows } from "../../domain/rows.ts"

/** A step charges the browser time due once it is at least this much (micro-USD); the run's end charges the rest. */
export const MIN_BROWSER_STEP_MICROS = 1_000

export type CostColumn = "llm" | "browser" | "proxy" | "service"

/** One cost of a run, charged once per idempotency key (see RunStore.chargeRun). */
export interface RunCharge {
  /** The ledger entry's kind: charge_llm, charge_browser, charge_proxy, charge_research, charge_search, ... */
  readonly kind: LedgerKind
  readonly column: CostColumn
  readonly micros: number
  readonly idempotencyKey: string
  /**
   * Record it even when the project cannot pay (the work is done: tokens spent, browser time
   * used). Default true; false refuses it (an up-front fee), see `refused`.
   */
  readonly force?: boolean
}

export interface ChargeResult {
  /** With billing on: the project can pay for no more work (credits ran out, or its budget cap is reached). */
  readonly exhausted: Exhausted | null
  /** A charge that was not forced was refused (nothing recorded for it). */
  readonly refused: boolean
}

/** browserDue's row: the run's browser time so far (ms, null before it started) and what it was charged (micro-USD); bigints as text. */
const BrowserTimeRow = Schema.Struct({ ms: Schema.NullOr(Schema.String), charged: Schema.String })
/** A session's cost fields after a charge (numeric, as text). */
const SessionCostsRow = Schema.Struct({ llm_cost_usd: Schema.String, browser_cost_usd: Schema.String, proxy_cost_usd: Schema.String })
/** A run's cost fields after a charge (numeric, as text). */
const RunCostsRow = Schema.Struct({ ...SessionCostsRow.fields, service_cost_usd: Schema.String })

/** The charging of runs, made where a store is built (it reads the billing settings once). */
/** The run a charge is for, as the caller's transaction locked it. */
export interface ChargedRun {
  readonly id: RunId
  readonly project_id: ProjectId
  readonly session_id: SessionId | null
}

/**
 * A run's charges. `recordCostUpdate` writes the run.cost_update event into the run's log (the run
 * store's, src/store/run-log.ts): billing's persistence sits below the run store and does not
 * reach into it.
 */
export const makeRunCharges = (recordCostUpdate: (sql: SqlClient.SqlClient, runId: RunId, data: EventData<"run.cost_update">) => Effect.Effect<unknown, SqlError>) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // WA_BILLING=on: every cost is also an entry of the credit ledger (charge_llm, charge_browser, ...).
  const appConfig = yield* Effect.serviceOption(AppConfig)
  const billing = Option.match(appConfig, { onNone: () => false, onSome: (c) => c.billing === "on" })
  const prices = Option.map(appConfig, (c) => c.prices)
  const minBalanceMicros = Option.match(appConfig, { onNone: () => 0, onSome: (c) => toMicros(c.billingMinBalanceUsd) })

  /**
   * Billing on: admits a new run against its estimated charge and holds it from the balance
   * (src/billing/store/credit-holds.ts), or refuses it (402). In the transaction that inserts the run.
   */
  const holdFor = (run: Pick<Run, "id" | "project_id" | "request">) =>
    !billing || Option.isNone(prices) ? Effect.void : holdInTransaction(sql, {
      projectId: run.project_id,
      runId: run.id,
      kind: "run",
      micros: estimatedChargeMicros(run.request, prices.value, minBalanceMicros),
      minimumMicros: minBalanceMicros
    })

  /**
   * Browser time of a DoAnything run not charged yet: from its start to now, at
   * browser_per_minute, minus what its browser_cost_usd already holds. Cumulative, so a step
   * whose charge was skipped (its key recorded by an earlier execution) is caught up by the next.
   * Must run inside a transaction that holds the run row lock.
   */
  const browserDue = (runId: RunId) =>
    Effect.gen(function*() {
      if (Option.isNone(prices)) return 0
      const [row] = yield* decodeRows(BrowserTimeRow)(sql`
        SELECT floor(extract(epoch FROM now() - started_at) * 1000)::bigint::text AS ms, round(browser_cost_usd * 1000000)::bigint::text AS charged
        FROM runs WHERE id = ${runId} AND kind = 'do_anything'`)
      if (row === undefined || row.ms === null) return 0
      return Math.max(0, toMicros(browserUsd(prices.value, Number(row.ms))) - Number(row.charged))
    })

  /**
   * Charges (billing on: in the ledger, once per key) and adds what was charged to the run's and
   * its session's cost fields, with one run.cost_update event. Inside the caller's transaction,
   * which holds the run row lock, so the work, its charge and the cost fields commit together.
   */
  const applyCharges = (run: ChargedRun, charges: ReadonlyArray<RunCharge>, eventData: { readonly step?: number; readonly final?: boolean } = {}) =>
    Effect.gen(function*() {
      let exhausted: Exhausted | null = null
      let refused = false
      const added: Record<CostColumn, number> = { llm: 0, browser: 0, proxy: 0, service: 0 }
      const due = charges.filter((charge) => charge.micros > 0)
      if (billing && due.length > 0) {
        // One lock of the project's balance for all of them (three statements in all).
        const charged = yield* chargeAllInTransaction(sql, run.project_id, due.map((charge) => ({
          kind: charge.kind,
          micros: charge.micros,
          idempotencyKey: charge.idempotencyKey,
          runId: run.id,
          sessionId: run.session_id,
          force: charge.force ?? true
        })))
        exhausted = charged.exhausted
        due.forEach((charge, i) => {
          const outcome = charged.outcomes[i]!
          refused ||= outcome.refused
          if (outcome.recorded) added[charge.column] += charge.micros
        })
      } else {
        for (const charge of due) added[charge.column] += charge.micros
      }
      const increment = added.llm + added.browser + added.proxy + added.service
      if (increment === 0) return { exhausted, refused }
      // The cost fields take the amounts the ledger took, to the micro-dollar.
      const [totals] = yield* decodeRows(RunCostsRow)(sql`
        UPDATE runs SET llm_cost_usd = llm_cost_usd + ${usdFromMicros(added.llm)}::numeric, browser_cost_usd = browser_cost_usd + ${usdFromMicros(added.browser)}::numeric,
          proxy_cost_usd = proxy_cost_usd + ${usdFromMicros(added.proxy)}::numeric, service_cost_usd = service_cost_usd + ${usdFromMicros(added.service)}::numeric
        WHERE id = ${run.id} RETURNING llm_cost_usd, browser_cost_usd, proxy_cost_usd, service_cost_usd`)
      const sessions = run.session_id === null ? [] : yield* decodeRows(SessionCostsRow)(sql`
        UPDATE sessions SET llm_cost_usd = llm_cost_usd + ${usdFromMicros(added.llm)}::numeric, browser_cost_usd = browser_cost_usd + ${usdFromMicros(added.browser)}::numeric,
          proxy_cost_usd = proxy_cost_usd + ${usdFromMicros(added.proxy)}::numeric, updated_at = now()
        WHERE id = ${run.session_id} RETURNING llm_cost_usd, browser_cost_usd, proxy_cost_usd`)
      const runTotals = totals!
      yield* recordCostUpdate(sql, run.id, {
        ...eventData,
        increment_usd: usdFromMicros(increment),
        // A run without a session (DeepResearch, WebSearch) reports its own totals.
        ...(sessions[0] === undefined
          ? {
            llm_cost_usd: usd(runTotals.llm_cost_usd),
            service_cost_usd: usd(runTotals.service_cost_usd),
            total_cost_usd: usdSum(runTotals.llm_cost_usd, runTotals.browser_cost_usd, runTotals.proxy_cost_usd, runTotals.service_cost_usd)
          }
          : costFields(sessions[0]))
      })
      return { exhausted, refused }
    })

  return { billing, holdFor, browserDue, applyCharges }
})

/** The four cost fields of the spec (src/domain/money.ts). */
export { costFields }
