/**
 * Credit holds: a run (or a monitor tick) is admitted against its estimated charge, held from the
 * project's balance in the transaction that admits it, so concurrent creates cannot all spend the
 * same credits (40 parallel creates at a balance of one charge admit one).
 *
 * - Admission (`holdInTransaction`) locks the project's balance row (lockBalance, the lock every
 *   charge takes), so admissions and charges of a project are serialised on every node. What is
 *   available is the balance minus the holds outstanding; the create is refused with
 *   InsufficientCredits (402) when that is below the larger of the estimate and
 *   WA_BILLING_MIN_BALANCE_USD, with BudgetExceeded (402) when the period's spend plus the holds
 *   reaches the monthly cap. Otherwise the hold is inserted, in the same transaction as the run.
 * - A hold shrinks by what the ledger charges its run (credit_holds.charged_micros, kept by every
 *   charge, src/billing/store/ledger.ts): a run is never counted twice, once in the balance and once in
 *   its hold.
 * - Settling: the real charges are the ledger's entries, written as the work is done; the run's
 *   end (every terminal transition, in its transaction) deletes the hold. A hold whose run has
 *   ended counts for nothing even before it is deleted (the outstanding sum looks at the run),
 *   so a hold cannot outlive its run; `releaseEndedHolds` deletes such rows at start-up.
 * - Estimates (`estimatedChargeMicros`): WebSearch its fee (web_search_per_query per distinct
 *   query), DeepResearch its fee (deep_research_per_run), a monitor tick its fee (track_per_tick);
 *   a DoAnything run, open-ended, holds WA_BILLING_MIN_BALANCE_USD, which its steps then spend.
 *   Model tokens come on top of a fee: a run that spends the balance below zero ends
 *   budget_exceeded at its next charge, so a project overshoots by at most what one admitted run
 *   spends past its hold.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { BudgetExceeded, InsufficientCredits } from "../../domain/errors.ts"
import type { ProjectId, RunRequest } from "../../domain/run.ts"
import { terminalStatuses } from "../../domain/run-state.ts"
import { toMicros } from "../../domain/money.ts"
import { lockBalance } from "./ledger.ts"
import type { PriceTable } from "../../config/prices.ts"
import { withMethodSpans } from "../../observability/spans.ts"
import { decodeRows } from "../../domain/rows.ts"

/** What a hold pays for: a run, or a monitor tick (a run of kind track_tick); both end as runs do. */
export type HoldKind = "run" | "tick"

export interface HoldRequest {
  readonly projectId: ProjectId
  /** The run's (or tick's) id; one hold each. */
  readonly runId: string
  readonly kind: HoldKind
  /** The estimated charge, held. */
  readonly micros: number
  /** What must be available besides (WA_BILLING_MIN_BALANCE_USD for runs). */
  readonly minimumMicros: number
}

/** The distinct, non-blank queries of a WebSearch request: what its fee is charged per. */
export const distinctQueries = (queries: ReadonlyArray<string>) => new Set(queries.map((query) => query.trim()).filter((query) => query !== "")).size

/** A run's estimated charge (see the module comment). */
export const estimatedChargeMicros = (request: RunRequest, prices: PriceTable, minBalanceMicros: number): number => {
  switch (request._tag) {
    case "WebSearch":
      return toMicros(prices.web_search_per_query * distinctQueries(request.queries))
    case "DeepResearch":
      return toMicros(prices.deep_research_per_run)
    default:
      return minBalanceMicros
  }
}

/** The outstanding sum, micro-USD (a bigint, as text). */
const HeldRow = Schema.Struct({ held: Schema.String })

