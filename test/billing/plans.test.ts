/**
 * Plans and payments through the real service (WA_BILLING=on) over HTTP and the `wa` CLI, with a
 * loopback server speaking Stripe's REST format:
 *
 * - `wa plans list` prints the plan table; `wa plans set` puts the project on a plan and grants
 *   its monthly credits (an unknown plan exits non-zero);
 * - GET /billing/quota renders QuotaStatus (plan, subscription, credits in micro-USD, concurrency
 *   rows per key) and /billing/account names the plan;
 * - 10 parallel session creates against the free plan's per-key cap of 2 open exactly 2 sessions,
 *   the rest get 429 too_many_concurrent_sessions;
 * - POST /v1/billing/stripe/webhook (no API key): a wrong or missing signature is 400 in the
 *   envelope and credits nothing; 8 concurrent duplicate deliveries of one signed event credit once;
 * - auto_recharge settings need an admin key, are strict, and a balance under the threshold is
 *   recharged through the provider by the running service.
 */
import Stripe from "stripe"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type FakeStripe, startFakeStripe } from "../fixtures/stripe/fake-stripe.ts"
import { eventually } from "../support/runs.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { cliJson } from "./support.ts"

const WEBHOOK_SECRET = "whsec_process_test"
let model: ScriptedModel
let fake: FakeStripe
let service: Service

beforeAll(async () => {
  model = await startScriptedModel(() => ({ tool: "ask_human", args: { prompt: "hold" } }))
  fake = await startFakeStripe()
  service = await startService({
    env: {
      WA_MODEL_BASE_URL: model.baseUrl,
      WA_MODEL: "scripted",
      WA_ALLOW_PRIVATE_NETWORKS: "true",
      WA_BILLING: "on",
      WA_STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      WA_STRIPE_SECRET_KEY: "sk_test_process",
      WA_STRIPE_API_BASE: fake.baseUrl,
      WA_AUTO_RECHARGE_POLL_MS: "200"
    }
  })
})
afterAll(async () => {
  await stopAndClean(service)
  await fake?.close()
  await model?.close()
})

const base = () => `/v1/projects/${service.projectId}`
const cli = (...args: Array<string>) => cliJson(service, ...args)
const stripe = new Stripe("sk_test_unused")
const webhook = (payload: string, signature?: string) =>
  service.request("POST", "/v1/billing/stripe/webhook", {
    rawBody: payload,
    key: null,
    headers: { "content-type": "application/json", ...(signature === undefined ? {} : { "stripe-signature": signature }) }
  })

describe("plans", () => {
  it("wa plans list / set; QuotaStatus and the account show the plan and its monthly credits", async () => {
    const list = await cli("plans", "list")
    expect(list.default_plan).toBe("dev")
    expect(list.plans.map((p: { id: string; concurrency: number }) => [p.id, p.concurrency])).toEqual([
      ["free", 2], ["dev", 5], ["business", 50], ["scaleup", 250]
    ])
    const before = await service.request("GET", `${base()}/billing/quota`)
    expect(before.status, before.text).toBe(200)
    expect(before.json).toMatchObject({ plan_id: "dev", subscription_status: "none", monthly_credits: 0, additional_credits: 0 })

    const set = await cli("plans", "set", "--project", service.projectId, "--plan", "free")
    expect(set).toMatchObject({ project_id: service.projectId, plan_id: "free", subscription_status: "active", monthly_credits_usd: "1.00" })
    const unknown = await service.cli("plans", "set", "--project", service.projectId, "--plan", "platinum")
    expect(unknown.code).not.toBe(0)
    expect(unknown.stderr).toContain("no plan platinum")

    const quota = await service.request("GET", `${base()}/billing/quota`)
    expect(quota.json).toMatchObject({
      project_id: service.projectId,
      plan_id: "free",
      plan_name: "Free",
      subscription_status: "active",
      monthly_credits: 1_000_000,
      monthly_credits_usd: "1.00",
      additional_credits: 0,
      plan_monthly_credits: 1_000_000,
      scheduled_cap: 1,
      scheduled_running: 0,
      monthly_quota: 10_000_000,
      quota_used: 0,
      quota_used_percent: 0,
      quota_warning: false,
      quota_exceeded: false
    })
    expect(quota.json.concurrency).toEqual([expect.objectContaining({ running: 0, cap: 2 })])
    expect((await service.request("GET", `${base()}/billing/account`)).json.plan).toBe("free")

    // A quota of zero is spent before anything is charged: QuotaStatus says exceeded, as new runs
    // are refused (402 budget_exceeded), then nothing once the cap is lifted.
    await cli("budget", "set", "--project", service.projectId, "--usd", "0")
    expect((await service.request("GET", `${base()}/billing/quota`)).json).toMatchObject({ monthly_quota: 0, quota_used: 0, quota_warning: true, quota_exceeded: true })
    const refused = await service.request("POST", `${base()}/do_anything/sessions`, { body: { instructions: "over the quota" } })
    expect(refused.status, refused.text).toBe(402)
    expect(refused.json.code).toBe("budget_exceeded")
    await cli("budget", "set", "--project", service.projectId, "--usd", "none")
    expect((await service.request("GET", `${base()}/billing/quota`)).json).toMatchObject({ monthly_quota: null, quota_warning: false, quota_exceeded: false })
  })

  it("10 parallel creates against the free plan's cap of 2 open exactly 2 sessions", async () => {
    const responses = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      service.request("POST", `${base()}/do_anything/sessions`, { body: { instructions: `parallel ${i}` } })))
    const created = responses.filter((r) => r.status === 201)
    expect(created, responses.map((r) => r.text).join("\n")).toHaveLength(2)
    for (const refused of responses.filter((r) => r.status !== 201)) {
      expect(refused.status).toBe(429)
      expect(refused.json).toMatchObject({ code: "too_many_concurrent_sessions", extra: { limit: 2 } })
    }
    const quota = await service.request("GET", `${base()}/billing/quota`)
    expect(quota.json.concurrency).toEqual([expect.objectContaining({ running: 2, cap: 2 })])
    for (const session of created) {
      expect((await service.request("POST", `${base()}/do_anything/sessions/${session.json.id}/close`)).status).toBe(200)
    }
  })
})

