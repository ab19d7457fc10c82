/**
 * Credit holds (src/billing/store/credit-holds.ts), in-process on a database of this file with the real
 * Ledger, Budget, RunStore and MonitorStore (WA_BILLING=on, WA_BILLING_MIN_BALANCE_USD=0.005):
 *
 * - for every product that charges, 40 concurrent admissions at a balance of exactly one
 *   estimated charge admit one: DoAnything sessions (createSession holds the minimum balance),
 *   WebSearch runs (their fee per distinct query), DeepResearch runs (their fee), Track ticks
 *   (their fee); the others are refused insufficient_credits and leave nothing behind;
 * - the admitted run's real charges are written and its end settles the hold: the final balance
 *   is at most one charge below zero, the ledger re-derives the balance, and no hold is left;
 * - a hold shrinks by what its run was charged, and a hold of a run that ended counts for nothing.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Exit, Layer, References } from "effect"
import { SqlClient } from "effect/sql"
import { Projects } from "../../src/auth/projects.ts"
import { Budget } from "../../src/billing/budget.ts"
import { outstandingHoldsMicros } from "../../src/billing/store/credit-holds.ts"
import { Ledger } from "../../src/billing/ledger.ts"
import { AppConfig } from "../../src/config/config.ts"
import { ApiKeyId, type ProjectId, type Run } from "../../src/domain/run.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { RunStore } from "../../src/store/runs.ts"
import { SessionStore } from "../../src/store/sessions.ts"
import { MonitorStore } from "../../src/track/monitor-store.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"
import { stepCheckpoint } from "./store-sessions.ts"

const ConfigLive = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabase("holds")
  const dataDir = yield* freshDataDir("wa-holds")
  return AppConfig.layerFrom({ DATABASE_URL: url, WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Warn", WA_BILLING: "on", WA_BILLING_MIN_BALANCE_USD: "0.005" })
}))

const TestLayer = Layer.mergeAll(Ledger.layer, Budget.layer, RunStore.layer, SessionStore.layer, MonitorStore.layer, Projects.layer).pipe(
  Layer.provideMerge(databaseLayer("own")),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
  Layer.provideMerge(ConfigLive)
)

const CREATES = 40

const newProject = (name: string) => Projects.use((projects) => projects.create(name)).pipe(Effect.map((p) => p.id as ProjectId))

const doAnything = (projectId: ProjectId, i: number) =>
  SessionStore.use((store) =>
    store.createSession({
      projectId,
      apiKeyId: ApiKeyId.make(`key_${i}`),
      profileId: null,
      workspaceId: null,
      maxOpenSessions: 100,
      run: {
        instructions: "spend",
        request: { _tag: "DoAnything", instructions: "spend", keep_alive: false, agentmail: true, skills: [], allowed_actions: [] } as never,
        maxSteps: 5,
        model: null,
        maxDurationMs: null
      }
    })
  ).pipe(Effect.map((created) => created.run))

/** 40 admissions at once: the ones admitted, and the tags of the refusals. */
const race = <A, E, R>(create: (i: number) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const exits = yield* Effect.all(Array.from({ length: CREATES }, (_, i) => Effect.exit(create(i))), { concurrency: "unbounded" })
    const admitted = exits.filter(Exit.isSuccess).map((exit) => exit.value)
    const refusals = exits.filter(Exit.isFailure).map((exit) => String(exit.cause))
    return { admitted, refusals }
  })

/** After the admitted work was charged and ended: within one charge below zero, re-derivable, nothing held. */
const settled = (projectId: ProjectId, chargeMicros: number) =>
  Effect.gen(function*() {
    const ledger = yield* Ledger
    const sql = yield* SqlClient.SqlClient
    const balance = yield* ledger.balance(projectId)
    expect(balance.totalMicros).toBeGreaterThanOrEqual(-chargeMicros)
    const derived = yield* ledger.rederive(projectId)
    expect(derived.monthlyMicros + derived.additionalMicros).toBe(balance.totalMicros)
    expect(yield* outstandingHoldsMicros(sql, projectId)).toBe(0)
    expect(yield* sql`SELECT 1 FROM credit_holds WHERE project_id = ${projectId}`).toHaveLength(0)
    return balance.totalMicros
  })

