/**
 * The credit ledger (src/billing/ledger.ts) in-process on a database of this file, with the real
 * Ledger and RunStore:
 *
 * - 200 concurrent charges on one project leave a balance that is exact (grants minus the charges
 *   recorded), negative by less than one charge, and equal to the sums re-derived from the entries;
 * - monthly credits are spent before additional ones, and a charge crossing the monthly balance is
 *   split across both buckets under one key;
 * - a charge recorded twice under the same key counts once, also concurrently;
 * - RunStore.completeStep with WA_BILLING=on records one charge_llm per (run, step): completing the
 *   same step again changes neither the ledger nor the run's cost.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, References } from "effect"
import { SqlClient } from "effect/sql"
import { Projects } from "../../src/auth/projects.ts"
import { Ledger } from "../../src/billing/ledger.ts"
import { AppConfig } from "../../src/config/config.ts"
import type { SessionId } from "../../src/domain/run.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { RunStore } from "../../src/store/runs.ts"
import { SessionStore } from "../../src/store/sessions.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"
import { stepCheckpoint, storeSession } from "./store-sessions.ts"

const ConfigLive = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabase("billing")
  const dataDir = yield* freshDataDir("wa-billing")
  return AppConfig.layerFrom({ DATABASE_URL: url, WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Warn", WA_BILLING: "on" })
}))

const TestLayer = Layer.mergeAll(Ledger.layer, RunStore.layer, SessionStore.layer, Projects.layer).pipe(
  Layer.provideMerge(databaseLayer("own")),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
  Layer.provideMerge(ConfigLive)
)

const newProject = (name: string) => Projects.use((projects) => projects.create(name)).pipe(Effect.map((p) => p.id))

layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })("credit ledger", (it) => {
  it.effect("200 concurrent charges: exact, not negative beyond one charge, re-derivable", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const projectId = yield* newProject("concurrent")
      yield* ledger.grant(projectId, 1_000_000, "monthly")
      yield* ledger.grant(projectId, 2_000_000, "additional")
      // 200 charges of 10,000..29,900 micro-USD: 3,990,000 asked for, 3,000,000 available.
      const amounts = Array.from({ length: 200 }, (_, i) => 10_000 + (i % 200) * 100)
      const outcomes = yield* Effect.forEach(amounts, (micros, i) =>
        ledger.charge({ projectId, kind: "charge_llm", micros, idempotencyKey: `test:${projectId}:${i}` }), { concurrency: "unbounded" })
      const recorded = outcomes.reduce((sum, o, i) => sum + (o.recorded ? amounts[i]! : 0), 0)
      const refused = outcomes.filter((o) => o.refused).length
      expect(refused).toBeGreaterThan(0)
      expect(outcomes.every((o) => o.recorded !== o.refused)).toBe(true)

      const balance = yield* ledger.balance(projectId)
      expect(balance.totalMicros).toBe(3_000_000 - recorded)
      expect(balance.totalMicros).toBeLessThanOrEqual(0)
      expect(balance.totalMicros).toBeGreaterThan(-Math.max(...amounts))
      expect(balance.monthlyMicros).toBe(0)
      const derived = yield* ledger.rederive(projectId)
      expect(derived).toEqual({ monthlyMicros: balance.monthlyMicros, additionalMicros: balance.additionalMicros })
      // Every recorded charge is in the ledger under its key, and only those.
      const sql = yield* SqlClient.SqlClient
      const [count] = yield* sql<{ keys: number }>`
        SELECT count(DISTINCT idempotency_key)::int AS keys FROM credit_ledger WHERE project_id = ${projectId} AND kind = 'charge_llm'`
      expect(count!.keys).toBe(outcomes.filter((o) => o.recorded).length)
    }))

  it.effect("monthly first, then additional; a charge across both is split under one key", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const projectId = yield* newProject("buckets")
      yield* ledger.grant(projectId, 300_000, "monthly")
      yield* ledger.grant(projectId, 1_000_000, "additional")
      yield* ledger.charge({ projectId, kind: "charge_llm", micros: 200_000, idempotencyKey: `a:${projectId}` })
      expect(yield* ledger.balance(projectId)).toMatchObject({ monthlyMicros: 100_000, additionalMicros: 1_000_000 })
      yield* ledger.charge({ projectId, kind: "charge_llm", micros: 250_000, idempotencyKey: `b:${projectId}` })
      expect(yield* ledger.balance(projectId)).toMatchObject({ monthlyMicros: 0, additionalMicros: 850_000, totalMicros: 850_000 })
      const split = (yield* ledger.usage(projectId, { limit: 10 })).filter((e) => e.idempotencyKey === `b:${projectId}`)
      expect(split.map((e) => [e.bucket, e.amountMicros]).sort()).toEqual([["additional", -150_000], ["monthly", -100_000]])
    }))

  it.effect("a charge recorded twice with the same key counts once (also when both arrive at once)", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const projectId = yield* newProject("twice")
      yield* ledger.grant(projectId, 5_000_000, "additional")
      const first = yield* ledger.charge({ projectId, kind: "charge_llm", micros: 123_456, idempotencyKey: `same:${projectId}` })
      const second = yield* ledger.charge({ projectId, kind: "charge_llm", micros: 123_456, idempotencyKey: `same:${projectId}` })
      expect([first.recorded, second.recorded]).toEqual([true, false])
      const together = yield* Effect.forEach([1, 2, 3, 4, 5], () =>
        ledger.charge({ projectId, kind: "charge_llm", micros: 1_000, idempotencyKey: `burst:${projectId}` }), { concurrency: "unbounded" })
      expect(together.filter((o) => o.recorded)).toHaveLength(1)
      expect((yield* ledger.balance(projectId)).totalMicros).toBe(5_000_000 - 123_456 - 1_000)
      expect((yield* ledger.rederive(projectId)).additionalMicros).toBe(5_000_000 - 123_456 - 1_000)
    }))

  it.effect("completeStep charges charge_llm once per (run, step), in the step's transaction", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const store = yield* RunStore
      const projectId = yield* newProject("steps")
      yield* ledger.grant(projectId, 1_000_000, "monthly")
      const { session, run } = yield* storeSession(projectId, "charge me")
      yield* store.completeStep(run.id, 0.0215, stepCheckpoint(1))
      yield* store.completeStep(run.id, 0.0215, stepCheckpoint(1)) // the same step again (at-least-once)
      yield* store.completeStep(run.id, 0.0031234, stepCheckpoint(2))
      const entries = yield* ledger.usage(projectId, { kind: "charge_llm", limit: 10 })
      expect(entries.map((e) => [e.idempotencyKey, e.amountMicros, e.runId, e.sessionId as SessionId | null])).toEqual([
        [`llm:${run.id}:2`, -3_123, run.id, session.id],
        [`llm:${run.id}:1`, -21_500, run.id, session.id]
      ])
      const sql = yield* SqlClient.SqlClient
      const [costs] = yield* sql<{ run: string; session: string }>`
        SELECT r.llm_cost_usd::text AS run, s.llm_cost_usd::text AS session FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.id = ${run.id}`
      expect(costs).toEqual({ run: "0.024623", session: "0.024623" })
      expect((yield* ledger.balance(projectId)).totalMicros).toBe(1_000_000 - 24_623)
    }))
})
