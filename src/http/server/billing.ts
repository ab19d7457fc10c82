/** Handlers of billing: the account (balance and period charges) and the ledger's entries. */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Budget, type BudgetStatus } from "../../billing/budget.ts"
import { Ledger } from "../../billing/ledger.ts"
import { toMicros } from "../../domain/money.ts"
import { Plans } from "../../billing/plans.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey, requireScope } from "../api/security.ts"
import { badRequest, validationError } from "../errors.ts"
import { cursorCodec, DEFAULT_LIMIT } from "../pagination.ts"
import { usdFromMicros } from "../../domain/money.ts"
import type { ProjectId } from "../../domain/run.ts"

// Ledger entries are numbered (bigserial), not prefixed ids: the cursor is the last entry's number as text.
const ledgerCursor = cursorCodec("l", (position): position is string => typeof position === "string" && /^[0-9]{1,19}$/.test(position))

const decodeDate = (param: string, value: string | undefined) =>
  Effect.suspend(() => {
    if (value === undefined) return Effect.succeed(undefined)
    const date = new Date(value)
    return Number.isNaN(date.getTime())
      ? Effect.fail(badRequest(`${param} is not an ISO 8601 date or date-time`, { param }))
      : Effect.succeed(date)
  })

/** The largest cap accepted (USD), as for `wa credits grant`. */
export const MAX_CAP_USD = 1_000_000

export const budgetView = (projectId: ProjectId, status: BudgetStatus) => ({
  project_id: projectId,
  monthly_cap_usd: status.capMicros === null ? null : usdFromMicros(status.capMicros),
  spent_usd: usdFromMicros(status.spentMicros),
  remaining_usd: status.capMicros === null ? null : usdFromMicros(Math.max(0, status.capMicros - status.spentMicros)),
  warning: status.warning,
  exceeded: status.exceeded,
  period_start: status.periodStart.toISOString(),
  period_end: status.periodEnd.toISOString()
})

export const BillingHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "billing",
  Effect.fn(function*(handlers) {
    const ledger = yield* Ledger
    const plans = yield* Plans
    const budget = yield* Budget
    return handlers
      .handle("getBudget", () =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          return budgetView(projectId, yield* budget.status(projectId))
        }))
      .handle("setBudget", ({ payload }) =>
        Effect.gen(function*() {
          yield* requireScope("admin")
          const { projectId } = yield* CurrentKey
          const cap = payload.monthly_cap_usd === null ? null : Number(payload.monthly_cap_usd)
          if (cap !== null && cap > MAX_CAP_USD) {
            return yield* Effect.fail(validationError(`monthly_cap_usd is at most ${MAX_CAP_USD}`, [
              { loc: ["body", "monthly_cap_usd"], msg: `at most ${MAX_CAP_USD}`, type: "less_than_equal" }
            ]))
          }
          return budgetView(projectId, yield* budget.setCap(projectId, cap === null ? null : toMicros(cap)))
        }))
      .handle("account", () =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const account = yield* ledger.account(projectId)
          return {
            project_id: projectId,
            period_start: account.balance.periodStart.toISOString(),
            period_end: account.balance.periodEnd.toISOString(),
            plan: (yield* plans.forProject(projectId)).id,
            sessions_count: account.sessionsCount,
            credit_balance_usd: usdFromMicros(account.balance.totalMicros),
            held_usd: usdFromMicros(yield* budget.held(projectId)),
            monthly_credits_usd: usdFromMicros(account.balance.monthlyMicros),
            additional_credits_usd: usdFromMicros(account.balance.additionalMicros),
            llm_cost_usd: usdFromMicros(account.llmMicros),
            browser_cost_usd: usdFromMicros(account.browserMicros),
            proxy_cost_usd: usdFromMicros(account.proxyMicros),
            service_cost_usd: usdFromMicros(account.serviceMicros),
            total_cost_usd: usdFromMicros(account.totalMicros)
          }
        }))
      .handle("usage", ({ query }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const limit = query.limit ?? DEFAULT_LIMIT
          const beforeId = yield* ledgerCursor.decode(query.cursor)
          const from = yield* decodeDate("from", query.from)
          const to = yield* decodeDate("to", query.to)
          const rows = yield* ledger.usage(projectId, { kind: query.kind, from, to, beforeId, limit: limit + 1 })
          const items = rows.slice(0, limit)
          return {
            items: items.map((entry) => ({
              id: entry.id,
              kind: entry.kind,
              bucket: entry.bucket,
              amount_usd: usdFromMicros(entry.amountMicros),
              amount_micros: entry.amountMicros,
              run_id: entry.runId,
              session_id: entry.sessionId,
              idempotency_key: entry.idempotencyKey,
              period_start: entry.periodStart.toISOString(),
              created_at: entry.createdAt.toISOString()
            })),
            next_cursor: rows.length > limit && items.length > 0 ? ledgerCursor.encode(items[items.length - 1]!.id) : null
          }
        }))
  })
).pipe(Layer.provide(Layer.mergeAll(Ledger.layer, Budget.layer, Plans.layer)))
