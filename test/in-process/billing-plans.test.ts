/**
 * Plans, monthly grants, QuotaStatus, Stripe checkout top-ups and auto-recharge in-process, on a
 * database of this file, with the real Ledger, Plans, Quota, StripeBilling (the official `stripe`
 * package) and AutoRecharge, and a loopback server speaking Stripe's REST format:
 *
 * - a project is on the default plan (dev) without a subscription: no monthly credits; `set`
 *   grants the plan's monthly credits once per period (setting again, or another plan, grants
 *   nothing more), and the concurrency cap follows the plan;
 * - a new period opens lazily: the old monthly remainder expires and the grant is made exactly
 *   once, even under concurrent charges and balance reads;
 * - 30 concurrent session creates against the free plan's cap of 2 give 2;
 * - QuotaStatus: spend of the period against the plan's quota with the 80 % warning, per-key rows;
 * - a signed checkout.session.completed credits once under 10 concurrent duplicate deliveries; a
 *   wrong signature credits nothing;
 * - auto-recharge: one recharge per threshold crossing (also with concurrent passes), sent as a
 *   form-encoded off-session PaymentIntent with an Idempotency-Key, retried with the same key after
 *   a 5xx, failed on a decline, never past the monthly cap.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Exit, Layer, References } from "effect"
import { SqlClient } from "effect/sql"
import Stripe from "stripe"
import { ApiKeys } from "../../src/auth/api-keys.ts"
import { Projects } from "../../src/auth/projects.ts"
import { AutoRecharge } from "../../src/billing/auto-recharge.ts"
import { Ledger } from "../../src/billing/ledger.ts"
import { monthlyGrantKey } from "../../src/billing/store/ledger.ts"
import { Plans } from "../../src/billing/plans.ts"
import { Quota, quotaUsedPercent } from "../../src/billing/quota.ts"
import { StripeBilling } from "../../src/billing/stripe.ts"
import { AppConfig } from "../../src/config/config.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { RunStore } from "../../src/store/runs.ts"
import { SessionStore } from "../../src/store/sessions.ts"
import { type FakeStripe, startFakeStripe } from "../fixtures/stripe/fake-stripe.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"

const WEBHOOK_SECRET = "whsec_test_plans"
let fake: FakeStripe

const ConfigLive = Layer.unwrap(Effect.gen(function*() {
  fake = yield* Effect.acquireRelease(Effect.promise(() => startFakeStripe()), (f) => Effect.promise(() => f.close()))
  const url = yield* freshDatabase("plans")
  const dataDir = yield* freshDataDir("wa-plans")
  return AppConfig.layerFrom({
    DATABASE_URL: url,
    WA_DATA_DIR: dataDir,
    WA_LOG_LEVEL: "Error",
    WA_BILLING: "on",
    WA_STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    WA_STRIPE_SECRET_KEY: "sk_test_plans",
    WA_STRIPE_API_BASE: fake.baseUrl
  })
}))

const TestLayer = Layer.mergeAll(Ledger.layer, Plans.layer, Quota.layer, StripeBilling.layer, AutoRecharge.layer, RunStore.layer, SessionStore.layer, Projects.layer, ApiKeys.layer).pipe(
  Layer.provideMerge(databaseLayer("own")),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Error")),
  Layer.provideMerge(ConfigLive)
)

const newProject = (name: string) => Projects.use((projects) => projects.create(name)).pipe(Effect.map((p) => p.id))

const grantEntries = (projectId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ idempotency_key: string; amount: string; period_start: Date }>`
      SELECT idempotency_key, amount_micros::text AS amount, period_start FROM credit_ledger
      WHERE project_id = ${projectId} AND kind = 'grant_monthly' ORDER BY id`
  })

const stripeClient = new Stripe("sk_test_unused")
const signed = (event: Record<string, unknown>, secret = WEBHOOK_SECRET) => {
  const payload = JSON.stringify(event)
  return { payload, signature: stripeClient.webhooks.generateTestHeaderString({ payload, secret }) }
}
const checkoutCompleted = (id: string, projectId: string, cents: number) => ({
  id,
  object: "event",
  type: "checkout.session.completed",
  data: { object: { id: `cs_${id}`, object: "checkout.session", amount_total: cents, currency: "usd", payment_status: "paid", metadata: { project_id: projectId } } }
})

const newRun = {
  instructions: "hold",
  request: { _tag: "DoAnything", instructions: "hold", keep_alive: true, agentmail: true, skills: [], allowed_actions: [] } as never,
  maxSteps: 5,
  model: null,
  maxDurationMs: null
}

layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })("plans and payments", (it) => {
  it.effect("default plan without a subscription; set grants once per period; the cap follows the plan", () =>
    Effect.gen(function*() {
      const plans = yield* Plans
      const ledger = yield* Ledger
      const projectId = yield* newProject("plan-set")
      expect(yield* plans.subscription(projectId)).toMatchObject({ plan: { id: "dev", concurrency: 5 }, subscriptionStatus: "none" })
      expect(yield* plans.concurrencyCap(projectId)).toBe(5)
      expect((yield* ledger.balance(projectId)).totalMicros).toBe(0)

      yield* plans.set(projectId, "free")
      expect(yield* plans.concurrencyCap(projectId)).toBe(2)
      expect((yield* ledger.balance(projectId)).monthlyMicros).toBe(1_000_000)
      // Again, and another plan, in the same period: no second grant.
      yield* plans.set(projectId, "free")
      yield* plans.set(projectId, "dev")
      expect(yield* plans.concurrencyCap(projectId)).toBe(5)
      const balance = yield* ledger.balance(projectId)
      expect(balance.monthlyMicros).toBe(1_000_000)
      const grants = yield* grantEntries(projectId)
      expect(grants.map((g) => [g.idempotency_key, g.amount])).toEqual([[monthlyGrantKey(projectId, balance.periodStart), "1000000"]])

      const unknown = yield* Effect.exit(plans.set(projectId, "platinum"))
      expect(Exit.isFailure(unknown) && JSON.stringify(unknown.cause)).toContain("UnknownPlan")
      expect((yield* plans.unset(projectId)).subscriptionStatus).toBe("none")
    }))

  it.effect("a new period expires the old remainder and grants once, under concurrent charges and reads", () =>
    Effect.gen(function*() {
      const plans = yield* Plans
      const ledger = yield* Ledger
      const sql = yield* SqlClient.SqlClient
      const projectId = yield* newProject("rollover")
      yield* plans.set(projectId, "dev")
      yield* ledger.grant(projectId, 5_000_000, "additional")
      yield* ledger.charge({ projectId, kind: "charge_llm", micros: 4_000_000, idempotencyKey: `c0:${projectId}` })
      // Move the balance row and its entries one period back: that period has ended.
      const current = yield* ledger.balance(projectId)
      yield* sql`UPDATE credit_balances SET period_start = period_start - interval '1 month', period_end = period_start WHERE project_id = ${projectId}`
      const [old] = yield* sql<{ period_start: Date }>`SELECT period_start FROM credit_balances WHERE project_id = ${projectId}`
      yield* sql`
        UPDATE credit_ledger SET period_start = ${old!.period_start},
          idempotency_key = replace(idempotency_key, ${current.periodStart.toISOString()}, ${old!.period_start.toISOString()})
        WHERE project_id = ${projectId}`

      yield* Effect.all([
        ...Array.from({ length: 10 }, (_, i) => ledger.charge({ projectId, kind: "charge_llm", micros: 1_000, idempotencyKey: `c${i + 1}:${projectId}` })),
        ...Array.from({ length: 10 }, () => ledger.balance(projectId))
      ], { concurrency: "unbounded" })

      const balance = yield* ledger.balance(projectId)
      expect(balance.periodStart.getTime()).toBeGreaterThan(old!.period_start.getTime())
      // 25 USD granted for the new period, 21 left of the old one expired, 10 charges of 0.001 from the new grant.
      expect(balance.monthlyMicros).toBe(25_000_000 - 10_000)
      expect(balance.additionalMicros).toBe(5_000_000)
      const grants = yield* grantEntries(projectId)
      expect(grants.map((g) => g.idempotency_key)).toEqual([
        monthlyGrantKey(projectId, old!.period_start),
        monthlyGrantKey(projectId, balance.periodStart)
      ])
      const [expired] = yield* sql<{ amount: string }>`
        SELECT sum(amount_micros)::text AS amount FROM credit_ledger WHERE project_id = ${projectId} AND kind = 'expire_monthly'`
      expect(expired!.amount).toBe("-21000000")
      expect(yield* ledger.rederive(projectId)).toEqual({ monthlyMicros: balance.monthlyMicros, additionalMicros: balance.additionalMicros })
    }))

  it.effect("30 concurrent session creates against the free plan's cap of 2 give 2", () =>
    Effect.gen(function*() {
      const plans = yield* Plans
      const store = yield* SessionStore
      const keys = yield* ApiKeys
      const projectId = yield* newProject("cap")
      yield* plans.set(projectId, "free")
      const { row } = yield* keys.create(projectId, "capped", { scope: "run", createdByKeyId: null })
      const outcomes = yield* Effect.forEach(Array.from({ length: 30 }), () =>
        Effect.gen(function*() {
          const cap = yield* plans.concurrencyCap(projectId)
          return yield* Effect.exit(store.createSession({ projectId, apiKeyId: row.id, profileId: null, workspaceId: null, maxOpenSessions: cap, run: newRun }))
        }), { concurrency: "unbounded" })
      expect(outcomes.filter(Exit.isSuccess)).toHaveLength(2)
      expect(outcomes.filter((o) => Exit.isFailure(o) && JSON.stringify(o.cause).includes("SessionCapReached"))).toHaveLength(28)

      const status = yield* (yield* Quota).status(projectId)
      expect(status.concurrency).toEqual([{ keyId: row.id, keyName: "capped", running: 2, cap: 2 }])
      expect(status).toMatchObject({ subscriptionStatus: "active", scheduledCap: 1, scheduledRunning: 0 })
    }))

  it.effect("QuotaStatus: the period's spend against the plan's quota, warning from 80 %", () =>
    Effect.gen(function*() {
      const plans = yield* Plans
      const ledger = yield* Ledger
      const quota = yield* Quota
      const projectId = yield* newProject("quota")
      yield* plans.set(projectId, "free") // quota 10 USD, 1 USD monthly credits
      yield* ledger.grant(projectId, 20_000_000, "additional")
      yield* ledger.charge({ projectId, kind: "charge_llm", micros: 7_900_000, idempotencyKey: `q1:${projectId}` })
      const below = yield* quota.status(projectId)
      expect(below).toMatchObject({ spentMicros: 7_900_000, quotaMicros: 10_000_000 })
      expect(quotaUsedPercent(below)).toBe(79)
      yield* ledger.charge({ projectId, kind: "charge_browser", micros: 100_000, idempotencyKey: `q2:${projectId}` })
      const warned = yield* quota.status(projectId)
      expect(quotaUsedPercent(warned)).toBe(80)
      expect(warned.balance).toMatchObject({ monthlyMicros: 0, additionalMicros: 13_000_000 })
    }))

  it.effect("a checkout top-up credits once under 10 concurrent duplicate deliveries; a bad signature credits nothing", () =>
    Effect.gen(function*() {
      const stripe = yield* StripeBilling
      const ledger = yield* Ledger
      const projectId = yield* newProject("checkout")
      const { payload, signature } = signed(checkoutCompleted("evt_dup_1", projectId, 2_500))
      const outcomes = yield* Effect.forEach(Array.from({ length: 10 }), () => stripe.handleWebhook(payload, signature), { concurrency: "unbounded" })
      expect(outcomes.filter((o) => o.credited)).toHaveLength(1)
      expect(outcomes.filter((o) => o.duplicate)).toHaveLength(9)
      expect((yield* ledger.balance(projectId)).additionalMicros).toBe(25_000_000)
      const entries = yield* ledger.usage(projectId, { kind: "topup_stripe", limit: 10 })
      expect(entries.map((e) => [e.idempotencyKey, e.amountMicros])).toEqual([["stripe:evt_dup_1", 25_000_000]])

      const forged = signed(checkoutCompleted("evt_forged", projectId, 100_000), "whsec_wrong")
      const refused = yield* Effect.exit(stripe.handleWebhook(forged.payload, forged.signature))
      expect(Exit.isFailure(refused) && JSON.stringify(refused.cause)).toContain("StripeSignatureInvalid")
      const missing = yield* Effect.exit(stripe.handleWebhook(forged.payload, undefined))
      expect(Exit.isFailure(missing)).toBe(true)
      // An unpaid session and an unknown project are acknowledged, not credited.
      const unpaid = checkoutCompleted("evt_unpaid", projectId, 900)
      ;(unpaid.data.object as { payment_status: string }).payment_status = "unpaid"
      const u = signed(unpaid)
      expect(yield* stripe.handleWebhook(u.payload, u.signature)).toMatchObject({ credited: false, ignoredReason: expect.stringContaining("unpaid") })
      // Its later async_payment_succeeded (a delayed payment method) credits it.
      const paidLater = checkoutCompleted("evt_async_paid", projectId, 900)
      paidLater.type = "checkout.session.async_payment_succeeded"
      const p = signed(paidLater)
      expect(yield* stripe.handleWebhook(p.payload, p.signature)).toMatchObject({ credited: true, amountUsd: "9.00" })
      const other = signed({ ...checkoutCompleted("evt_other", projectId, 900), type: "invoice.paid" })
      expect(yield* stripe.handleWebhook(other.payload, other.signature)).toMatchObject({ credited: false, ignoredReason: expect.stringContaining("invoice.paid") })
      const nobody = signed(checkoutCompleted("evt_nobody", "proj_missing", 900))
      expect(yield* stripe.handleWebhook(nobody.payload, nobody.signature)).toMatchObject({ credited: false })
      expect((yield* ledger.balance(projectId)).additionalMicros).toBe(34_000_000)
    }))

  it.effect("auto-recharge: once per crossing, Idempotency-Key kept across a 5xx retry, a decline fails, the monthly cap holds", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const recharge = yield* AutoRecharge
      const sql = yield* SqlClient.SqlClient
      const projectId = yield* newProject("recharge")
      yield* ledger.grant(projectId, 20_000_000, "additional")
      yield* recharge.update(projectId, {
        enabled: true,
        thresholdMicros: 5_000_000,
        amountMicros: 10_000_000,
        monthlyCapMicros: 25_000_000,
        stripeCustomerId: "cus_test_1",
        stripePaymentMethodId: "pm_card_visa"
      })
      const spend = (n: number, micros: number) => ledger.charge({ projectId, kind: "charge_llm", micros, idempotencyKey: `r${n}:${projectId}` })
      const due = sql`UPDATE auto_recharges SET next_attempt_at = now() WHERE project_id = ${projectId} AND status = 'pending'`

      // Above the threshold: nothing. Crossing it: one recharge, also with 5 passes at once.
      expect(yield* recharge.queue).toEqual([])
      yield* spend(1, 16_000_000)
      const queued = (yield* Effect.all(Array.from({ length: 5 }, () => recharge.queue), { concurrency: "unbounded" })).flat()
      expect(queued).toHaveLength(1)
      expect(yield* recharge.queue).toEqual([])

      // The provider answers 500 first: the recharge stays pending, then is sent again with the same key.
      fake.next.push("server_error")
      expect(yield* recharge.send).toBe(1)
      let view = yield* recharge.view(projectId)
      expect(view.recent[0]).toMatchObject({ id: queued[0], status: "pending", attempts: 1 })
      yield* due
      expect(yield* recharge.send).toBe(1)
      view = yield* recharge.view(projectId)
      expect(view.recent[0]).toMatchObject({ id: queued[0], status: "succeeded", attempts: 2, paymentIntentId: "pi_fake_1" })
      const sent = fake.requests.filter((r) => r.idempotencyKey === `auto_recharge:${queued[0]}`)
      expect(sent).toHaveLength(2)
      expect(sent[0]!.contentType).toContain("application/x-www-form-urlencoded")
      expect(sent[0]!.authorization).toBe("Bearer sk_test_plans")
      expect(sent[0]!.form).toMatchObject({
        amount: "1000",
        currency: "usd",
        customer: "cus_test_1",
        payment_method: "pm_card_visa",
        confirm: "true",
        off_session: "true",
        "metadata[project_id]": projectId
      })
      expect(fake.charged.filter((c) => c.customer === "cus_test_1")).toHaveLength(1)
      expect((yield* ledger.balance(projectId)).totalMicros).toBe(14_000_000)
      // A second send (or a replay of the same key) credits nothing more.
      expect(yield* recharge.send).toBe(0)
      expect((yield* ledger.usage(projectId, { kind: "topup_auto_recharge", limit: 10 })).map((e) => e.amountMicros)).toEqual([10_000_000])

      // Back above the threshold: re-armed. The next crossing is declined: failed, nothing credited.
      yield* spend(2, 10_000_000)
      const second = yield* recharge.queue
      expect(second).toHaveLength(1)
      fake.next.push("declined")
      yield* recharge.send
      view = yield* recharge.view(projectId)
      expect(view.recent[0]).toMatchObject({ id: second[0], status: "failed" })
      expect(view.recent[0]!.lastError).toContain("declined")
      expect(view.settings.armed).toBe(false)
      expect((yield* ledger.balance(projectId)).totalMicros).toBe(4_000_000)
      expect(yield* recharge.queue).toEqual([])

      // A manual top-up lifts it above the threshold (re-armed); the next crossing recharges (20 of
      // 25 this month), and the one after would pass the cap: nothing is queued.
      yield* ledger.grant(projectId, 6_000_000, "additional")
      expect(yield* recharge.queue).toEqual([])
      yield* spend(3, 6_000_000)
      expect(yield* recharge.queue).toHaveLength(1)
      yield* recharge.send
      expect((yield* recharge.view(projectId)).monthMicros).toBe(20_000_000)
      expect((yield* ledger.balance(projectId)).totalMicros).toBe(14_000_000)
      yield* spend(4, 10_000_000)
      expect(yield* recharge.queue).toEqual([])
      expect((yield* recharge.view(projectId)).monthMicros).toBe(20_000_000)
      expect(fake.charged.filter((c) => c.customer === "cus_test_1")).toHaveLength(2)
    }))

  it.effect("disabling auto-recharge drops a queued recharge that was never sent", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const recharge = yield* AutoRecharge
      const projectId = yield* newProject("recharge-off")
      const settings = { thresholdMicros: 5_000_000, amountMicros: 10_000_000, monthlyCapMicros: 50_000_000, stripeCustomerId: "cus_off", stripePaymentMethodId: null }
      yield* recharge.update(projectId, { enabled: true, ...settings })
      yield* ledger.grant(projectId, 1_000_000, "additional")
      const [queued] = yield* recharge.queue
      expect(queued).toBeDefined()
      yield* recharge.update(projectId, { enabled: false, ...settings })
      expect((yield* recharge.view(projectId)).recent[0]).toMatchObject({ id: queued, status: "failed", attempts: 0 })
      yield* recharge.send
      expect(fake.charged.filter((c) => c.customer === "cus_off")).toHaveLength(0)
      expect((yield* ledger.balance(projectId)).totalMicros).toBe(1_000_000)
    }))
})
