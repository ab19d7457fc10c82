/**
 * Billing figures (src/billing/), in-process on an embedded PostgreSQL of its own:
 *
 * 1. Charging overhead per agent step: RunStore.completeStep (checkpoint + events + cost fields)
 *    with WA_BILLING=on (its charge_llm, and charge_browser once 0.001 USD is due, in the step's
 *    transaction: one lock of the balance row, three statements)
 *    against the same call with billing off; median and p95 of each, and the median difference.
 *    Goal: the ledger adds at most 2 ms (median).
 * 2. 1,000 concurrent charges on one project (more than its credits cover): the balance is exact
 *    (grants minus what was recorded), equal to the sums re-derived from the ledger, negative by
 *    less than one charge; the throughput in charges per second.
 *
 *   node bench/billing-charges.ts [steps=300] [charges=1000]
 */
import { Effect, Layer, References } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { Projects } from "../src/auth/projects.ts"
import { Ledger } from "../src/billing/ledger.ts"
import { AppConfig, type AppConfigShape } from "../src/config/config.ts"
import { ApiKeyId, type RunId } from "../src/domain/run.ts"
import { databaseLayer } from "../src/store/database.ts"
import { RunStore } from "../src/store/runs.ts"
import { SessionStore } from "../src/store/sessions.ts"
import { quantile } from "./stats.ts"

const steps = Number(process.argv[2] ?? 300)
const charges = Number(process.argv[3] ?? 1000)

const ms = (value: number) => `${value.toFixed(2)} ms`

const dataDir = mkdtempSync(path.join(tmpdir(), "wa-bench-billing-"))
const env = { WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Warn", WA_BILLING: "on" }

const program = Effect.gen(function*() {
  const config = yield* AppConfig
  const ledger = yield* Ledger
  const projects = yield* Projects
  const storeWith = (billing: "on" | "off") =>
    Effect.provide(
      Effect.gen(function*() {
        return { runs: yield* RunStore, sessions: yield* SessionStore }
      }),
      Layer.mergeAll(RunStore.layer, SessionStore.layer).pipe(Layer.provide(Layer.succeed(AppConfig, { ...config, billing } satisfies AppConfigShape)))
    )
  const on = yield* storeWith("on")
  const off = yield* storeWith("off")

  // 1. One session run per mode; `steps` completed steps each, alternating, after a warm-up.
  const project = yield* projects.create("bench-steps")
  yield* ledger.grant(project.id, 1_000_000_000, "additional")
  const newRun = (store: typeof on) =>
    store.sessions.createSession({
      projectId: project.id,
      apiKeyId: ApiKeyId.make("key_none"),
      profileId: null,
      workspaceId: null,
      maxOpenSessions: 1_000_000,
      run: {
        instructions: "bench",
        request: { _tag: "DoAnything", instructions: "bench", keep_alive: true, agentmail: true, skills: [], allowed_actions: [] } as never,
        maxSteps: 100_000,
        model: null,
        maxDurationMs: null
      }
    }).pipe(Effect.tap(({ run }) => store.runs.transition(run.id, "running")), Effect.map(({ run }) => run.id as RunId))
  const runOn = yield* newRun(on)
  const runOff = yield* newRun(off)
  const history = { messages: Array.from({ length: 20 }, (_, i) => ({ role: "user", content: `step ${i} observed https://example.com/page/${i}` })) }
  const checkpoint = (step: number) => ({ step, history, url: "https://example.com/", tabs: ["https://example.com/"], dirtyForm: false, storageState: undefined })
  const timings = { on: [] as Array<number>, off: [] as Array<number> }
  for (let step = 1; step <= steps + 20; step++) {
    for (const [mode, store, runId] of [["on", on, runOn], ["off", off, runOff]] as const) {
      const start = performance.now()
      yield* store.runs.completeStep(runId, 0.0215, checkpoint(step))
      if (step > 20) timings[mode].push(performance.now() - start)
    }
  }
  const entries = yield* ledger.usage(project.id, { limit: 5 })
  console.log(`completeStep, ${steps} steps each (measured under load):`)
  console.log(`  billing on  (charge_llm, + charge_browser once 0.001 USD is due, in the step transaction): median ${ms(quantile(timings.on, 0.5))}, p95 ${ms(quantile(timings.on, 0.95))}`)
  console.log(`  billing off (same step, no ledger):                                                   median ${ms(quantile(timings.off, 0.5))}, p95 ${ms(quantile(timings.off, 0.95))}`)
  console.log(`  ledger overhead per step (median difference): ${ms(quantile(timings.on, 0.5) - quantile(timings.off, 0.5))} (goal <= 2 ms)`)
  console.log(`  newest entries: ${entries.map((e) => `${e.kind}=${e.amountMicros}`).join(", ")}`)

  // 2. `charges` concurrent charges of 10,000..19,990 micro-USD against 5 USD of credits.
  const target = yield* projects.create("bench-concurrent")
  yield* ledger.grant(target.id, 2_000_000, "monthly")
  yield* ledger.grant(target.id, 3_000_000, "additional")
  const amounts = Array.from({ length: charges }, (_, i) => 10_000 + (i % 1000) * 10)
  const started = performance.now()
  const outcomes = yield* Effect.forEach(amounts, (micros, i) =>
    ledger.charge({ projectId: target.id, kind: "charge_llm", micros, idempotencyKey: `bench:${target.id}:${i}` }), { concurrency: "unbounded" })
  const elapsed = performance.now() - started
  const recordedMicros = outcomes.reduce((sum, o, i) => sum + (o.recorded ? amounts[i]! : 0), 0)
  const balance = yield* ledger.balance(target.id)
  const derived = yield* ledger.rederive(target.id)
  const exact = balance.totalMicros === 5_000_000 - recordedMicros
  const rederived = derived.monthlyMicros === balance.monthlyMicros && derived.additionalMicros === balance.additionalMicros
  const bounded = balance.totalMicros > -Math.max(...amounts)
  console.log(`${charges} concurrent charges on one project (5.00 USD of credits, ${(amounts.reduce((a, b) => a + b, 0) / 1e6).toFixed(2)} USD asked, measured under load):`)
  console.log(`  recorded ${outcomes.filter((o) => o.recorded).length}, refused ${outcomes.filter((o) => o.refused).length}, in ${ms(elapsed)}: ${(charges / (elapsed / 1000)).toFixed(0)} charges/s`)
  console.log(`  balance ${balance.totalMicros} micro-USD; exact (grants - recorded): ${exact}; re-derived from the ledger equal: ${rederived}; negative by less than one charge: ${bounded}`)
  if (!exact || !rederived || !bounded) process.exitCode = 1
})

await Effect.runPromise(program.pipe(
  Effect.provide(Layer.mergeAll(Ledger.layer, Projects.layer).pipe(
    Layer.provideMerge(databaseLayer("own")),
    Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
    Layer.provideMerge(AppConfig.layerFrom(env))
  )),
  Effect.scoped
))
rmSync(dataDir, { recursive: true, force: true })
