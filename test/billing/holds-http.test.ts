/**
 * Credit holds through the real service (issue 25 item 6): for every product whose create starts
 * charged work (DoAnything sessions, WebSearch runs, DeepResearch runs), 40 concurrent creates at
 * a balance of exactly one estimated charge admit one; the other 39 answer 402
 * insufficient_credits and leave nothing behind; once the admitted run has ended the balance is
 * at most one charge below zero and no hold is left. While a run is under way its hold shows in
 * GET .../billing/account (`held_usd`) and GET .../billing/quota (`held`, `held_usd`).
 *
 * WA_BILLING_MIN_BALANCE_USD is 0.001, below every fee, so the charge a create needs is its own
 * estimate: a DoAnything run's is the minimum balance (0.001), a WebSearch run's its fee per
 * query (0.003), a DeepResearch run's its fee (0.10). Track monitors charge per tick, not per
 * create (a tick's hold: test/in-process/billing-holds.test.ts).
 *
 * The admitted run stays under way through the burst (a run that ends uncharged frees its hold,
 * and the next create may then be admitted, rightly): the scripted model does not answer a
 * DoAnything or DeepResearch step until the burst is over (then the run is canceled), and the
 * search engine holds a WebSearch run's query for a few seconds.
 */
import type pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { FAKE_KEYS, type FakeEngines, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { eventually, TERMINAL } from "../support/runs.ts"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type ApiResponse, embeddedDatabaseClient, scriptedAgentEnv, type Service, startService, stopAndClean } from "../support/service.ts"
import { cliJson, micros } from "./support.ts"

const CREATES = 40
let engines: FakeEngines
let service: Service
let db: pg.Client
let model: ScriptedModel
/** Model steps wait on this until the burst is over. */
let release: () => void = () => {}
let gate: Promise<void> = Promise.resolve()
const closeGate = () => {
  gate = new Promise((resolve) => (release = resolve))
}

beforeAll(async () => {
  engines = await startFakeEngines({
    results: (engine, query) => [{ title: `${engine} ${query}`, url: `https://${engine}.example/${encodeURIComponent(query)}`, snippet: "hit" }]
  })
  model = await startScriptedModel(async () => {
    await gate
    return { status: 500, error: "the burst is over" }
  })
  service = await startService({
    env: scriptedAgentEnv(model.baseUrl, {
      WA_BILLING: "on",
      WA_BILLING_MIN_BALANCE_USD: "0.001",
      WA_SEARXNG_URL: engines.url,
      WA_BRAVE_API_KEY: FAKE_KEYS.brave,
      WA_BRAVE_BASE_URL: engines.url,
      WA_ALLOW_PRIVATE_NETWORKS: "true",
      WA_SEARCH_ENGINE_TIMEOUT_MS: "60000",
      WA_RATE_LIMIT_REQUESTS: "100000",
      WA_MAX_CONCURRENT_SESSIONS: "1000",
      WA_MAX_SESSIONS_PER_PROJECT: "1000",
      WA_MAX_CONCURRENT_RUNS: "1000"
    })
  })
  db = await embeddedDatabaseClient(service.dataDir)
}, 300_000)
afterAll(async () => {
  release()
  await db?.end()
  await stopAndClean(service)
  await engines?.close()
  await model?.close()
})

const base = () => `/v1/projects/${service.projectId}`
const account = () => service.request("GET", `${base()}/billing/account`)

/** Tops the balance up to exactly `usd` (it is never above: products go from the cheapest charge up). */
const balanceOf = async (usd: string) => {
  const current = micros((await account()).json.credit_balance_usd)
  const missing = micros(usd) - current
  expect(missing, `the balance ${current} is above ${usd}`).toBeGreaterThanOrEqual(0)
  if (missing > 0) await cliJson(service, "credits", "grant", "--project", service.projectId, "--usd", String(missing / 1_000_000))
  expect(micros((await account()).json.credit_balance_usd)).toBe(micros(usd))
}

const runsEnded = (ids: ReadonlyArray<string>) =>
  eventually("the admitted runs ended", async () => {
    const { rows } = await db.query("SELECT status FROM runs WHERE id = ANY($1)", [ids])
    return rows.length === ids.length && rows.every((row) => TERMINAL.includes(row.status)) ? true : undefined
  }, { timeoutMs: 120_000, everyMs: 200 })

interface Product {
  readonly name: string
  readonly chargeUsd: string
  readonly create: (i: number) => Promise<ApiResponse>
  /** The run an admitted create started. */
  readonly runId: (response: ApiResponse) => string
  /** Where the admitted run is canceled once the burst is over (WebSearch: it ends by itself). */
  readonly cancelPath?: (response: ApiResponse) => string
  readonly marker: (i: number) => string
  readonly countSql: string
}

