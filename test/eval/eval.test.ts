/**
 * The evaluation suite in CI: the real service (its own process, real Chromium) driven by the
 * deterministic plan-following model (src/eval/scripted-model.ts), and `wa eval` run as its own
 * process against the service's REST API with the fixture sites it starts on loopback. Every task
 * must pass: a change that breaks a widget class (the snapshot, a tool, a flow) fails here, with
 * the task, its class and the reason in the failure message.
 */
import { execFile } from "node:child_process"
import * as path from "node:path"
import { promisify } from "node:util"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { evalTasks } from "../../src/eval/tasks.ts"
import { type PlanModel, startPlanModel } from "../../src/eval/scripted-model.ts"
import { type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { type ContractProxy, startContractProxy } from "../support/contract-proxy.ts"
import { waEntry } from "../support/entry.ts"

const root = path.resolve(import.meta.dirname, "../..")

let model: PlanModel
let service: Service
/** `wa eval` reaches the service through it: its answers go through the contract hook. */
let proxy: ContractProxy

beforeAll(async () => {
  model = await startPlanModel()
  // Vision on: each observation comes with its set-of-marks screenshot, which the vision tasks need.
  service = await startService({ env: scriptedAgentEnv(model.baseUrl, { WA_STEP_SCREENSHOTS: "false", WA_MODEL_VISION: "on" }) })
  proxy = await startContractProxy(service.url)
}, 120_000)
// A mismatch the proxy saw fails the test whose `wa eval` made the request.
afterEach(() => {
  expect(proxy?.takeMismatches() ?? []).toEqual([])
})
afterAll(async () => {
  await proxy?.close()
  await stopAndClean(service)
  await model?.close()
})

/** `wa eval` as the user runs it: its own process, the service found through WA_URL / WA_API_KEY / WA_PROJECT. */
const waEval = (...args: Array<string>) =>
  promisify(execFile)(process.execPath, [waEntry, "eval", ...args], {
    cwd: root,
    env: { ...process.env, WA_URL: proxy.url, WA_API_KEY: service.apiKey, WA_PROJECT: service.projectId },
    maxBuffer: 16 * 1024 * 1024
  }).then(
    ({ stdout, stderr }) => ({ stdout, stderr, code: 0 }),
    (error: { stdout: string; stderr: string; code: number }) => ({ stdout: error.stdout, stderr: error.stderr, code: error.code })
  )

const isPositiveInteger = (n: unknown) => typeof n === "number" && Number.isInteger(n) && n > 0

describe("wa eval", () => {
  it("ships at least 40 tasks covering every widget class and flow of the issue", () => {
    expect(evalTasks.length).toBeGreaterThanOrEqual(40)
    expect(new Set(evalTasks.map((t) => t.name)).size).toBe(evalTasks.length)
    expect(new Set(evalTasks.map((t) => t.category))).toEqual(new Set([
      "hidden-input", "icon-only", "drag-and-drop", "slider", "select", "menu", "autocomplete", "date-picker", "contenteditable",
      "shadow-dom", "iframe", "modal", "cookie-wall", "disclosure", "tabs", "switch", "dialog", "async-content", "infinite-scroll",
      "new-tab", "file-input", "table", "form", "multi-page-form", "search-extract", "login-2fa", "download", "pagination", "vision"
    ]))
  })

  it("an unknown task is a usage error (exit 2) and runs nothing", async () => {
    const result = await waEval("--tasks", "no-such-task", "--json")
    expect(result.code).toBe(2)
    expect(result.stderr).toContain("unknown task(s): no-such-task")
  })

  it("every task passes with the plan-following model, with its figures per task and in total", async () => {
    const result = await waEval("--tasks", "all", "--json", "--concurrency", "4", "--timeout", "240")
    const report = JSON.parse(result.stdout)
    const failures = (report.results as Array<any>).filter((r) => !r.success).map((r) => `${r.task} (${r.category}): ${r.reason}`)
    const stuck = model.stuck.map((s) => `${s.task}: ${s.reason}\n${s.page}`)
    expect(failures, `${failures.join("\n")}\n\n${stuck.join("\n-----\n")}\n${result.stderr}`).toEqual([])
    expect(result.code).toBe(0)
    expect(report.results).toHaveLength(evalTasks.length)
    expect(report.totals).toMatchObject({ runs: evalTasks.length, passed: evalTasks.length, success_rate: 1 })
    for (const r of report.results) {
      // Figures from the run itself: a real step count, the model's tokens each way (the figures
      // users compare agents by; null would mean the service stopped reporting them) and a cost the
      // service charged for them.
      expect(r.steps, r.task).toBeGreaterThanOrEqual(2)
      expect(r.input_tokens, `${r.task} input_tokens`).toSatisfy(isPositiveInteger)
      expect(r.output_tokens, `${r.task} output_tokens`).toSatisfy(isPositiveInteger)
      expect(r.cost_usd, r.task).toBeGreaterThan(0)
      expect(r.wall_ms, r.task).toBeGreaterThan(0)
    }
    const sumOf = (key: "steps" | "input_tokens" | "output_tokens") => report.results.reduce((a: number, r: any) => a + r[key], 0)
    expect(report.totals.steps).toBe(sumOf("steps"))
    expect(report.totals.input_tokens, "totals.input_tokens").toSatisfy(isPositiveInteger)
    expect(report.totals.output_tokens, "totals.output_tokens").toSatisfy(isPositiveInteger)
    expect(report.totals.input_tokens).toBe(sumOf("input_tokens"))
    expect(report.totals.output_tokens).toBe(sumOf("output_tokens"))
  }, 900_000)

  it("prints a table with a row per task and the totals, and --repeat runs a task again", async () => {
    const result = await waEval("--tasks", "hidden-radio-tiles", "pagination", "--repeat", "2")
    expect(result.code, result.stderr).toBe(0)
    const rows = result.stdout.split("\n")
    expect(rows.filter((l) => /^hidden-radio-tiles(#2)?\s/.test(l))).toHaveLength(2)
    expect(rows.filter((l) => /^pagination(#2)?\s/.test(l))).toHaveLength(2)
    expect(rows.find((l) => l.startsWith("total"))).toMatch(/^total\s+4\/4\s+100%/)
    expect(result.stderr.split("\n").filter((l) => l.startsWith("PASS"))).toHaveLength(4)
  }, 300_000)
})
