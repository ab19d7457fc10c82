/**
 * The Ledger service: balances, charges, credits, usage and the account summary over the credit
 * ledger, whose entries and balance rows are written by src/billing/store/ledger.ts (in the caller's
 * transaction, so a run's charges commit with its checkpoint).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { AppConfig } from "../config/config.ts"
import { toMicros } from "../domain/money.ts"
import { type Balance, type Bucket, type ChargeInput, type ChargeOutcome, type Entry, LedgerStore, type UsageQuery } from "./store/ledger.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { ProjectId } from "../domain/run.ts"

export type { UsageQuery }

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
  readonly grant: (projectId: ProjectId, micros: number, bucket: Bucket, idempotencyKey?: string) => Effect.Effect<{ readonly recorded: boolean; readonly balance: Balance }>
  /** The current balance (monthly credits of an ended period count as 0); 0 for a project never credited. */
  readonly balance: (projectId: ProjectId) => Effect.Effect<Balance>
  /** Sums of the project's entries per bucket, recomputed from the ledger alone. */
  readonly rederive: (projectId: ProjectId) => Effect.Effect<{ readonly monthlyMicros: number; readonly additionalMicros: number }>
  readonly usage: (projectId: ProjectId, query: UsageQuery) => Effect.Effect<ReadonlyArray<Entry>>
  readonly account: (projectId: ProjectId) => Effect.Effect<AccountSummary>
}>()("wa/billing/Ledger") {
  static readonly layer = Layer.effect(
    Ledger,
    Effect.gen(function*() {
      const store = yield* LedgerStore
      const config = yield* AppConfig

      return Ledger.of({
        ...withMethodSpans("Ledger", { charge: store.charge, balance: store.balance, rederive: store.rederive, usage: store.usage }),
        enabled: config.billing === "on",
        minBalanceMicros: toMicros(config.billingMinBalanceUsd),
        grant: Effect.fn("Ledger.grant")(function*(projectId: ProjectId, micros: number, bucket: Bucket, idempotencyKey?: string) {
          return yield* store.credit({
            projectId,
            micros,
            bucket,
            kind: bucket === "monthly" ? "grant_monthly" : "topup",
            idempotencyKey: idempotencyKey ?? `grant:${crypto.randomUUID()}`
          })
        }),
        account: Effect.fn("Ledger.account")(function*(projectId: ProjectId) {
          const current = yield* store.balance(projectId)
          const sums = yield* store.periodSums(projectId, current.periodStart)
          return {
            balance: current,
            sessionsCount: sums.sessionsCount,
            llmMicros: sums.llmMicros,
            browserMicros: sums.browserMicros,
            proxyMicros: sums.proxyMicros,
            serviceMicros: sums.totalMicros - sums.llmMicros - sums.browserMicros - sums.proxyMicros,
            totalMicros: sums.totalMicros
          }
        })
      })
    })
  ).pipe(Layer.provide(LedgerStore.layer))
}

/** Checks a value decodes as a bucket (the CLI's --bucket). */
export const isBucket = Schema.is(Schema.Literals(["monthly", "additional"]))
