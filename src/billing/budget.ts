/**
 * The monthly project budget cap, which is the monthly quota (one concept): a project's spending
 * cap per billing period in micro-USD. Spend is what the ledger charged in the period
 * (credit_balances.period_spent_micros, kept by every charge). At 80 % the project gets one
 * `billing.quota_warning` per period in its inbox (written by the charge that crossed it, see
 * ledger.ts); at 100 % charges that are not forced are refused, running runs end `failed` with
 * `budget_exceeded` at their next charge, and new runs get 402 `budget_exceeded`.
 *
 * `admit` is the one check every product's create (and a monitor's run_now) makes before anything
 * is created: 402 budget_exceeded when the cap is reached, 402 insufficient_credits when the
 * balance is below WA_BILLING_MIN_BALANCE_USD. With billing off both refuse nothing.
 */
import { Context, Effect, Layer } from "effect"
import { BudgetExceeded, InsufficientCredits } from "../domain/errors.ts"
import { AppConfig } from "../config/config.ts"
import { HoldStore } from "./store/credit-holds.ts"
import { toMicros } from "../domain/money.ts"
import { type Balance, LedgerStore, WARNING_RATIO } from "./store/ledger.ts"
import { Ledger } from "./ledger.ts"
import type { Exhausted } from "../domain/billing.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { ProjectId } from "../domain/run.ts"
import type { TickRunId } from "../domain/monitor.ts"

export interface BudgetStatus {
  /** The monthly cap in micro-USD; null: no cap. */
  readonly capMicros: number | null
  /** Charged in the current period. */
  readonly spentMicros: number
  /** Spend is at or above 80 % of the cap. */
  readonly warning: boolean
  /** Spend is at or above the cap. */
  readonly exceeded: boolean
  readonly periodStart: Date
  readonly periodEnd: Date
}

export class Budget extends Context.Service<Budget, {
  /** The cap and this period's spend; what QuotaStatus reports. */
  readonly status: (projectId: ProjectId) => Effect.Effect<BudgetStatus>
  /** The status and the balance it was computed from (one read of each). */
  readonly statusWithBalance: (projectId: ProjectId) => Effect.Effect<{ readonly status: BudgetStatus; readonly balance: Balance }>
  /** Sets (micro-USD) or removes (null) the project's cap. */
  readonly setCap: (projectId: ProjectId, capMicros: number | null) => Effect.Effect<BudgetStatus>
  /**
   * Whether the project can pay for more work now (a monitor's tick, before it starts): "budget"
   * when its cap is reached, "credits" when its balance is at or below zero (billing off: null).
   */
  readonly exhausted: (projectId: ProjectId) => Effect.Effect<Exhausted | null>
  /**
   * A monitor tick about to run is admitted against its fee (track_per_tick), held from the
   * balance until the tick ends (src/billing/store/credit-holds.ts): "budget" or "credits" when it cannot be
   * paid (billing off: null, nothing held). Its own transaction; the tick's end settles it.
   */
  readonly holdTick: (projectId: ProjectId, tickId: TickRunId) => Effect.Effect<Exhausted | null>
  /** Whether a new run (or tick) may start: BudgetExceeded or InsufficientCredits, else nothing. */
  readonly admit: (projectId: ProjectId) => Effect.Effect<void, BudgetExceeded | InsufficientCredits>
  /**
   * Credits held now for runs and monitor ticks under way (src/billing/store/credit-holds.ts), micro-USD: what
   * the balance is not free to spend until they end (shown as `held_usd`).
   */
  readonly held: (projectId: ProjectId) => Effect.Effect<number>
}>()("wa/billing/Budget") {
  static readonly layer = Layer.effect(
    Budget,
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const store = yield* LedgerStore
      const holds = yield* HoldStore
      const tickFeeMicros = toMicros((yield* AppConfig).prices.track_per_tick)

      // The status and the balance it was computed from, so callers that need both read it once.
      const statusAndBalance = (projectId: ProjectId) =>
        Effect.gen(function*() {
          const balance = yield* ledger.balance(projectId)
          const capMicros = yield* store.capMicros(projectId)
          const spentMicros = balance.periodSpentMicros
          const status: BudgetStatus = {
            capMicros,
            spentMicros,
            warning: capMicros !== null && spentMicros >= WARNING_RATIO * capMicros,
            exceeded: capMicros !== null && spentMicros >= capMicros,
            periodStart: balance.periodStart,
            periodEnd: balance.periodEnd
          }
          return { status, balance }
        })
      const status = Effect.fn("Budget.status")(function*(projectId: ProjectId) {
        return (yield* statusAndBalance(projectId)).status
      })

      return Budget.of({
        ...withMethodSpans("Budget", { held: holds.outstanding }),
        status,
        statusWithBalance: Effect.fn("Budget.statusWithBalance")(statusAndBalance),
        exhausted: Effect.fn("Budget.exhausted")(function*(projectId: ProjectId) {
          if (!ledger.enabled) return null
          const { status: current, balance } = yield* statusAndBalance(projectId)
          if (current.exceeded) return "budget" as const
          if (balance.totalMicros <= 0) return "credits" as const
          return null
        }),
        holdTick: Effect.fn("Budget.holdTick")(function*(projectId: ProjectId, tickId: TickRunId) {
          if (!ledger.enabled) return null
          // At least one micro-dollar must be free: a tick never runs on an empty balance.
          return yield* holds.hold({ projectId, runId: tickId, kind: "tick", micros: tickFeeMicros, minimumMicros: 1 }).pipe(
            Effect.as(null),
            Effect.catchTags({ InsufficientCredits: () => Effect.succeed("credits" as const), BudgetExceeded: () => Effect.succeed("budget" as const) })
          )
        }),
        setCap: Effect.fn("Budget.setCap")(function*(projectId: ProjectId, capMicros: number | null) {
          yield* store.setCap(projectId, capMicros)
          return yield* status(projectId)
        }),
        admit: Effect.fn("Budget.admit")(function*(projectId: ProjectId) {
          // Billing off refuses nothing (spend is measured on the ledger, which then records nothing).
          if (!ledger.enabled) return
          const { status: current, balance } = yield* statusAndBalance(projectId)
          if (current.exceeded) return yield* new BudgetExceeded({ capMicros: current.capMicros ?? 0, spentMicros: current.spentMicros })
          const { totalMicros } = balance
          if (totalMicros < ledger.minBalanceMicros) {
            return yield* new InsufficientCredits({ balanceMicros: totalMicros, requiredMicros: ledger.minBalanceMicros })
          }
        })
      })
    })
  ).pipe(Layer.provide(Layer.mergeAll(Ledger.layer, LedgerStore.layer, HoldStore.layer)))
}
