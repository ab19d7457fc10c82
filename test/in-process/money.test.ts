/**
 * Money on the wire is exact (issue 27): one formatter (src/domain/money.ts) keeps at least two
 * decimals and as many as the micro-dollar needs, and every view of a run charged $0.000182 shows
 * what the ledger holds, in-process with the real Ledger and RunStore (WA_BILLING=on).
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer, References } from "effect"
import { SqlClient } from "effect/sql"
import { Projects } from "../../src/auth/projects.ts"
import { Ledger } from "../../src/billing/ledger.ts"
import { AppConfig } from "../../src/config/config.ts"
import { microsFromDecimal, usd, usdFromMicros, usdSum } from "../../src/domain/money.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { RunStore } from "../../src/store/runs.ts"
import { SessionStore } from "../../src/store/sessions.ts"
import { runView, sessionView } from "../../src/http/views/run-view.ts"
import { webSearchRunView } from "../../src/http/views/web-search-view.ts"
import { researchRunView } from "../../src/http/views/research-view.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"
import { stepCheckpoint, storeSession } from "./store-sessions.ts"

describe("the money formatter", () => {
  it("keeps two decimals at least and every micro-dollar", () => {
    expect(usdFromMicros(182)).toBe("0.000182")
    expect(usdFromMicros(1_500_000)).toBe("1.50")
    expect(usdFromMicros(0)).toBe("0.00")
    expect(usdFromMicros(-2_250_000)).toBe("-2.25")
    expect(usdFromMicros(12_345_670)).toBe("12.34567")
    expect(usdFromMicros(10_000)).toBe("0.01")
    expect(usdFromMicros(1_000)).toBe("0.001")
    expect(usdFromMicros(-5)).toBe("-0.000005")
    expect(usdFromMicros(9_007_199_254_740_991n)).toBe("9007199254.740991")
  })

  it("reads PostgreSQL numerics exactly and sums them without float error", () => {
    expect(microsFromDecimal("0.000182")).toBe(182)
    expect(microsFromDecimal("0.180000")).toBe(180_000)
    expect(microsFromDecimal("-1.5")).toBe(-1_500_000)
    expect(microsFromDecimal("7")).toBe(7_000_000)
    expect(microsFromDecimal("0.0000005")).toBe(1)
    expect(microsFromDecimal(0.1)).toBe(100_000)
    expect(usd("0.000182")).toBe("0.000182")
    expect(usd("5")).toBe("5.00")
    // 0.1 + 0.2 in floats is 0.30000000000000004; in micro-dollars it is 0.30.
    expect(usdSum("0.1", "0.2")).toBe("0.30")
    expect(usdSum("0.000182", "0.000001", "0")).toBe("0.000183")
  })
})

const ConfigLive = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabase("money")
  const dataDir = yield* freshDataDir("wa-money")
  return AppConfig.layerFrom({ DATABASE_URL: url, WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Warn", WA_BILLING: "on", WA_BILLING_MIN_BALANCE_USD: "0" })
}))

const TestLayer = Layer.mergeAll(Ledger.layer, RunStore.layer, SessionStore.layer, Projects.layer).pipe(
  Layer.provideMerge(databaseLayer("own")),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
  Layer.provideMerge(ConfigLive)
)

layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })("views equal the ledger", (it) => {
  it.effect("a run charged $0.000182 shows 0.000182 in every view, and the session's total is the ledger's sum", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      const store = yield* RunStore
      const sql = yield* SqlClient.SqlClient
      const projectId = (yield* Projects.use((projects) => projects.create("money"))).id
      yield* ledger.grant(projectId, 1_000_000, "additional")
      const { session, run } = yield* storeSession(projectId)
      yield* store.transition(run.id, "running")
      yield* store.completeStep(run.id, 0.000182, stepCheckpoint(1))
      yield* store.transition(run.id, "done", { terminalReason: "done" })

      const entries = (yield* ledger.usage(projectId, { limit: 100 })).filter((e) => e.kind.startsWith("charge_"))
      const llm = -entries.filter((e) => e.kind === "charge_llm").reduce((sum, e) => sum + e.amountMicros, 0)
      expect(llm).toBe(182)
      const charged = -entries.reduce((sum, e) => sum + e.amountMicros, 0)

      const reread = (yield* store.getRun(run.id))!
      const rereadSession = (yield* SessionStore.use((sessions) => sessions.getSession(projectId, session.id)))!
      expect(runView(reread).llm_cost_usd).toBe("0.000182")
      const view = sessionView(rereadSession, [reread])
      expect(view.llm_cost_usd).toBe("0.000182")
      expect(view.total_cost_usd).toBe(usdFromMicros(charged))
      expect(microsFromDecimal(view.llm_cost_usd) + microsFromDecimal(view.browser_cost_usd) + microsFromDecimal(view.proxy_cost_usd)).toBe(charged)

      // The run's cost_update events say the same.
      const costs = (yield* store.eventsAfter(run.id, 0, 100)).filter((e) => e.type === "run.cost_update").map((e) => e.data as Record<string, string>)
      expect(costs.reduce((sum, c) => sum + microsFromDecimal(c["increment_usd"]!), 0)).toBe(charged)
      expect(costs.at(-1)!["total_cost_usd"]).toBe(usdFromMicros(charged))

      // The product views of a run row with the same numerics (WebSearch and DeepResearch read the same columns).
      yield* sql`UPDATE runs SET service_cost_usd = 0.1 WHERE id = ${run.id}`
      const withFee = (yield* store.getRun(run.id))!
      const search = webSearchRunView(withFee, false)
      expect(search).toMatchObject({ llm_cost_usd: "0.000182", service_cost_usd: "0.10", total_cost_usd: "0.100182" })
      const research = researchRunView(withFee, { topic: "t", depth: "light", require_outline_approval: false } as never)
      expect(research).toMatchObject({ llm_cost_usd: "0.000182", service_cost_usd: "0.10", total_cost_usd: "0.100182" })
    }))
})
