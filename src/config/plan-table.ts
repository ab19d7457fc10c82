/**
 * The plan table: configuration, not code. The shipped table is `config/plans.json`; an operator
 * replaces it with WA_PLANS_FILE (same format). Read once at start; a bad file stops start-up
 * with one line (src/config/config.ts calls `planTableProblem`).
 *
 * Format: `{"plans": [{"id", "name", "concurrency", "scheduled_cap", "monthly_credits_usd",
 * "monthly_quota_usd"}]}`: concurrency is the concurrent-session cap of each API key, scheduled_cap
 * the scheduled runs a project may have active at once, monthly_credits_usd what a subscribed
 * project is granted each billing period, monthly_quota_usd the default monthly spending quota
 * (null: none); optional `sessions_per_project` (open sessions of all its keys together),
 * `keys_per_project` and `monitors_per_project` (not ended).
 */
import { Schema } from "effect"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

export interface Plan {
  readonly id: string
  readonly name: string
  /** Concurrent (open) sessions per API key. */
  readonly concurrency: number
  /** Scheduled runs a project may have active at once. */
  readonly scheduledCap: number
  /** Credits granted per billing period to a project subscribed to the plan, micro-USD. */
  readonly monthlyCreditsMicros: number
  /** The default monthly spending quota, micro-USD; null: none. */
  readonly monthlyQuotaMicros: number | null
  /** Open sessions of the whole project, whatever key holds them (never below `concurrency`). */
  readonly projectSessions: number
  /** API keys a project may have (not revoked). */
  readonly projectKeys: number
  /** Monitors a project may have that have not ended (canceled or completed ones do not count). */
  readonly projectMonitors: number
}

export interface PlanTable {
  readonly plans: ReadonlyArray<Plan>
  readonly defaultPlan: Plan
}

const Usd = Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 100_000_000 }))

const PlanFile = Schema.Struct({
  plans: Schema.Array(Schema.Struct({
    id: Schema.String.check(Schema.isPattern(/^[a-z0-9_-]{1,32}$/)),
    name: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64)),
    concurrency: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 })),
    scheduled_cap: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000 })),
    monthly_credits_usd: Usd,
    monthly_quota_usd: Schema.NullOr(Usd),
    // Optional: a table without them gets twice the per-key concurrency, 50 keys and 100 monitors.
    sessions_per_project: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 }))),
    keys_per_project: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 }))),
    monitors_per_project: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000 })))
  })).check(Schema.isMinLength(1))
})

/** The shipped table, next to the package (config/plans.json). */
// A function for the same reason as defaultPricesFile (src/config/prices.ts).
export const shippedPlansFile = () => fileURLToPath(new URL("../../config/plans.json", import.meta.url))

const micros = (usd: number) => Math.round(usd * 1_000_000)

/** Reads and checks a plan table; throws an Error whose message is one line naming the problem. */
export const loadPlanTable = (file: string | undefined, defaultPlanId: string | undefined): PlanTable => {
  const path = file ?? shippedPlansFile()
  let raw: unknown
  try {
    raw = JSON.parse(fs.readFileSync(path, "utf8"))
  } catch (error) {
    throw new Error(`WA_PLANS_FILE ${path} is not readable JSON (${error instanceof Error ? error.message : String(error)})`)
  }
  const decoded = Schema.decodeUnknownExit(PlanFile)(raw)
  if (decoded._tag === "Failure") {
    throw new Error(`WA_PLANS_FILE ${path} is not a plan table: ${String(decoded.cause).replace(/\s*\n\s*/g, " ")}`)
  }
  const plans = decoded.value.plans.map((p): Plan => ({
    id: p.id,
    name: p.name,
    concurrency: p.concurrency,
    scheduledCap: p.scheduled_cap,
    monthlyCreditsMicros: micros(p.monthly_credits_usd),
    monthlyQuotaMicros: p.monthly_quota_usd === null ? null : micros(p.monthly_quota_usd),
    projectSessions: Math.max(p.concurrency, p.sessions_per_project ?? 2 * p.concurrency),
    projectKeys: p.keys_per_project ?? 50,
    projectMonitors: p.monitors_per_project ?? 100
  }))
  const ids = new Set(plans.map((p) => p.id))
  if (ids.size !== plans.length) throw new Error(`WA_PLANS_FILE ${path}: plan ids must be unique`)
  const wanted = defaultPlanId ?? (ids.has("dev") ? "dev" : plans[0]!.id)
  const defaultPlan = plans.find((p) => p.id === wanted)
  if (defaultPlan === undefined) throw new Error(`WA_DEFAULT_PLAN must be one of ${[...ids].join(", ")}, not ${wanted}`)
  return { plans, defaultPlan }
}

/** The one-line problem with the plan configuration, or undefined (start-up validation). */
export const planTableProblem = (file: string | undefined, defaultPlanId: string | undefined): string | undefined => {
  try {
    loadPlanTable(file, defaultPlanId)
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}
