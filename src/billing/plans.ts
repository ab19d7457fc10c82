/**
 * Plans: the plan table (src/config/plan-table.ts, configuration) and each project's plan.
 *
 * - A project is on the plan the operator set (`wa plans set`, a row in project_plans: a
 *   subscription, status `active`), else on the default plan (WA_DEFAULT_PLAN) without a
 *   subscription (`subscription_status: none`).
 * - The plan gives each API key its concurrent-session cap (WA_MAX_CONCURRENT_SESSIONS, when set,
 *   overrides every plan's), the project's scheduled-run cap and its default monthly quota, and
 *   the project's caps on open sessions of all its keys (WA_MAX_SESSIONS_PER_PROJECT), API keys
 *   (WA_MAX_KEYS_PER_PROJECT) and monitors not ended (WA_MAX_MONITORS_PER_PROJECT).
 * - A subscribed project is granted its plan's monthly credits once per billing period: when the
 *   plan is set (if the period has no grant yet), and when the ledger opens a new period
 *   (src/billing/store/ledger.ts lockBalance, lazily on the first write or balance read of the period).
 *   Changing plan mid-period changes the caps at once; the new plan's credits come with the next
 *   period (the current one was granted already).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { AppConfig } from "../config/config.ts"
import { PlanStore } from "./store/plan-store.ts"
import { loadPlanTable, type Plan, type PlanTable } from "../config/plan-table.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { ProjectId } from "../domain/run.ts"

export type { Plan } from "../config/plan-table.ts"

export class UnknownPlan extends Schema.TaggedError<UnknownPlan>()("UnknownPlan", {
  planId: Schema.String,
  known: Schema.Array(Schema.String)
}) {}

/** The caps a plan sets, overrides applied (see Plans.capsOf). */
export interface PlanCaps {
  /** Open sessions per API key. */
  readonly concurrency: number
  /** Scheduled runs under way per project. */
  readonly scheduled: number
  /** Open sessions of the project, all keys together (never below `concurrency`). */
  readonly projectSessions: number
  readonly projectKeys: number
  readonly projectMonitors: number
}

export interface ProjectPlan {
  readonly plan: Plan
  /** `active`: the operator put the project on this plan; `none`: the default plan, no subscription. */
  readonly subscriptionStatus: "active" | "none"
}

export class Plans extends Context.Service<Plans, {
  readonly table: PlanTable
  /** The project's plan (its subscription's, else the default). */
  readonly forProject: (projectId: ProjectId) => Effect.Effect<Plan>
  readonly subscription: (projectId: ProjectId) => Effect.Effect<ProjectPlan>
  /**
   * The caps a plan sets, as enforced: open sessions per key (WA_MAX_CONCURRENT_SESSIONS overrides
   * every plan's) and scheduled runs under way per project (WA_SCHEDULED_CAP overrides).
   */
  readonly capsOf: (plan: Plan) => PlanCaps
  /** Open sessions one key of the project may hold (capsOf its plan). */
  readonly concurrencyCap: (projectId: ProjectId) => Effect.Effect<number>
  /** The caps of the project's plan (capsOf). */
  readonly capsFor: (projectId: ProjectId) => Effect.Effect<PlanCaps>
  /** Runs of the project's schedules that may be under way at once (capsOf its plan). */
  readonly scheduledCap: (projectId: ProjectId) => Effect.Effect<number>
  /** Puts the project on a plan (a subscription) and grants the period's credits if not yet granted. */
  readonly set: (projectId: ProjectId, planId: string) => Effect.Effect<ProjectPlan, UnknownPlan>
  /** Ends the subscription: back to the default plan, no more monthly grants. */
  readonly unset: (projectId: ProjectId) => Effect.Effect<ProjectPlan>
}>()("wa/billing/Plans") {
  static readonly layer = Layer.effect(
    Plans,
    Effect.gen(function*() {
      const store = yield* PlanStore
      const config = yield* AppConfig
      const table = loadPlanTable(Option.getOrUndefined(config.plansFile), Option.getOrUndefined(config.defaultPlan))
      const byId = new Map(table.plans.map((plan) => [plan.id, plan]))
      const concurrencyOverride = Option.getOrUndefined(config.maxConcurrentSessionsOverride)
      const scheduledOverride = Option.getOrUndefined(config.scheduledCapOverride)
      const sessionsOverride = Option.getOrUndefined(config.maxProjectSessionsOverride)
      const keysOverride = Option.getOrUndefined(config.maxProjectKeysOverride)
      const monitorsOverride = Option.getOrUndefined(config.maxProjectMonitorsOverride)
      const capsOf = (plan: Plan): PlanCaps => {
        const concurrency = concurrencyOverride ?? plan.concurrency
        return {
          concurrency,
          scheduled: scheduledOverride ?? plan.scheduledCap,
          // A project may always hold what one of its keys may.
          projectSessions: Math.max(concurrency, sessionsOverride ?? plan.projectSessions),
          projectKeys: keysOverride ?? plan.projectKeys,
          projectMonitors: monitorsOverride ?? plan.projectMonitors
        }
      }

      // The credits subscriptions are granted follow the table as configured now (a plan gone from
      // the table grants nothing; its projects are on the default plan's caps).
      // The same for the monthly quotas, the default plan's included (a project's budget cap is its
      // own override, else its subscription's quota, else the default plan's: capSubquery).
      yield* store.syncTable(table.plans, table.defaultPlan)

      const subscription = Effect.fn("Plans.subscription")(function*(projectId: ProjectId) {
        const row = yield* store.subscription(projectId)
        const plan = row === undefined || row.subscription_status !== "active" ? undefined : byId.get(row.plan_id)
        return plan === undefined
          ? { plan: table.defaultPlan, subscriptionStatus: "none" as const }
          : { plan, subscriptionStatus: "active" as const }
      })

      return Plans.of({
        ...withMethodSpans<Pick<Plans["Service"], "forProject" | "concurrencyCap" | "capsFor" | "scheduledCap">>("Plans", {
          forProject: (projectId) => subscription(projectId).pipe(Effect.map((s) => s.plan)),
          // An override needs no read of the project's plan.
          concurrencyCap: (projectId) =>
            concurrencyOverride !== undefined ? Effect.succeed(concurrencyOverride) : subscription(projectId).pipe(Effect.map((s) => capsOf(s.plan).concurrency)),
          capsFor: (projectId) => subscription(projectId).pipe(Effect.map((s) => capsOf(s.plan))),
          scheduledCap: (projectId) =>
            scheduledOverride !== undefined ? Effect.succeed(scheduledOverride) : subscription(projectId).pipe(Effect.map((s) => capsOf(s.plan).scheduled))
        }),
        table,
        subscription,
        capsOf,
        set: Effect.fn("Plans.set")(function*(projectId: ProjectId, planId: string) {
          const plan = byId.get(planId)
          if (plan === undefined) return yield* new UnknownPlan({ planId, known: table.plans.map((p) => p.id) })
          yield* store.subscribe(projectId, plan)
          return { plan, subscriptionStatus: "active" as const }
        }),
        unset: Effect.fn("Plans.unset")(function*(projectId: ProjectId) {
          yield* store.cancel(projectId)
          return { plan: table.defaultPlan, subscriptionStatus: "none" as const }
        })
      })
    })
  ).pipe(Layer.provide(PlanStore.layer))
}