const products: ReadonlyArray<Product> = [
  {
    name: "DoAnything sessions",
    chargeUsd: "0.001",
    create: (i) => service.request("POST", `${base()}/do_anything/sessions`, { body: { instructions: `holds session ${i}`, keep_alive: false } }),
    runId: (response) => response.json.latest_run_id,
    cancelPath: (response) => `${base()}/do_anything/sessions/${response.json.id}/runs/${response.json.latest_run_id}/cancel`,
    marker: (i) => `holds session ${i}`,
    countSql: "SELECT count(*)::int AS n FROM runs WHERE project_id = $1 AND instructions LIKE 'holds session %'"
  },
  {
    name: "WebSearch runs",
    chargeUsd: "0.003",
    create: (i) => service.request("POST", `${base()}/web_search/runs`, { body: { queries: [`holds search ${i}`], engines: ["searxng"], wait: false } }),
    runId: (response) => response.json.run_id,
    marker: (i) => `holds search ${i}`,
    countSql: "SELECT count(*)::int AS n FROM runs WHERE project_id = $1 AND request->'queries'->>0 LIKE 'holds search %'"
  },
  {
    name: "DeepResearch runs",
    chargeUsd: "0.10",
    create: (i) => service.request("POST", `${base()}/deep_research/runs`, { body: { topic: `holds research ${i}`, require_outline_approval: false } }),
    runId: (response) => response.json.id ?? response.json.run_id,
    cancelPath: (response) => `${base()}/deep_research/runs/${response.json.id ?? response.json.run_id}/cancel`,
    marker: (i) => `holds research ${i}`,
    countSql: "SELECT count(*)::int AS n FROM runs WHERE project_id = $1 AND kind = 'deep_research'"
  }
]

describe("credit holds through HTTP", () => {
  for (const product of products) {
    it(`${product.name}: 40 concurrent creates at a balance of one charge admit one, the overshoot is at most one charge`, { timeout: 300_000 }, async () => {
      await balanceOf(product.chargeUsd)
      // WebSearch: the engine holds the admitted run under way while its hold is looked at.
      if (product.name === "WebSearch runs") engines.setBehavior("searxng", { latencyMs: 4_000 })
      closeGate()
      try {
        const responses = await Promise.all(Array.from({ length: CREATES }, (_, i) => product.create(i)))
        const admitted = responses.filter((r) => r.status < 300)
        const refused = responses.filter((r) => r.status >= 300)
        expect(admitted.length, responses.map((r) => r.status).join(",")).toBe(1)
        for (const response of refused) {
          expect(response.status, response.text).toBe(402)
          expect(response.json.code).toBe("insufficient_credits")
        }
        // Nothing half-created by the refused.
        expect((await db.query(product.countSql, [service.projectId])).rows[0].n).toBe(1)

        const runId = product.runId(admitted[0]!)
        if (product.name === "WebSearch runs") {
          // Under way: the views show the hold (the fee of one query).
          const { rows } = await db.query("SELECT status FROM runs WHERE id = $1", [runId])
          expect(TERMINAL).not.toContain(rows[0].status)
          expect((await account()).json.held_usd).toBe("0.003")
          const quota = await service.request("GET", `${base()}/billing/quota`)
          expect(quota.status, quota.text).toBe(200)
          expect(quota.json).toMatchObject({ held: 3_000, held_usd: "0.003" })
        }
        if (product.cancelPath !== undefined) {
          const canceled = await service.request("POST", product.cancelPath(admitted[0]!), { body: {} })
          expect(canceled.status, canceled.text).toBeLessThan(300)
        }
        release()
        await runsEnded([runId])
        const { rows: [spent] } = await db.query(
          "SELECT (llm_cost_usd + browser_cost_usd + proxy_cost_usd + service_cost_usd)::text AS usd FROM runs WHERE id = $1", [runId])
        // Settled: no hold is left, the views show none, and the balance is at most one charge below zero.
        await eventually("the hold settled", async () => {
          const { rows } = await db.query("SELECT count(*)::int AS n FROM credit_holds WHERE project_id = $1", [service.projectId])
          return rows[0].n === 0 ? true : undefined
        }, { timeoutMs: 30_000 })
        const after = (await account()).json
        expect(after.held_usd).toBe("0.00")
        // One run was admitted, so the project spent what it spent: past the balance by at most one charge
        // (its estimate, or what a DoAnything run's browser time came to past its hold).
        const oneCharge = Math.max(micros(product.chargeUsd), micros(spent.usd))
        expect(micros(after.credit_balance_usd)).toBe(micros(product.chargeUsd) - micros(spent.usd))
        expect(micros(after.credit_balance_usd)).toBeGreaterThanOrEqual(-oneCharge)
        const ledger = await db.query("SELECT coalesce(sum(amount_micros), 0)::bigint::text AS sum FROM credit_ledger WHERE project_id = $1", [service.projectId])
        expect(Number(ledger.rows[0].sum)).toBe(micros(after.credit_balance_usd))
      } finally {
        release()
        engines.setBehavior("searxng", {})
      }
    })
  }
})
