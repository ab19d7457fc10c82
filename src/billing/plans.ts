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
 *   (src/store/ledger.ts lockBalance, lazily on the first write or balance read of the period).
 *   Changing plan mid-period changes the caps at once; the new plan's credits come with the next
 *   period (the current one was granted already).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { grantMonthlyInTransaction, lockBalance } from "../store/ledger.ts"
import { loadPlanTable, type Plan, type PlanTable } from "../config/plan-table.ts"

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
  readonly forProject: (projectId: string) => Effect.Effect<Plan>
  readonly subscription: (projectId: string) => Effect.Effect<ProjectPlan>
  /**
   * The caps a plan sets, as enforced: open sessions per key (WA_MAX_CONCURRENT_SESSIONS overrides
   * every plan's) and scheduled runs under way per project (WA_SCHEDULED_CAP overrides).
   */
  readonly capsOf: (plan: Plan) => PlanCaps
  /** Open sessions one key of the project may hold (capsOf its plan). */
  readonly concurrencyCap: (projectId: string) => Effect.Effect<number>
  /** The caps of the project's plan (capsOf). */
  readonly capsFor: (projectId: string) => Effect.Effect<PlanCaps>
  /** Runs of the project's schedules that may be under way at once (capsOf its plan). */
  readonly scheduledCap: (projectId: string) => Effect.Effect<number>
  /** Puts the project on a plan (a subscription) and grants the period's credits if not yet granted. */
  readonly set: (projectId: string, planId: string) => Effect.Effect<ProjectPlan, UnknownPlan>
  /** Ends the subscription: back to the default plan, no more monthly grants. */
  readonly unset: (projectId: string) => Effect.Effect<ProjectPlan>
}>()("wa/billing/Plans") {
  static readonly layer = Layer.effect(
    Plans,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
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
      for (const plan of table.plans) {
        yield* sql`UPDATE project_plans SET monthly_credits_micros = ${plan.monthlyCreditsMicros}, monthly_quota_micros = ${plan.monthlyQuotaMicros}
          WHERE plan_id = ${plan.id} AND (monthly_credits_micros <> ${plan.monthlyCreditsMicros}
            OR monthly_quota_micros IS DISTINCT FROM ${plan.monthlyQuotaMicros}::bigint)`.pipe(Effect.orDie)
      }
      yield* sql`UPDATE project_plans SET monthly_credits_micros = 0, monthly_quota_micros = ${table.defaultPlan.monthlyQuotaMicros}
        WHERE plan_id NOT IN ${sql.in(table.plans.map((p) => p.id))}`.pipe(Effect.orDie)
      yield* sql`
        INSERT INTO plan_defaults (singleton, plan_id, monthly_quota_micros)
        VALUES (true, ${table.defaultPlan.id}, ${table.defaultPlan.monthlyQuotaMicros})
        ON CONFLICT (singleton) DO UPDATE SET plan_id = EXCLUDED.plan_id, monthly_quota_micros = EXCLUDED.monthly_quota_micros`.pipe(Effect.orDie)

      const subscription = Effect.fn("Plans.subscription")(function*(projectId: string) {
        const [row] = yield* sql<{ plan_id: string; subscription_status: string }>`
          SELECT plan_id, subscription_status FROM project_plans WHERE project_id = ${projectId}`
        const plan = row === undefined || row.subscription_status !== "active" ? undefined : byId.get(row.plan_id)
        return plan === undefined
          ? { plan: table.defaultPlan, subscriptionStatus: "none" as const }
          : { plan, subscriptionStatus: "active" as const }
      }, Effect.orDie)

      return Plans.of({
        table,
        forProject: (projectId) => subscription(projectId).pipe(Effect.map((s) => s.plan)),
        subscription,
        capsOf,
        // An override needs no read of the project's plan.
        concurrencyCap: (projectId) =>
          concurrencyOverride !== undefined ? Effect.succeed(concurrencyOverride) : subscription(projectId).pipe(Effect.map((s) => capsOf(s.plan).concurrency)),
        capsFor: (projectId) => subscription(projectId).pipe(Effect.map((s) => capsOf(s.plan))),
        scheduledCap: (projectId) =>
          scheduledOverride !== undefined ? Effect.succeed(scheduledOverride) : subscription(projectId).pipe(Effect.map((s) => capsOf(s.plan).scheduled)),
        set: Effect.fn("Plans.set")(function*(projectId: string, planId: string) {
          const plan = byId.get(planId)
          if (plan === undefined) return yield* new UnknownPlan({ planId, known: table.plans.map((p) => p.id) })
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* sql`
              INSERT INTO project_plans (project_id, plan_id, monthly_credits_micros, monthly_quota_micros, subscription_status)
              VALUES (${projectId}, ${plan.id}, ${plan.monthlyCreditsMicros}, ${plan.monthlyQuotaMicros}, 'active')
              ON CONFLICT (project_id) DO UPDATE SET plan_id = EXCLUDED.plan_id, monthly_credits_micros = EXCLUDED.monthly_credits_micros,
                monthly_quota_micros = EXCLUDED.monthly_quota_micros, subscription_status = 'active', updated_at = now()`
            // Under the balance row's lock; a grant already made this period is not made again.
            yield* grantMonthlyInTransaction(sql, yield* lockBalance(sql, projectId))
          })).pipe(Effect.orDie)
          return { plan, subscriptionStatus: "active" as const }
        }),
        unset: Effect.fn("Plans.unset")(function*(projectId: string) {
          yield* sql`UPDATE project_plans SET subscription_status = 'canceled', updated_at = now() WHERE project_id = ${projectId}`.pipe(Effect.orDie)
          return { plan: table.defaultPlan, subscriptionStatus: "none" as const }
        })
      })
    })
  )
}
