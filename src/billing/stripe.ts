/**
 * The payment provider, Stripe (or anything speaking its REST API at WA_STRIPE_API_BASE), through
 * the official `stripe` package:
 *
 * - Checkout top-ups: `POST /v1/billing/stripe/webhook` receives Stripe's events, verified with
 *   `webhooks.constructEvent` against WA_STRIPE_WEBHOOK_SECRET on the raw body. A
 *   `checkout.session.completed` (or, for delayed payment methods, `checkout.session.
 *   async_payment_succeeded`) event whose session is paid, in USD, with `metadata.project_id`
 *   of a project here credits `amount_total` (cents) to the project's additional bucket, once per
 *   event id (ledger key `stripe:<event id>`; Stripe delivers at least once, and duplicates racing
 *   each other are serialised by the balance row's lock). Other events are acknowledged and ignored.
 * - Auto-recharge (src/billing/auto-recharge.ts) charges a saved customer with a confirmed,
 *   off-session PaymentIntent, with an Idempotency-Key so a retried call charges once.
 */
import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import type Stripe from "stripe"
import { AppConfig } from "../config/config.ts"
import { LedgerStore } from "./store/ledger.ts"
import { PlanStore } from "./store/plan-store.ts"
import { usdFromMicros } from "../domain/money.ts"
import type { WireBody } from "../domain/errors.ts"
import { ProjectId } from "../domain/run.ts"

export class StripeNotConfigured extends Schema.TaggedError<StripeNotConfigured>()("StripeNotConfigured", {
  variable: Schema.String
}) {
  get httpStatus() { return 404 as const }
  get code() { return "not_found" }
  wire(): WireBody {
    const what = this.variable === "WA_STRIPE_WEBHOOK_SECRET" ? "Stripe webhooks are" : "Stripe is"
    return { detail: `${what} not configured on this service (${this.variable})`, extra: {} }
  }
}

export class StripeSignatureInvalid extends Schema.TaggedError<StripeSignatureInvalid>()("StripeSignatureInvalid", {
  reason: Schema.String
}) {
  get httpStatus() { return 400 as const }
  get code() { return "bad_request" }
  wire(): WireBody {
    return { detail: `the Stripe signature does not verify: ${this.reason}`, extra: { param: "Stripe-Signature" } }
  }
}

/** A provider call that did not charge: `declined` is final (card refused), `retryable` may be tried again with the same key. */
export class StripeCallFailed extends Schema.TaggedError<StripeCallFailed>()("StripeCallFailed", {
  retryable: Schema.Boolean,
  message: Schema.String
}) {}

export interface WebhookOutcome {
  readonly eventId: string
  readonly type: string
  /** Credited by this delivery (false: ignored, or already credited by an earlier delivery). */
  readonly credited: boolean
  readonly duplicate: boolean
  readonly projectId: ProjectId | null
  readonly amountUsd: string | null
  /** Why nothing was credited, when nothing was. */
  readonly ignoredReason: string | null
}

export interface PaymentIntentInput {
  readonly amountCents: number
  readonly customerId: string
  readonly paymentMethodId: string | null
  readonly idempotencyKey: string
  readonly metadata: Record<string, string>
}

/** The ledger kind of a checkout top-up. */
export const STRIPE_TOPUP_KIND = "topup_stripe"

/**
 * The largest top-up credited, in cents: Stripe's own maximum for one USD charge ($999,999.99).
 * A signed event above it (or a total that is not a positive whole number of cents) is not a
 * payment Stripe can have taken; it is refused with 200 and a warning line, never 5xx, which
 * Stripe would retry for days. (Unbounded, 10^15 cents overflowed the ledger's bigint micro-USD.)
 */
export const MAX_TOPUP_CENTS = 99_999_999

const baseAddress = (base: string) => {
  const url = new URL(base)
  return {
    host: url.hostname,
    port: url.port === "" ? (url.protocol === "http:" ? 80 : 443) : Number(url.port),
    protocol: url.protocol === "http:" ? "http" as const : "https" as const
  }
}