layer(TestLayer, { excludeTestServices: true, timeout: 180_000 })("credit holds", (it) => {
  it.effect("DoAnything: 40 concurrent session creates at a balance of one hold admit one; its run's spend settles", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const store = yield* RunStore
      const sql = yield* SqlClient.SqlClient
      const projectId = yield* newProject("holds-do-anything")
      // A DoAnything run holds WA_BILLING_MIN_BALANCE_USD (0.005).
      yield* ledger.grant(projectId, 5_000, "additional")
      const { admitted, refusals } = yield* race((i) => doAnything(projectId, i))
      expect(admitted).toHaveLength(1)
      for (const refusal of refusals) expect(refusal).toContain("InsufficientCredits")
      const [sessions] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM sessions WHERE project_id = ${projectId}`
      expect(sessions!.n).toBe(1)
      // Its step spends 0.004 of the 0.005 held: 0.001 stays held while the run goes on.
      const run = admitted[0]!
      yield* store.transition(run.id, "running")
      yield* store.completeStep(run.id, 0.004, stepCheckpoint(1))
      expect(yield* outstandingHoldsMicros(sql, projectId)).toBe(1_000)
      yield* store.transition(run.id, "done", { terminalReason: "done" })
      expect(yield* settled(projectId, 5_000)).toBeLessThanOrEqual(1_000)
    }))

  it.effect("WebSearch and DeepResearch: 40 concurrent creates at a balance of one fee admit one; the fee and tokens settle", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const store = yield* RunStore
      for (const product of [
        // 3 distinct queries at web_search_per_query 0.003: 0.009, above the 0.005 minimum.
        { request: { _tag: "WebSearch", queries: ["alpha", "beta", " beta ", "gamma"], wait: false }, fee: 9_000, kind: "charge_search" as const },
        { request: { _tag: "DeepResearch", topic: "holds" }, fee: 100_000, kind: "charge_research" as const }
      ]) {
        const projectId = yield* newProject(`holds-${product.request._tag}`)
        yield* ledger.grant(projectId, product.fee, "additional")
        const { admitted, refusals } = yield* race(() => store.createStandaloneRun(projectId, product.request as never))
        expect(admitted, product.request._tag).toHaveLength(1)
        for (const refusal of refusals) expect(refusal).toContain("InsufficientCredits")
        expect(yield* store.listRuns(projectId, product.request._tag === "WebSearch" ? "web_search" : "deep_research", undefined, 100, undefined)).toHaveLength(1)
        // The run's real charges: its fee and the model tokens on top of it, then its end.
        const run: Run = admitted[0]!
        yield* store.transition(run.id, "running")
        yield* store.chargeRun(run.id, [
          { kind: product.kind, column: "service", micros: product.fee, idempotencyKey: `fee:${run.id}`, force: false },
          { kind: "charge_llm", column: "llm", micros: 700, idempotencyKey: `llm:${run.id}` }
        ])
        yield* store.transition(run.id, "done", { terminalReason: "done" })
        expect(yield* settled(projectId, product.fee)).toBe(-700)
      }
    }))

  it.effect("Track: 40 ticks about to run at a balance of one tick fee: one is held and runs; its end settles", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const budget = yield* Budget
      const monitors = yield* MonitorStore
      const sql = yield* SqlClient.SqlClient
      const projectId = yield* newProject("holds-track")
      // track_per_tick is 0.002.
      yield* ledger.grant(projectId, 2_000, "additional")
      const ticks = yield* Effect.forEach(Array.from({ length: CREATES }, (_, i) => i), (i) =>
        Effect.gen(function*() {
          const monitor = yield* monitors.create({
            projectId,
            createdByKeyId: null,
            status: "active",
            intent: `watch ${i}`,
            channel: { kind: "console_inbox", url: null, webhook_id: null, schedule_id: null },
            notifySecret: "secret",
            schedule: { kind: "interval", interval_seconds: 3600 },
            targetUrls: ["http://127.0.0.1:9/"],
            extractionSchema: null,
            triggerDsl: null,
            stopConditionDsl: null,
            profileId: null
          } as never)
          const queued = yield* monitors.createTick(monitor, "run_now", null)
          return (yield* monitors.startTick(queued)).tick
        }))
      const outcomes = yield* Effect.all(ticks.map((tick) => budget.holdTick(projectId, tick.id)), { concurrency: "unbounded" })
      expect(outcomes.filter((outcome) => outcome === null)).toHaveLength(1)
      expect(outcomes.filter((outcome) => outcome === "credits")).toHaveLength(CREATES - 1)
      expect(yield* outstandingHoldsMicros(sql, projectId)).toBe(2_000)
      // Every tick ends: the refused ones fail unpaid, the held one is charged its tokens (a failed tick pays no fee).
      for (const [i, tick] of ticks.entries()) {
        yield* monitors.failTick(tick, { code: "budget_exceeded", detail: "test", pages: [], llmCostMicros: outcomes[i] === null ? 1_500 : 0 }, 3)
      }
      expect(yield* settled(projectId, 2_000)).toBe(500)
    }))
})