/** Holds still outstanding: of runs and ticks that have not ended, less what each was charged. */
const outstandingSql = (sql: SqlClient.SqlClient, projectId: ProjectId, except: string | null = null) =>
  decodeRows(HeldRow)(sql`
    SELECT coalesce(sum(greatest(0, h.amount_micros - h.charged_micros)), 0)::text AS held
    FROM credit_holds h
    WHERE h.project_id = ${projectId} ${except === null ? sql`` : sql`AND h.run_id <> ${except}`}
      AND EXISTS (SELECT 1 FROM runs r WHERE r.id = h.run_id AND r.status NOT IN ${sql.in([...terminalStatuses])})`)

/** The project's outstanding holds, micro-USD (what its balance is not free to spend). */
export const outstandingHoldsMicros = (sql: SqlClient.SqlClient, projectId: ProjectId): Effect.Effect<number, SqlError> =>
  outstandingSql(sql, projectId).pipe(Effect.map((rows) => Number(rows[0]?.held ?? 0)))

/**
 * Admits a run (or tick) against its estimated charge and holds it (see the module comment).
 * Must run inside the transaction that creates the run: a refusal rolls the run back with it.
 */
export const holdInTransaction = (
  sql: SqlClient.SqlClient,
  hold: HoldRequest
): Effect.Effect<void, InsufficientCredits | BudgetExceeded | SqlError> =>
  Effect.gen(function*() {
    const balance = yield* lockBalance(sql, hold.projectId)
    // A run admitted again (a tick resumed after a crash) does not count its own hold against itself.
    const held = yield* outstandingSql(sql, hold.projectId, hold.runId).pipe(Effect.map((rows) => Number(rows[0]?.held ?? 0)))
    if (balance.capMicros !== null && balance.periodSpentMicros + held >= balance.capMicros) {
      return yield* new BudgetExceeded({ capMicros: balance.capMicros, spentMicros: balance.periodSpentMicros })
    }
    const available = balance.totalMicros - held
    const required = Math.max(hold.micros, hold.minimumMicros)
    if (available < required) return yield* new InsufficientCredits({ balanceMicros: available, requiredMicros: required })
    yield* sql`
      INSERT INTO credit_holds (run_id, project_id, kind, amount_micros)
      VALUES (${hold.runId}, ${hold.projectId}, ${hold.kind}, ${Math.max(0, hold.micros)})
      ON CONFLICT (run_id) DO NOTHING`
  })

/** Settles a run's hold when it ends: its charges are in the ledger, the hold goes. In the ending transaction. */
export const releaseHoldInTransaction = (sql: SqlClient.SqlClient, runId: string) => sql`DELETE FROM credit_holds WHERE run_id = ${runId}`

/** A released hold: its run's (or tick's) id. */
const ReleasedRow = Schema.Struct({ run_id: Schema.String })

/** Deletes holds whose run or tick has ended or is gone (they already count for nothing). */
export const releaseEndedHolds = (sql: SqlClient.SqlClient) =>
  decodeRows(ReleasedRow)(sql`
    DELETE FROM credit_holds h
    WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = h.run_id AND r.status NOT IN ${sql.in([...terminalStatuses])})
    RETURNING run_id`).pipe(Effect.map((rows) => rows.length))

/** Holds as a service, for the Budget service (src/billing/budget.ts): each method its own transaction (or one read). */
export class HoldStore extends Context.Service<HoldStore, {
  /** The project's outstanding holds, micro-USD. */
  readonly outstanding: (projectId: ProjectId) => Effect.Effect<number>
  /** Admits and holds, in a transaction of its own (holdInTransaction). */
  readonly hold: (hold: HoldRequest) => Effect.Effect<void, InsufficientCredits | BudgetExceeded>
}>()("wa/store/HoldStore") {
  static readonly layer = Layer.effect(
    HoldStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return HoldStore.of(withMethodSpans("HoldStore", {
        outstanding: (projectId) => outstandingHoldsMicros(sql, projectId).pipe(Effect.orDie),
        hold: (hold) => sql.withTransaction(holdInTransaction(sql, hold)).pipe(Effect.catchTag("SqlError", Effect.die))
      }))
    })
  )
}
