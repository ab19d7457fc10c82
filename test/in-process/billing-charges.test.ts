/**
 * Charges of every kind and the monthly budget cap (src/billing/), in-process on a database of
 * this file with the real Ledger, Budget and RunStore (WA_BILLING=on):
 *
 * - browser time is charged per step and at the run's end, cumulatively, once per key: completing a
 *   step again charges nothing, and the run's and session's cost fields equal the ledger's entries;
 * - a product fee through RunStore.chargeRun is charged once, refused (not forced) when the
 *   project cannot pay;
 * - completeStep reports when the project's credits ran out;
 * - the budget cap: one quota warning per period at 80 %, charges refused at 100 %, admit fails
 *   with BudgetExceeded, and removing the cap lifts it; under 100 concurrent charges the spend
 *   stops within one charge of the cap and the warning is written once;
 * - the price file: a bad WA_PRICES_FILE stops start-up with one line naming the problem.
 */
import { expect, layer } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, References } from "effect"
import { SqlClient } from "effect/sql"
import { writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Projects } from "../../src/auth/projects.ts"
import { Budget } from "../../src/billing/budget.ts"
import { Ledger } from "../../src/billing/ledger.ts"
import { AppConfig, loadAppConfig } from "../../src/config/config.ts"
import type { RunId } from "../../src/domain/run.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { RunStore } from "../../src/store/runs.ts"
import { SessionStore } from "../../src/store/sessions.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"
import { stepCheckpoint, storeSession } from "./store-sessions.ts"
import { micros } from "../billing/support.ts"
import { LanguageModel } from "effect/ai"
import { FetchHttpClient } from "effect/http"
import { Schema } from "effect"
import { makeOpenAiCompatible } from "../../src/agent/providers/openai-compatible.ts"
import { meteredModel, newMeter } from "../../src/billing/metering.ts"
import { scriptedModel } from "../fixtures/model/scripted-model.ts"

const ConfigLive = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabase("charges")
  const dataDir = yield* freshDataDir("wa-charges")
  return AppConfig.layerFrom({ DATABASE_URL: url, WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Warn", WA_BILLING: "on", WA_BILLING_MIN_BALANCE_USD: "0" })
}))

const TestLayer = Layer.mergeAll(Ledger.layer, Budget.layer, RunStore.layer, SessionStore.layer, Projects.layer).pipe(
  Layer.provideMerge(databaseLayer("own")),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
  Layer.provideMerge(ConfigLive)
)

const newProject = (name: string) => Projects.use((projects) => projects.create(name)).pipe(Effect.map((p) => p.id))


layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })("charges and the budget cap", (it) => {
  it.effect("browser time: per step and at the end, cumulative, once per key; cost fields equal the ledger", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const store = yield* RunStore
      const sql = yield* SqlClient.SqlClient
      const projectId = yield* newProject("browser")
      yield* ledger.grant(projectId, 5_000_000, "additional")
      const { session, run } = yield* storeSession(projectId)
      yield* store.transition(run.id, "running")
      // The run has held the browser for two minutes: 2 x 0.006 USD at the shipped price.
      yield* sql`UPDATE runs SET started_at = now() - interval '2 minutes' WHERE id = ${run.id}`
      yield* store.completeStep(run.id, 0.01, stepCheckpoint(1))
      const afterStep1 = yield* ledger.usage(projectId, { kind: "charge_browser", limit: 10 })
      expect(afterStep1).toHaveLength(1)
      expect(afterStep1[0]!.idempotencyKey).toBe(`browser:${run.id}:1`)
      expect(-afterStep1[0]!.amountMicros).toBeGreaterThanOrEqual(12_000)
      expect(-afterStep1[0]!.amountMicros).toBeLessThan(18_000)
      // The same step completed again (a resumed execution): neither its tokens nor its time again.
      yield* store.completeStep(run.id, 0.01, stepCheckpoint(1))
      expect(yield* ledger.usage(projectId, { kind: "charge_browser", limit: 10 })).toHaveLength(1)
      expect(yield* ledger.usage(projectId, { kind: "charge_llm", limit: 10 })).toHaveLength(1)
      yield* sql`UPDATE runs SET started_at = started_at - interval '1 minute' WHERE id = ${run.id}`
      yield* store.completeStep(run.id, 0, stepCheckpoint(2))
      // Half a minute more before the run ends: its end charges that rest.
      yield* sql`UPDATE runs SET started_at = started_at - interval '30 seconds' WHERE id = ${run.id}`
      yield* store.transition(run.id, "done", { terminalReason: "done" })
      const browser = yield* ledger.usage(projectId, { kind: "charge_browser", limit: 10 })
      expect(browser.map((e) => e.idempotencyKey).sort()).toEqual([`browser:${run.id}:1`, `browser:${run.id}:2`, `browser:${run.id}:end`].sort())
      const browserMicros = -browser.reduce((sum, e) => sum + e.amountMicros, 0)
      expect(browserMicros).toBeGreaterThanOrEqual(21_000)

      const [costs] = yield* sql<{ run_llm: string; run_browser: string; llm: string; browser: string; proxy: string }>`
        SELECT r.llm_cost_usd::text AS run_llm, r.browser_cost_usd::text AS run_browser,
          s.llm_cost_usd::text AS llm, s.browser_cost_usd::text AS browser, s.proxy_cost_usd::text AS proxy
        FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.id = ${run.id}`
      expect(micros(costs!.run_browser)).toBe(browserMicros)
      expect(micros(costs!.browser)).toBe(browserMicros)
      expect(micros(costs!.run_llm)).toBe(10_000)
      expect(micros(costs!.proxy)).toBe(0)
      // Everything the session's cost fields hold is in the ledger, and the balance dropped by it.
      const charged = -(yield* ledger.usage(projectId, { limit: 100 })).filter((e) => e.kind.startsWith("charge_")).reduce((sum, e) => sum + e.amountMicros, 0)
      expect(charged).toBe(micros(costs!.llm) + micros(costs!.browser) + micros(costs!.proxy))
      expect((yield* ledger.balance(projectId)).totalMicros).toBe(5_000_000 - charged)
      expect((yield* ledger.rederive(projectId)).additionalMicros).toBe(5_000_000 - charged)
      // The last cost_update event reports the session's four fields, adding up.
      const events = (yield* store.eventsAfter(run.id, 0, 100)).filter((e) => e.type === "run.cost_update")
      const last = events.at(-1)!.data as Record<string, string>
      expect(Number(last.total_cost_usd)).toBeCloseTo(Number(last.llm_cost_usd) + Number(last.browser_cost_usd) + Number(last.proxy_cost_usd), 2)
      expect(session.id).toBe(run.session_id)
    }))

  it.effect("a product fee is charged once; refused when not forced and the project cannot pay", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const store = yield* RunStore
      const projectId = yield* newProject("fee")
      yield* ledger.grant(projectId, 250_000, "additional")
      // Both runs are admitted while the balance covers both fees' holds (0.10 each, no minimum in this file).
      const run = yield* store.createStandaloneRun(projectId, { _tag: "DeepResearch", topic: "fees" } as never)
      const other = yield* store.createStandaloneRun(projectId, { _tag: "DeepResearch", topic: "refused" } as never)
      const fee = { kind: "charge_research" as const, column: "service" as const, micros: 100_000, idempotencyKey: `research:${run.id}`, force: false }
      expect(yield* store.chargeRun(run.id, [fee])).toEqual({ exhausted: null, refused: false })
      expect(yield* store.chargeRun(run.id, [fee])).toEqual({ exhausted: null, refused: false })
      expect((yield* ledger.balance(projectId)).totalMicros).toBe(150_000)
      // A step's tokens (forced) take the balance below zero: the project can pay for nothing more.
      const step = yield* store.completeStep(run.id, 0.18, stepCheckpoint(1))
      expect(step.exhausted).toBe("credits")
      const refused = yield* store.chargeRun(other.id, [{ ...fee, idempotencyKey: `research:${other.id}` }])
      expect(refused).toEqual({ exhausted: "credits", refused: true })
      expect((yield* ledger.balance(projectId)).totalMicros).toBe(-30_000)
      const reread = (yield* store.getRun(run.id))!
      expect(reread.llm_cost_usd).toBe("0.180000")
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ service: string; other: string }>`
        SELECT (SELECT service_cost_usd::text FROM runs WHERE id = ${run.id}) AS service, (SELECT service_cost_usd::text FROM runs WHERE id = ${other.id}) AS other`
      expect(row).toEqual({ service: "0.100000", other: "0.000000" })
    }))

  it.effect("the cap: one warning at 80 %, refusal at 100 %, admit fails budget_exceeded, removing it lifts it", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const budget = yield* Budget
      const sql = yield* SqlClient.SqlClient
      const projectId = yield* newProject("cap")
      yield* ledger.grant(projectId, 10_000_000, "additional")
      const set = yield* budget.setCap(projectId, 1_000_000)
      expect(set).toMatchObject({ capMicros: 1_000_000, spentMicros: 0, warning: false, exceeded: false })
      const charge = (key: string, micros: number, force = false) =>
        ledger.charge({ projectId, kind: "charge_llm", micros, idempotencyKey: `${key}:${projectId}`, force })
      expect((yield* charge("a", 500_000)).exhausted).toBe(null)
      const warnings = () =>
        sql<{ n: number; type: string }>`SELECT count(*)::int AS n, min(type) AS type FROM inbox_notifications WHERE project_id = ${projectId}`.pipe(
          Effect.map((rows) => rows[0]!)
        )
      expect((yield* warnings()).n).toBe(0)
      yield* charge("b", 350_000)
      expect(yield* warnings()).toEqual({ n: 1, type: "billing.quota_warning" })
      expect(yield* budget.status(projectId)).toMatchObject({ spentMicros: 850_000, warning: true, exceeded: false })
      yield* budget.admit(projectId)
      const crossing = yield* charge("c", 200_000)
      expect(crossing).toMatchObject({ recorded: true, exhausted: "budget" })
      expect((yield* warnings()).n).toBe(1)
      const refused = yield* charge("d", 10_000)
      expect(refused).toMatchObject({ recorded: false, refused: true, exhausted: "budget" })
      // Work already done (forced) is still recorded.
      expect((yield* charge("e", 10_000, true)).recorded).toBe(true)
      const admitted = yield* Effect.exit(budget.admit(projectId))
      expect(Exit.isFailure(admitted) && Cause.squash(admitted.cause)).toMatchObject({ _tag: "BudgetExceeded", capMicros: 1_000_000, spentMicros: 1_060_000 })
      expect(yield* budget.exhausted(projectId)).toBe("budget")
      yield* budget.setCap(projectId, null)
      yield* budget.admit(projectId)
      expect(yield* budget.exhausted(projectId)).toBe(null)
      expect((yield* charge("f", 10_000)).recorded).toBe(true)
    }))

  it.effect("100 concurrent charges against a cap: spend stops within one charge of it, one warning", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const budget = yield* Budget
      const sql = yield* SqlClient.SqlClient
      const projectId = yield* newProject("cap-concurrent")
      yield* ledger.grant(projectId, 50_000_000, "additional")
      yield* budget.setCap(projectId, 1_000_000)
      const outcomes = yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) =>
        ledger.charge({ projectId, kind: "charge_browser", micros: 30_000, idempotencyKey: `cc:${projectId}:${i}` }), { concurrency: "unbounded" })
      const recorded = outcomes.filter((o) => o.recorded).length
      expect(recorded).toBe(34) // 33 x 30,000 = 990,000 < cap; the 34th crosses it; the rest are refused
      const status = yield* budget.status(projectId)
      expect(status.spentMicros).toBe(34 * 30_000)
      expect(status.exceeded).toBe(true)
      const [derived] = yield* sql<{ spent: string }>`
        SELECT (-sum(amount_micros))::text AS spent FROM credit_ledger WHERE project_id = ${projectId} AND kind LIKE 'charge\\_%'`
      expect(Number(derived!.spent)).toBe(status.spentMicros)
      const [notes] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM inbox_notifications WHERE project_id = ${projectId} AND type = 'billing.quota_warning'`
      expect(notes!.n).toBe(1)
    }))

  it.effect("a metered model counts the tokens of every text and object call (WebSearch charges them)", () =>
    Effect.gen(function*() {
      const model = yield* scriptedModel((request) => ({ text: request.response_format === undefined ? "plain" : "{\"n\": 1}" }))
      const layer = Layer.effect(LanguageModel.LanguageModel, makeOpenAiCompatible({ baseUrl: model.baseUrl, apiKey: undefined, model: "fake" })).pipe(
        Layer.provide(FetchHttpClient.layer)
      )
      const meter = newMeter()
      yield* Effect.gen(function*() {
        const lm = yield* LanguageModel.LanguageModel
        const text = yield* lm.generateText({ prompt: "one" })
        expect(text.text).toBe("plain")
        const object = yield* lm.generateObject({ prompt: "two", objectName: "n", schema: Schema.Struct({ n: Schema.Number }) })
        expect(object.value).toEqual({ n: 1 })
      }).pipe(Effect.provide(meteredModel(layer, meter)))
      // The scripted model reports 20,000 input and 500 output tokens a call.
      expect(meter).toEqual({ inputTokens: 40_000, outputTokens: 1_000 })
    }))

  it.effect("a bad price file stops start-up with one line", () =>
    Effect.gen(function*() {
      const file = join(tmpdir(), `wa-prices-${process.pid}.json`)
      writeFileSync(file, JSON.stringify({ models: {}, browser_per_minute: -1, proxy_per_gb: 0, deep_research_per_run: 0, web_search_per_query: 0, track_per_tick: 0 }))
      const exit = yield* Effect.exit(loadAppConfig({ WA_PRICES_FILE: file }))
      expect(Exit.isFailure(exit)).toBe(true)
      const message = Exit.isFailure(exit) ? String((Cause.squash(exit.cause) as Error).message) : ""
      expect(message).toMatch(/^invalid configuration: WA_PRICES_FILE .* is not a valid price table/)
      expect(message).toContain("browser_per_minute")
      const missing = yield* Effect.exit(loadAppConfig({ WA_PRICES_FILE: "/nonexistent/prices.json" }))
      expect(Exit.isFailure(missing) ? String((Cause.squash(missing.cause) as Error).message) : "").toMatch(/cannot be read/)
      writeFileSync(file, JSON.stringify({ models: { m: { input_per_mtok: 1, output_per_mtok: 2 } }, browser_per_minute: 0.01, proxy_per_gb: 1, deep_research_per_run: 0.5, web_search_per_query: 0.01, track_per_tick: 0.001 }))
      const ok = yield* loadAppConfig({ WA_PRICES_FILE: file })
      expect(ok.prices.browser_per_minute).toBe(0.01)
      expect((yield* loadAppConfig({})).prices.models["gpt-4.1"]).toEqual({ input_per_mtok: 2, output_per_mtok: 8 })
    }))
})

export type { RunId }
