/**
 * The Ledger service: balances, charges, credits, usage and the account summary over the credit
 * ledger, whose entries and balance rows are written by src/store/ledger.ts (in the caller's
 * transaction, so a run's charges commit with its checkpoint).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { toMicros } from "../domain/money.ts"
import { type Balance, balanceColumns, type BalanceRow, type Bucket, chargeInTransaction, type ChargeInput, type ChargeOutcome, creditInTransaction, type Entry, lockBalance, toBalance } from "../store/ledger.ts"

export interface UsageQuery {
  readonly kind?: string | undefined
  readonly from?: Date | undefined
  readonly to?: Date | undefined
  readonly limit: number
  /** Entries older than this ledger id (the previous page's last). */
  readonly beforeId?: string | undefined
}

export interface AccountSummary {
  readonly balance: Balance
  readonly sessionsCount: number
  /** Charges of the current period by kind, as positive micro-USD. */
  readonly llmMicros: number
  readonly browserMicros: number
  readonly proxyMicros: number
  /** Product fees: charge_research, charge_search, charge_track. */
  readonly serviceMicros: number
  readonly totalMicros: number
}

export class Ledger extends Context.Service<Ledger, {
  /** Whether WA_BILLING is on (off: nothing is charged and no run is refused). */
  readonly enabled: boolean
  readonly minBalanceMicros: number
  readonly charge: (input: ChargeInput) => Effect.Effect<ChargeOutcome>
  readonly grant: (projectId: string, micros: number, bucket: Bucket, idempotencyKey?: string) => Effect.Effect<{ readonly recorded: boolean; readonly balance: Balance }>
  /** The current balance (monthly credits of an ended period count as 0); 0 for a project never credited. */
  readonly balance: (projectId: string) => Effect.Effect<Balance>
  /** Sums of the project's entries per bucket, recomputed from the ledger alone. */
  readonly rederive: (projectId: string) => Effect.Effect<{ readonly monthlyMicros: number; readonly additionalMicros: number }>
  readonly usage: (projectId: string, query: UsageQuery) => Effect.Effect<ReadonlyArray<Entry>>
  readonly account: (projectId: string) => Effect.Effect<AccountSummary>
}>()("wa/billing/Ledger") {
  static readonly layer = Layer.effect(
    Ledger,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig

      const balance = Effect.fn("Ledger.balance")(function*(projectId: string) {
        const [row] = yield* sql<BalanceRow>`
          SELECT ${sql.literal(balanceColumns)}, period_end <= now() AS expired
          FROM credit_balances WHERE project_id = ${projectId}`
        // A period to open (ended, or never written for a subscribed project): open it, with its grant.
        if (row === undefined ? (yield* sql`SELECT 1 FROM project_plans WHERE project_id = ${projectId}`).length > 0 : row.expired) {
          return yield* sql.withTransaction(lockBalance(sql, projectId))
        }
        if (row === undefined) {
          const [period] = yield* sql<{ period_start: Date; period_end: Date }>`
            SELECT date_trunc('month', now(), 'UTC') AS period_start, date_trunc('month', now(), 'UTC') + interval '1 month' AS period_end`
          return toBalance({ project_id: projectId, monthly_micros: "0", additional_micros: "0", period_spent_micros: "0", ...period! })
        }
        const found = toBalance(row)
        // The period ended and nothing was charged since: its monthly credits and its spend are gone.
        return row.expired ? { ...found, monthlyMicros: 0, totalMicros: found.additionalMicros, periodSpentMicros: 0 } : found
      }, Effect.orDie)

      return Ledger.of({
        enabled: config.billing === "on",
        minBalanceMicros: toMicros(config.billingMinBalanceUsd),
        charge: (input) => sql.withTransaction(chargeInTransaction(sql, input)).pipe(Effect.orDie, Effect.withSpan("Ledger.charge")),
        grant: (projectId, micros, bucket, idempotencyKey) =>
          sql.withTransaction(creditInTransaction(sql, {
            projectId,
            micros,
            bucket,
            kind: bucket === "monthly" ? "grant_monthly" : "topup",
            idempotencyKey: idempotencyKey ?? `grant:${crypto.randomUUID()}`
          })).pipe(Effect.orDie, Effect.withSpan("Ledger.grant")),
        balance,
        rederive: Effect.fn("Ledger.rederive")(function*(projectId: string) {
          const rows = yield* sql<{ bucket: Bucket; total: string }>`
            SELECT bucket, sum(amount_micros)::text AS total FROM credit_ledger WHERE project_id = ${projectId} GROUP BY bucket`
          const of = (bucket: Bucket) => Number(rows.find((r) => r.bucket === bucket)?.total ?? 0)
          return { monthlyMicros: of("monthly"), additionalMicros: of("additional") }
        }, Effect.orDie),
        usage: Effect.fn("Ledger.usage")(function*(projectId: string, query: UsageQuery) {
          const rows = yield* sql<{
            id: string
            kind: string
            bucket: Bucket
            amount_micros: string
            run_id: string | null
            session_id: string | null
            idempotency_key: string
            period_start: Date
            created_at: Date
          }>`
            SELECT id::text, kind, bucket, amount_micros::text, run_id, session_id, idempotency_key, period_start, created_at
            FROM credit_ledger
            WHERE project_id = ${projectId}
              ${query.kind === undefined ? sql`` : sql`AND kind = ${query.kind}`}
              ${query.from === undefined ? sql`` : sql`AND created_at >= ${query.from}`}
              ${query.to === undefined ? sql`` : sql`AND created_at < ${query.to}`}
              ${query.beforeId === undefined ? sql`` : sql`AND id < ${query.beforeId}::bigint`}
            ORDER BY id DESC
            LIMIT ${query.limit}`
          return rows.map((row): Entry => ({
            id: row.id,
            kind: row.kind,
            bucket: row.bucket,
            amountMicros: Number(row.amount_micros),
            runId: row.run_id,
            sessionId: row.session_id,
            idempotencyKey: row.idempotency_key,
            periodStart: new Date(row.period_start),
            createdAt: new Date(row.created_at)
          }))
        }, Effect.orDie),
        account: Effect.fn("Ledger.account")(function*(projectId: string) {
          const current = yield* balance(projectId)
          const [sums] = yield* sql<{ llm: string; browser: string; proxy: string; total: string; sessions: number }>`
            SELECT
              coalesce(-sum(amount_micros) FILTER (WHERE kind = 'charge_llm'), 0)::text AS llm,
              coalesce(-sum(amount_micros) FILTER (WHERE kind = 'charge_browser'), 0)::text AS browser,
              coalesce(-sum(amount_micros) FILTER (WHERE kind = 'charge_proxy'), 0)::text AS proxy,
              coalesce(-sum(amount_micros) FILTER (WHERE kind LIKE 'charge\\_%'), 0)::text AS total,
              (SELECT count(*)::int FROM sessions WHERE project_id = ${projectId} AND created_at >= ${current.periodStart}) AS sessions
            FROM credit_ledger
            WHERE project_id = ${projectId} AND period_start = ${current.periodStart}`
          return {
            balance: current,
            sessionsCount: sums!.sessions,
            llmMicros: Number(sums!.llm),
            browserMicros: Number(sums!.browser),
            proxyMicros: Number(sums!.proxy),
            serviceMicros: Number(sums!.total) - Number(sums!.llm) - Number(sums!.browser) - Number(sums!.proxy),
            totalMicros: Number(sums!.total)
          }
        }, Effect.orDie)
      })
    })
  )
}

/** Checks a value decodes as a bucket (the CLI's --bucket). */
export const isBucket = Schema.is(Schema.Literals(["monthly", "additional"]))
