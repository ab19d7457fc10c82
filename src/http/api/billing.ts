/** Billing of a project: its credit account and the entries of its credit ledger (src/billing/ledger.ts). */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, Forbidden, ValidationError } from "../../domain/api-errors.ts"
import { BillingAccountResponse, BudgetResponse, SetBudgetRequest, UsageQuery, UsageResponse } from "../../domain/wire/billing.ts"
import { ProjectIdParam } from "./schemas.ts"
import { Authentication, RateLimit } from "./security.ts"

export class BillingApi extends HttpApiGroup.make("billing")
  .add(
    HttpApiEndpoint.get("account", "/account", {
      params: ProjectIdParam,
      success: BillingAccountResponse
    }).annotate(
      OpenApi.Description,
      "The project's credit balance (monthly credits are spent first, then additional ones) and its charges in the current billing period. " +
        "Amounts are decimal strings exact to the micro-dollar, with at least two decimals (\"0.000182\", \"1.50\")."
    ),
    HttpApiEndpoint.get("usage", "/usage", {
      params: ProjectIdParam,
      query: UsageQuery,
      success: UsageResponse,
      error: BadRequest
    }).annotate(
      OpenApi.Description,
      "The project's credit ledger, newest first, with cursor pagination (limit 1..100, default 20); filters: kind, from, to. " +
        "400 bad_request for a cursor this server did not issue or a from/to that is not a date."
    ),
    HttpApiEndpoint.get("getBudget", "/budget", {
      params: ProjectIdParam,
      success: BudgetResponse
    }).annotate(
      OpenApi.Description,
      "The project's monthly budget cap (its monthly quota) and this period's spend. At 80 % the project gets one billing.quota_warning " +
        "per period in its inbox; at 100 % running runs end failed with budget_exceeded and new runs get 402 budget_exceeded."
    ),
    HttpApiEndpoint.put("setBudget", "/budget", {
      params: ProjectIdParam,
      payload: SetBudgetRequest,
      success: BudgetResponse,
      error: [Forbidden, ValidationError]
    }).annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" }).annotate(
      OpenApi.Description,
      "Sets ({monthly_cap_usd: \"25.00\"}) or removes ({monthly_cap_usd: null}) the project's monthly budget cap. Needs an admin-scope key (403 forbidden otherwise)."
    )
  )
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/billing")
  .annotateMerge(OpenApi.annotations({ title: "Billing", description: "Credits and usage (WA_BILLING=on charges; off: everything is free)." }))
{}
