/**
 * Plans and payments through the real service (WA_BILLING=on, embedded PostgreSQL):
 *
 * - Stripe checkout webhook: N distinct signed `checkout.session.completed` deliveries, 20 at a
 *   time: throughput and latency (signature check + one crediting transaction each), and the
 *   balance afterwards (must be exactly the sum);
 * - N concurrent deliveries of one event: exactly one credit;
 * - GET /billing/quota latency (plan, balance, period charges, per-key concurrency rows).
 *
 *   node bench/billing-payments.ts [N=300]
 */
import Stripe from "stripe"
import { type Service, startService, stopAndClean } from "../test/support/service.ts"

const n = Number(process.argv[2] ?? 300)
const secret = "whsec_bench"
const stripe = new Stripe("sk_bench_unused")
const service: Service = await startService({
  env: { WA_BILLING: "on", WA_STRIPE_WEBHOOK_SECRET: secret, WA_RATE_LIMIT_REQUESTS: "1000000" }
})

const percentile = (values: Array<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}
const ms = (v: number) => `${v.toFixed(1)} ms`

const deliver = async (id: string, cents: number) => {
  const payload = JSON.stringify({
    id,
    object: "event",
    type: "checkout.session.completed",
    data: { object: { id: `cs_${id}`, amount_total: cents, currency: "usd", payment_status: "paid", metadata: { project_id: service.projectId } } }
  })
  const signature = stripe.webhooks.generateTestHeaderString({ payload, secret })
  const started = performance.now()
  const response = await service.request("POST", "/v1/billing/stripe/webhook", {
    rawBody: payload,
    key: null,
    headers: { "content-type": "application/json", "stripe-signature": signature }
  })
  return { ms: performance.now() - started, credited: response.status === 200 && response.json.credited === true }
}

const inBatches = async <A>(count: number, width: number, one: (i: number) => Promise<A>) => {
  const results: Array<A> = []
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) results.push(await one(next++))
  }))
  return results
}

// Warm-up (connections, JIT).
await inBatches(20, 5, (i) => deliver(`evt_warm_${i}`, 100))

const started = performance.now()
const distinct = await inBatches(n, 20, (i) => deliver(`evt_bench_${i}`, 100 + (i % 7)))
const seconds = (performance.now() - started) / 1000
const expectedMicros = (20 * 100 + distinct.reduce((sum, _, i) => sum + 100 + (i % 7), 0)) * 10_000
const latencies = distinct.map((d) => d.ms)
console.log(`webhook, ${n} distinct events, 20 in flight: ${(n / seconds).toFixed(0)} events/s, p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))}, credited ${distinct.filter((d) => d.credited).length}/${n}`)

const duplicates = await Promise.all(Array.from({ length: n }, () => deliver("evt_bench_duplicate", 500)))
console.log(`webhook, ${n} concurrent deliveries of one event: credited ${duplicates.filter((d) => d.credited).length} time(s)`)

const quota = await service.request("GET", `/v1/projects/${service.projectId}/billing/quota`)
console.log(`balance: additional_credits ${quota.json.additional_credits} micro-USD, expected ${expectedMicros + 5_000_000} (${quota.json.additional_credits === expectedMicros + 5_000_000 ? "exact" : "MISMATCH"})`)

const quotaLatencies = await inBatches(n, 10, async () => {
  const t = performance.now()
  await service.request("GET", `/v1/projects/${service.projectId}/billing/quota`)
  return performance.now() - t
})
console.log(`GET /billing/quota, ${n} requests, 10 in flight: p50 ${ms(percentile(quotaLatencies, 50))}, p99 ${ms(percentile(quotaLatencies, 99))}`)

await stopAndClean(service)
