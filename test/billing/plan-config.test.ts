/**
 * The plan table is configuration checked at start: the shipped table loads with `dev` as the
 * default plan, an operator's WA_PLANS_FILE and WA_DEFAULT_PLAN replace it, and a malformed file,
 * a plan without a cap or an unknown default plan stop start-up with one line naming the variable.
 */
import { Effect, Exit } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { loadPlanTable } from "../../src/config/plan-table.ts"
import { loadAppConfig } from "../../src/config/config.ts"

const dir = mkdtempSync(path.join(tmpdir(), "wa-plans-config-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const file = (name: string, content: unknown) => {
  const at = path.join(dir, name)
  writeFileSync(at, typeof content === "string" ? content : JSON.stringify(content))
  return at
}

const startupError = async (env: Record<string, string>) => {
  const exit = await Effect.runPromiseExit(loadAppConfig({ WA_DATA_DIR: dir, ...env }))
  expect(Exit.isFailure(exit)).toBe(true)
  return Exit.isFailure(exit) ? String(JSON.stringify(exit.cause)) + String(exit.cause) : ""
}

describe("plan configuration", () => {
  it("the shipped table: free, dev, business, scaleup; dev by default", () => {
    const table = loadPlanTable(undefined, undefined)
    expect(table.defaultPlan.id).toBe("dev")
    expect(table.plans.map((p) => [p.id, p.concurrency, p.scheduledCap, p.monthlyCreditsMicros, p.monthlyQuotaMicros])).toEqual([
      ["free", 2, 1, 1_000_000, 10_000_000],
      ["dev", 5, 5, 25_000_000, 250_000_000],
      ["business", 50, 50, 250_000_000, 2_500_000_000],
      ["scaleup", 250, 250, 1_000_000_000, null]
    ])
  })

  it("WA_PLANS_FILE and WA_DEFAULT_PLAN replace the table and the default", async () => {
    const custom = file("custom.json", {
      plans: [{ id: "team", name: "Team", concurrency: 12, scheduled_cap: 3, monthly_credits_usd: 40.5, monthly_quota_usd: null }]
    })
    const config = await Effect.runPromise(loadAppConfig({ WA_DATA_DIR: dir, WA_PLANS_FILE: custom, WA_DEFAULT_PLAN: "team" }))
    const table = loadPlanTable(custom, "team")
    // A table without the per-project caps gets their defaults: 2 x concurrency open sessions, 50 keys, 100 monitors.
    expect(table.defaultPlan).toEqual({
      id: "team", name: "Team", concurrency: 12, scheduledCap: 3, monthlyCreditsMicros: 40_500_000, monthlyQuotaMicros: null,
      projectSessions: 24, projectKeys: 50, projectMonitors: 100
    })
    expect(config.defaultPlan).toEqual(expect.objectContaining({ value: "team" }))
  })

  it("a bad file or an unknown default plan stops start-up with one line naming the variable", async () => {
    expect(await startupError({ WA_DEFAULT_PLAN: "platinum" })).toContain("WA_DEFAULT_PLAN must be one of free, dev, business, scaleup, not platinum")
    expect(await startupError({ WA_PLANS_FILE: file("broken.json", "{not json") })).toContain("is not readable JSON")
    expect(await startupError({ WA_PLANS_FILE: path.join(dir, "missing.json") })).toContain("WA_PLANS_FILE")
    const noCap = file("no-cap.json", { plans: [{ id: "x", name: "X", scheduled_cap: 1, monthly_credits_usd: 1, monthly_quota_usd: null }] })
    expect(await startupError({ WA_PLANS_FILE: noCap })).toContain("is not a plan table")
    const zero = file("zero.json", { plans: [{ id: "x", name: "X", concurrency: 0, scheduled_cap: 1, monthly_credits_usd: 1, monthly_quota_usd: null }] })
    expect(await startupError({ WA_PLANS_FILE: zero })).toContain("is not a plan table")
  })
})