describe("stripe webhook", () => {
  const event = (id: string, cents: number) => JSON.stringify({
    id,
    object: "event",
    type: "checkout.session.completed",
    data: { object: { id: `cs_${id}`, object: "checkout.session", amount_total: cents, currency: "usd", payment_status: "paid", metadata: { project_id: service.projectId } } }
  })
  const additional = async () => (await service.request("GET", `${base()}/billing/quota`)).json.additional_credits as number

  it("a wrong or missing signature is 400 in the envelope and credits nothing", async () => {
    const payload = event("evt_forged", 100_000)
    const wrong = await webhook(payload, stripe.webhooks.generateTestHeaderString({ payload, secret: "whsec_other" }))
    expect(wrong.status).toBe(400)
    expect(wrong.json).toMatchObject({ code: "bad_request", extra: { param: "Stripe-Signature" } })
    // Signed right, but the body was altered on the way.
    const signature = stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET })
    const altered = await webhook(payload.replace("100000", "999999"), signature)
    expect(altered.status).toBe(400)
    const missing = await webhook(payload)
    expect(missing.status).toBe(400)
    expect(await additional()).toBe(0)
  })

  it("an amount past the largest Stripe charge is refused with 200 and a warning line, never 5xx (Stripe would retry a 5xx forever)", async () => {
    const before = await additional()
    // 10^15 cents fits a JS integer but not the ledger's bigint micro-USD (it answered 500);
    // 10^8 cents is one cent past Stripe's own maximum charge ($999,999.99).
    for (const [id, cents] of [["evt_huge_1", 1_000_000_000_000_000], ["evt_huge_2", 100_000_000], ["evt_huge_3", Number.MAX_SAFE_INTEGER], ["evt_huge_4", -5]] as const) {
      const payload = event(id, cents)
      const response = await webhook(payload, stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }))
      expect(response.status, `${id}: ${response.text}`).toBe(200)
      expect(response.json).toMatchObject({ received: true, event_id: id, credited: false, duplicate: false })
      expect(response.json.ignored_reason).toContain("amount_total")
      await eventually(`the refusal of ${id} logged`, () =>
        service.logs.find((line) => line.message === "stripe event refused" && line.annotations["event_id"] === id && line.level === "WARN"), { timeoutMs: 5_000 })
    }
    expect(await additional()).toBe(before)
    const usage = await service.request("GET", `${base()}/billing/usage?kind=topup_stripe`)
    expect(usage.json.items.map((e: { idempotency_key: string }) => e.idempotency_key)).not.toContain("stripe:evt_huge_1")
  })

  it("8 concurrent duplicate deliveries of one event credit the additional bucket once", async () => {
    const payload = event("evt_topup_1", 2_500)
    const signature = stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET })
    const responses = await Promise.all(Array.from({ length: 8 }, () => webhook(payload, signature)))
    expect(responses.map((r) => r.status)).toEqual(Array(8).fill(200))
    expect(responses.filter((r) => r.json.credited)).toHaveLength(1)
    expect(responses.filter((r) => r.json.duplicate)).toHaveLength(7)
    expect(await additional()).toBe(25_000_000)
    const usage = await service.request("GET", `${base()}/billing/usage?kind=topup_stripe`)
    expect(usage.json.items.map((e: { idempotency_key: string }) => e.idempotency_key)).toEqual(["stripe:evt_topup_1"])
  })
})

