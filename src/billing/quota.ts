/**
 * QuotaStatus: where a project stands against its plan: credits per bucket, the monthly quota
 * (spend of the current period against the plan's quota, with the 80 % warning and the 100 %
 * stop), scheduled runs against the plan's scheduled cap, and each key's open sessions against
 * its concurrency cap.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { countScheduledRuns } from "../store/autonomous-schedules.ts"
import { Budget } from "./budget.ts"
import type { Balance } from "./store/ledger.ts"
import { PlanStore } from "./store/plan-store.ts"
import { type Plan, Plans } from "./plans.ts"
import type { ApiKeyId, ProjectId } from "../domain/run.ts"

export interface KeyConcurrency {
  readonly keyId: ApiKeyId
  readonly keyName: string | null
  /** Open (not closed) sessions the key holds: what the cap counts. */
  readonly running: number
  readonly cap: number
}

export interface QuotaStatus {
  readonly projectId: ProjectId
  readonly plan: Plan
  readonly subscriptionStatus: "active" | "none"
  readonly balance: Balance
  /** Credits held for runs and ticks under way (src/billing/store/credit-holds.ts), micro-USD. */
  readonly heldMicros: number
  /** Charges of the current period, positive micro-USD. */
  readonly spentMicros: number
  readonly quotaMicros: number | null
  /** At or past 80 % of the quota, and at or past all of it: as Budget decides (see budget.ts). */
  readonly warning: boolean
  readonly exceeded: boolean
  readonly scheduledCap: number
  readonly scheduledRunning: number
  readonly concurrency: ReadonlyArray<KeyConcurrency>
}

/** Used share of the quota in whole percent (rounded down); null without a quota. */
export const quotaUsedPercent = (status: Pick<QuotaStatus, "spentMicros" | "quotaMicros">): number | null =>
  status.quotaMicros === null ? null : status.quotaMicros === 0 ? (status.spentMicros > 0 ? 100 : 0) : Math.floor((status.spentMicros * 100) / status.quotaMicros)

export class Quota extends Context.Service<Quota, {
  readonly status: (projectId: ProjectId) => Effect.Effect<QuotaStatus>
}>()("wa/billing/Quota") {
  static readonly layer = Layer.effect(
    Quota,
    Effect.gen(function*() {
      const budget = yield* Budget
      const sql = yield* SqlClient.SqlClient
      const plans = yield* Plans
      const store = yield* PlanStore
      return Quota.of({
        status: Effect.fn("Quota.status")(function*(projectId: ProjectId) {
          const { plan, subscriptionStatus } = yield* plans.subscription(projectId)
          const caps = plans.capsOf(plan)
          // The quota is the budget cap: its spend, warning and stop are Budget's.
          const { status, balance } = yield* budget.statusWithBalance(projectId)
          // Keys that can still open sessions (revoked ones in their grace window included).
          const keys = yield* store.keyUsage(projectId)
          return {
            projectId,
            plan,
            subscriptionStatus,
            balance,
            heldMicros: yield* budget.held(projectId),
            spentMicros: status.spentMicros,
            quotaMicros: status.capMicros,
            warning: status.warning,
            exceeded: status.exceeded,
            scheduledCap: caps.scheduled,
            scheduledRunning: yield* countScheduledRuns(projectId).pipe(Effect.provideService(SqlClient.SqlClient, sql)),
            concurrency: keys.map((k) => ({ keyId: k.id, keyName: k.name, running: k.running, cap: caps.concurrency }))
          }
        })
      })
    })
  ).pipe(Layer.provide(Layer.mergeAll(Budget.layer, Plans.layer, PlanStore.layer)))
}