export class StripeBilling extends Context.Service<StripeBilling, {
  readonly handleWebhook: (rawBody: string, signature: string | undefined) => Effect.Effect<WebhookOutcome, StripeNotConfigured | StripeSignatureInvalid>
  readonly createPaymentIntent: (input: PaymentIntentInput) => Effect.Effect<{ readonly id: string; readonly status: string }, StripeCallFailed | StripeNotConfigured>
}>()("wa/billing/StripeBilling") {
  static readonly layer = Layer.effect(
    StripeBilling,
    Effect.gen(function*() {
      const plans = yield* PlanStore
      const ledger = yield* LedgerStore
      const config = yield* AppConfig
      const secretKey = Option.map(config.stripeSecretKey, Redacted.value)
      const webhookSecret = Option.map(config.stripeWebhookSecret, Redacted.value)
      // The Stripe library (about 0.2 s of module loading) is loaded at the first call, not at
      // start: most deployments never configure Stripe.
      let loaded: Promise<Stripe> | undefined
      const stripeClient = Effect.promise(() =>
        loaded ??= import("stripe").then(({ default: StripeClient }) =>
          new StripeClient(Option.getOrElse(secretKey, () => "sk_unconfigured"), {
            ...baseAddress(config.stripeApiBase),
            // Retries are ours (the recharge outbox), each with the same Idempotency-Key.
            maxNetworkRetries: 0,
            timeout: 30_000
          })
        )
      )

      const credit = (event: Stripe.Event) =>
        Effect.gen(function*() {
          const ignore = (reason: string) => ({
            eventId: event.id,
            type: event.type,
            credited: false,
            duplicate: false,
            projectId: null,
            amountUsd: null,
            ignoredReason: reason
          })
          // A delayed payment method completes the session unpaid, then pays in an async_payment_succeeded event.
          if (event.type !== "checkout.session.completed" && event.type !== "checkout.session.async_payment_succeeded") {
            return ignore(`event type ${event.type} is not handled`)
          }
          const session = event.data.object
          const metadataProjectId = session.metadata?.project_id
          if (metadataProjectId === undefined || metadataProjectId === "") return ignore("the checkout session has no metadata.project_id")
          // The project id enters from Stripe's metadata: branded here, then checked to exist below.
          const projectId = ProjectId.make(metadataProjectId)
          if (session.payment_status !== "paid") return ignore(`the checkout session is ${session.payment_status}, not paid`)
          if ((session.currency ?? "").toLowerCase() !== "usd") return ignore(`currency ${session.currency} is not usd`)
          const cents: unknown = session.amount_total ?? 0
          if (typeof cents !== "number" || !Number.isSafeInteger(cents) || cents <= 0 || cents > MAX_TOPUP_CENTS) {
            const reason = `amount_total ${String(cents)} is not a whole number of cents between 1 and ${MAX_TOPUP_CENTS} (the largest Stripe charge)`
            yield* Effect.logWarning("stripe event refused").pipe(Effect.annotateLogs({ event_id: event.id, project_id: projectId, reason }))
            return ignore(reason)
          }
          if (!(yield* plans.projectExists(projectId))) return ignore(`no project ${projectId}`)
          const micros = cents * 10_000
          const { recorded } = yield* ledger.credit({
            projectId,
            micros,
            bucket: "additional",
            kind: STRIPE_TOPUP_KIND,
            idempotencyKey: `stripe:${event.id}`
          })
          return {
            eventId: event.id,
            type: event.type,
            credited: recorded,
            duplicate: !recorded,
            projectId,
            amountUsd: usdFromMicros(micros),
            ignoredReason: null
          }
        })

      return StripeBilling.of({
        handleWebhook: Effect.fn("StripeBilling.handleWebhook")(function*(rawBody: string, signature: string | undefined) {
          if (Option.isNone(webhookSecret)) return yield* new StripeNotConfigured({ variable: "WA_STRIPE_WEBHOOK_SECRET" })
          if (signature === undefined || signature === "") return yield* new StripeSignatureInvalid({ reason: "the Stripe-Signature header is missing" })
          const client = yield* stripeClient
          const event = yield* Effect.try({
            try: () => client.webhooks.constructEvent(rawBody, signature, webhookSecret.value),
            catch: (error) => new StripeSignatureInvalid({ reason: error instanceof Error ? error.message : String(error) })
          })
          const outcome = yield* credit(event)
          if (outcome.ignoredReason !== null) yield* Effect.logInfo("stripe event ignored").pipe(Effect.annotateLogs({ event_id: event.id, reason: outcome.ignoredReason }))
          return outcome
        }),
        createPaymentIntent: Effect.fn("StripeBilling.createPaymentIntent")(function*(input: PaymentIntentInput) {
          if (Option.isNone(secretKey)) return yield* new StripeNotConfigured({ variable: "WA_STRIPE_SECRET_KEY" })
          const client = yield* stripeClient
          const intent = yield* Effect.tryPromise({
            try: () =>
              client.paymentIntents.create({
                amount: input.amountCents,
                currency: "usd",
                customer: input.customerId,
                ...(input.paymentMethodId === null ? {} : { payment_method: input.paymentMethodId }),
                confirm: true,
                off_session: true,
                metadata: input.metadata
              }, { idempotencyKey: input.idempotencyKey }),
            catch: (error) => {
              // 4xx other than 409/429 (a declined card, a bad customer) will not get better; the rest may.
              const status = (error as { statusCode?: number }).statusCode
              const retryable = status === undefined || status >= 500 || status === 409 || status === 429
              return new StripeCallFailed({ retryable, message: error instanceof Error ? error.message : String(error) })
            }
          })
          if (intent.status !== "succeeded") {
            return yield* new StripeCallFailed({ retryable: false, message: `the payment intent ${intent.id} is ${intent.status}, not succeeded` })
          }
          return { id: intent.id, status: intent.status }
        })
      })
    })
  ).pipe(Layer.provide(Layer.mergeAll(PlanStore.layer, LedgerStore.layer)))
}