describe("auto-recharge", () => {
  const settings = { enabled: true, threshold_usd: "30.00", amount_usd: "10.00", monthly_cap_usd: "50.00", stripe_customer_id: "cus_process" }

  it("admin keys only; strict; out-of-range amounts are 422", async () => {
    const runKey = await cli("keys", "create", "--project", service.projectId, "--scope", "run")
    const forbidden = await service.request("PUT", `${base()}/billing/auto_recharge`, { body: settings, key: runKey.secret_token })
    expect(forbidden.status).toBe(403)
    const unknownField = await service.request("PUT", `${base()}/billing/auto_recharge`, { body: { ...settings, surprise: 1 } })
    expect(unknownField.status).toBe(422)
    const tooSmall = await service.request("PUT", `${base()}/billing/auto_recharge`, { body: { ...settings, amount_usd: "0.10" } })
    expect(tooSmall.status).toBe(422)
    expect(tooSmall.json.extra.errors[0].loc).toEqual(["body", "amount_usd"])
    const underCap = await service.request("PUT", `${base()}/billing/auto_recharge`, { body: { ...settings, monthly_cap_usd: "5.00" } })
    expect(underCap.status).toBe(422)
    expect((await service.request("GET", `${base()}/billing/auto_recharge`)).json).toMatchObject({ enabled: false, updated_at: null })
  })

  it("a balance under the threshold is recharged through the provider once, and credited", async () => {
    const put = await service.request("PUT", `${base()}/billing/auto_recharge`, { body: settings })
    expect(put.status, put.text).toBe(200)
    expect(put.json).toMatchObject({ enabled: true, threshold_usd: "30.00", amount_usd: "10.00", monthly_cap_usd: "50.00", stripe_customer_id: "cus_process" })
    // About 26 USD (25 topped up, the rest of the monthly credit) is under 30: one recharge of 10.
    const view = await eventually("the recharge to succeed", async () => {
      const got = await service.request("GET", `${base()}/billing/auto_recharge`)
      return got.json.recent[0]?.status === "succeeded" ? got.json : undefined
    })
    expect(view.recent).toHaveLength(1)
    expect(view).toMatchObject({ recharged_this_month_usd: "10.00" })
    expect(fake.charged).toEqual([expect.objectContaining({ amount: 1000, customer: "cus_process", key: `auto_recharge:${view.recent[0].id}` })])
    const quota = await service.request("GET", `${base()}/billing/quota`)
    expect(quota.json.additional_credits).toBe(35_000_000)
    // Re-armed by the credit exactly when it lifted the balance back to the threshold (30.00).
    // The view reads settings and recharges in one snapshot: before it did, a recharge that
    // succeeded between its reads showed beside the settings from before the re-arm (seen in CI).
    const balance = quota.json.monthly_credits + quota.json.additional_credits
    expect(view.armed, `balance ${balance} micro-USD`).toBe(balance >= 30_000_000)
  })
})

describe("contract", () => {
  it("the OpenAPI document has the quota, auto-recharge and webhook paths and QuotaStatusResponse", async () => {
    const doc = await service.request("GET", "/openapi.json", { key: null })
    expect(Object.keys(doc.json.paths)).toEqual(expect.arrayContaining([
      "/v1/projects/{pid}/billing/quota",
      "/v1/projects/{pid}/billing/auto_recharge",
      "/v1/billing/stripe/webhook"
    ]))
    expect(Object.keys(doc.json.components.schemas.QuotaStatusResponse.properties)).toEqual(expect.arrayContaining([
      "project_id", "plan_id", "plan_name", "subscription_status", "monthly_credits", "additional_credits", "scheduled_cap", "scheduled_running", "concurrency"
    ]))
  })
})
