/**
 * Plans and payments (src/billing/plans.ts, quota.ts, stripe.ts, auto-recharge.ts): a project's
 * QuotaStatus, its auto-recharge settings, and the Stripe webhook that credits checkout top-ups.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, Forbidden, NotFound } from "../../domain/api-errors.ts"
import { AutoRechargeRequest, AutoRechargeResponse, QuotaStatusResponse, StripeWebhookResponse } from "../../domain/wire/billing-plans.ts"
import { ProjectIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const strict = { errors: "all", onExcessProperty: "error" } as const

export class BillingPlansApi extends HttpApiGroup.make("billing_plans")
  .add(
    HttpApiEndpoint.get("quota", "/quota", {
      params: ProjectIdParam,
      success: QuotaStatusResponse
    }).annotate(
      OpenApi.Description,
      "The project's plan, credits per bucket (integer micro-USD), monthly quota use (warning at 80 %, stop at 100 %), " +
        "scheduled runs against the plan's cap, and each key's open sessions against its concurrency cap."
    ),
    HttpApiEndpoint.get("getAutoRecharge", "/auto_recharge", {
      params: ProjectIdParam,
      success: AutoRechargeResponse,
      error: Forbidden
    }).annotate(OpenApi.Description, "Auto-recharge settings and the latest recharges (admin keys)."),
    HttpApiEndpoint.put("putAutoRecharge", "/auto_recharge", {
      params: ProjectIdParam,
      payload: AutoRechargeRequest,
      success: AutoRechargeResponse,
      error: [Forbidden, Conflict]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Replaces the auto-recharge settings (admin keys). When enabled and the balance falls below threshold_usd, the " +
        "service charges the Stripe customer amount_usd (never more than monthly_cap_usd per calendar month) and credits " +
        "the additional bucket. 422 for amounts out of range or a cap below the amount; 409 stripe_not_configured when " +
        "enabling without WA_STRIPE_SECRET_KEY."
    )
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/billing")
  .annotateMerge(OpenApi.annotations({ title: "Plans and quota", description: "The project's plan, quota and auto-recharge." }))
{}

export class StripeWebhookApi extends HttpApiGroup.make("stripe_webhook", { topLevel: true })
  .add(
    HttpApiEndpoint.post("stripeWebhook", "/v1/billing/stripe/webhook", {
      payload: HttpApiSchema.StreamUint8Array({ contentType: "application/json" }),
      success: StripeWebhookResponse,
      error: [BadRequest, NotFound]
    }).annotate(
      OpenApi.Description,
      "Stripe's event deliveries (no API key: authenticated by the Stripe-Signature header against WA_STRIPE_WEBHOOK_SECRET). " +
        "checkout.session.completed, paid, in USD, with metadata.project_id credits amount_total to the project's additional " +
        "credits once per event id; other events are acknowledged. 400 bad_request for a missing or wrong signature (nothing " +
        "credited); 404 not_found when WA_STRIPE_WEBHOOK_SECRET is not set."
    )
  )
  .annotateMerge(OpenApi.annotations({ title: "Stripe", description: "Payment provider webhooks." }))
{}
