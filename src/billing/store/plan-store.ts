/**
 * Projects' plans in PostgreSQL (project_plans, plan_defaults), and the per-project reads the
 * billing services make besides the ledger's: each API key's open sessions and the scheduled runs
 * under way (the quota status), and whether a project exists (a Stripe top-up). Rows are decoded through Schema; the rules (which
 * plan a project is on, its caps) are the Plans and Quota services'.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Plan } from "../../config/plan-table.ts"
import { grantMonthlyInTransaction, lockBalance } from "./ledger.ts"
import { withMethodSpans } from "../../observability/spans.ts"
import { ApiKeyId, type ProjectId } from "../../domain/run.ts"

const decodeSubscription = Schema.decodeUnknownSync(Schema.Struct({ plan_id: Schema.String, subscription_status: Schema.String }))
const KeyUsage = Schema.Struct({ id: ApiKeyId, name: Schema.NullOr(Schema.String), running: Schema.Number })
const decodeKeyUsage = Schema.decodeUnknownSync(KeyUsage)

export class PlanStore extends Context.Service<PlanStore, {
  /**
   * Makes the stored subscriptions follow the plan table as configured now: a plan's credits and
   * quota; a plan gone from the table grants nothing and has the default plan's quota; the default
   * plan's quota (what a project without subscription is capped at).
   */
  readonly syncTable: (plans: ReadonlyArray<Plan>, defaultPlan: Plan) => Effect.Effect<void>
  /** The project's subscription row (any status), if it has one. */
  readonly subscription: (projectId: ProjectId) => Effect.Effect<{ readonly plan_id: string; readonly subscription_status: string } | undefined>
  /** Puts the project on the plan (status active) and grants the period's credits once, in one transaction. */
  readonly subscribe: (projectId: ProjectId, plan: Plan) => Effect.Effect<void>
  readonly cancel: (projectId: ProjectId) => Effect.Effect<void>
  /** The project's keys that can still open sessions (revoked ones in their grace window too), with their open sessions. */
  readonly keyUsage: (projectId: ProjectId) => Effect.Effect<ReadonlyArray<typeof KeyUsage.Type>>
  readonly projectExists: (projectId: ProjectId) => Effect.Effect<boolean>
}>()("wa/billing/PlanStore") {
  static readonly layer = Layer.effect(
    PlanStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return PlanStore.of(withMethodSpans("PlanStore", {
        syncTable: (plans, defaultPlan) =>
          Effect.gen(function*() {
            for (const plan of plans) {
              yield* sql`UPDATE project_plans SET monthly_credits_micros = ${plan.monthlyCreditsMicros}, monthly_quota_micros = ${plan.monthlyQuotaMicros}
                WHERE plan_id = ${plan.id} AND (monthly_credits_micros <> ${plan.monthlyCreditsMicros}
                  OR monthly_quota_micros IS DISTINCT FROM ${plan.monthlyQuotaMicros}::bigint)`
            }
            yield* sql`UPDATE project_plans SET monthly_credits_micros = 0, monthly_quota_micros = ${defaultPlan.monthlyQuotaMicros}
              WHERE plan_id NOT IN ${sql.in(plans.map((p) => p.id))}`
            yield* sql`
              INSERT INTO plan_defaults (singleton, plan_id, monthly_quota_micros)
              VALUES (true, ${defaultPlan.id}, ${defaultPlan.monthlyQuotaMicros})
              ON CONFLICT (singleton) DO UPDATE SET plan_id = EXCLUDED.plan_id, monthly_quota_micros = EXCLUDED.monthly_quota_micros`
          }).pipe(Effect.orDie),
        subscription: (projectId) =>
          sql`SELECT plan_id, subscription_status FROM project_plans WHERE project_id = ${projectId}`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : decodeSubscription(rows[0])),
            Effect.orDie
          ),
        subscribe: (projectId, plan) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* sql`
              INSERT INTO project_plans (project_id, plan_id, monthly_credits_micros, monthly_quota_micros, subscription_status)
              VALUES (${projectId}, ${plan.id}, ${plan.monthlyCreditsMicros}, ${plan.monthlyQuotaMicros}, 'active')
              ON CONFLICT (project_id) DO UPDATE SET plan_id = EXCLUDED.plan_id, monthly_credits_micros = EXCLUDED.monthly_credits_micros,
                monthly_quota_micros = EXCLUDED.monthly_quota_micros, subscription_status = 'active', updated_at = now()`
            // Under the balance row's lock; a grant already made this period is not made again.
            yield* grantMonthlyInTransaction(sql, yield* lockBalance(sql, projectId))
          })).pipe(Effect.orDie),
        cancel: (projectId) =>
          sql`UPDATE project_plans SET subscription_status = 'canceled', updated_at = now() WHERE project_id = ${projectId}`.pipe(Effect.asVoid, Effect.orDie),
        keyUsage: (projectId) =>
          sql`
            SELECT k.id, k.name,
              (SELECT count(*)::int FROM sessions s WHERE s.api_key_id = k.id AND s.status <> 'closed') AS running
            FROM api_keys k
            WHERE k.project_id = ${projectId} AND (k.grace_until IS NULL OR k.grace_until > now())
            ORDER BY k.created_at, k.id`.pipe(Effect.map((rows) => rows.map((row) => decodeKeyUsage(row))), Effect.orDie),
        projectExists: (projectId) =>
          sql`SELECT id FROM projects WHERE id = ${projectId}`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)
      }))
    })
  )
}
