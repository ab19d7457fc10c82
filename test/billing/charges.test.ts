/**
 * Charges and limits through the real service (WA_BILLING=on, scripted model at 50 USD per
 * million input tokens, so one step costs 1.00 USD):
 *
 * - without credits every product that costs money answers 402 insufficient_credits on create
 *   (DoAnything, DeepResearch, WebSearch, Track), and nothing is created;
 * - a Track tick is charged its fee in the ledger;
 * - a DoAnything run whose step spends the last credits ends `failed` with budget_exceeded, its
 *   spend stays charged, its cost fields equal the ledger; a monitor's next tick is not run and the
 *   monitor goes `failing` with a budget_exceeded status_reason; run_now answers 402;
 * - the budget cap (PUT /billing/budget, admin scope; `wa budget set`): once spend reaches it, every
 *   create (also 10 at once) answers 402 budget_exceeded, GET shows it, the inbox has one
 *   billing.quota_warning; `wa budget set --usd none` lifts it;
 * - a DeepResearch run is charged its fee and ends budget_exceeded when a step reaches the cap.
 */
import type pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { embeddedDatabaseClient, scriptedAgentEnv, type Service, startService, stopAndClean } from "../support/service.ts"
import { eventually, TERMINAL, waitForRunStatus } from "../support/runs.ts"
import { researchScript } from "../fixtures/model/research-model.ts"
import { cliJson, micros } from "./support.ts"
import { usdFromMicros } from "../../src/domain/money.ts"

let site: FixtureSites
let model: ScriptedModel
let service: Service
let db: pg.Client

beforeAll(async () => {
  site = await startFixtureSites()
  model = await startScriptedModel(() => ({ tool: "navigate", args: { url: `${site.url}/page/1` } }))
  service = await startService({
    env: scriptedAgentEnv(model.baseUrl, {
      WA_BILLING: "on",
      WA_MODEL_PRICE_PER_MTOK: "50,0",
      WA_SCHEDULE_MIN_INTERVAL_SECONDS: "1",
      WA_SCHEDULER_POLL_MS: "100"
    })
  })
  db = await embeddedDatabaseClient(service.dataDir)
})
afterAll(async () => {
  await db?.end()
  await stopAndClean(service)
  await model?.close()
  await site?.close()
})

const base = () => `/v1/projects/${service.projectId}`
const cli = (...args: Array<string>) => cliJson(service, ...args)
const grant = (usd: string) => cli("credits", "grant", "--project", service.projectId, "--usd", usd)

/** One create of each product that costs money. */
const creates = () => [
  service.request("POST", `${base()}/do_anything/sessions`, { body: { instructions: "anything", keep_alive: false } }),
  service.request("POST", `/api/v1/projects/${service.projectId}/do_anything/runs`, { body: { instructions: "anything" } }),
  service.request("POST", `${base()}/deep_research/runs`, { body: { topic: "anything", require_outline_approval: false } }),
  service.request("POST", `${base()}/web_search/runs`, { body: { queries: ["anything"], wait: false } }),
  service.request("POST", `${base()}/track/monitors`, {
    body: { intent: "watch anything", notify_channel: { kind: "console_inbox" }, schedule: { kind: "interval", interval_seconds: 3600 }, target_urls: [`${site.url}/page/1`] }
  })
]

const counts = async () => {
  const { rows: [row] } = await db.query(
    "SELECT (SELECT count(*)::int FROM runs WHERE project_id = $1) AS runs, (SELECT count(*)::int FROM monitors WHERE project_id = $1) AS monitors",
    [service.projectId]
  )
  return row as { runs: number; monitors: number }
}

describe("charges and limits", () => {
  let monitorId: string

  it("no credits: 402 insufficient_credits on every product's create, nothing created", async () => {
    const responses = await Promise.all(creates())
    for (const response of responses) {
      expect(response.status, response.text).toBe(402)
      expect(response.json).toMatchObject({ code: "insufficient_credits", extra: { balance_usd: "0.00", required_usd: "0.50" } })
    }
    expect(await counts()).toEqual({ runs: 0, monitors: 0 })
  })

  it("a monitor's tick is charged its fee; a run spending the last credits ends budget_exceeded; the monitor goes failing", async () => {
    await grant("0.60")
    const monitor = await service.request("POST", `${base()}/track/monitors`, {
      body: { intent: "watch page one", notify_channel: { kind: "console_inbox" }, schedule: { kind: "interval", interval_seconds: 1 }, target_urls: [`${site.url}/page/1`] }
    })
    expect(monitor.status, monitor.text).toBe(201)
    monitorId = monitor.json.id
    const firstTick = await eventually("a finished tick", async () => {
      const ticks = await service.request("GET", `${base()}/track/monitors/${monitorId}/runs`)
      return (ticks.json.items as Array<any>).find((tick) => tick.status === "done")
    }, { timeoutMs: 30_000 })
    const { rows: fees } = await db.query("SELECT amount_micros::int AS amount FROM credit_ledger WHERE idempotency_key = $1", [`track:${firstTick.id}`])
    expect(fees).toEqual([{ amount: -2_000 }])
    // The tick shows the fee exactly, as the ledger holds it (it read "0.00" before issue 27).
    expect(firstTick).toMatchObject({ llm_cost_usd: "0.00", service_cost_usd: "0.002", total_cost_usd: "0.002" })

    // The model never finishes: each step is 20,000 input tokens = 1.00 USD, more than is left.
    const created = await service.request("POST", `${base()}/do_anything/sessions`, { body: { instructions: "browse forever", keep_alive: false } })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id as string
    const rid = created.json.latest_run_id as string
    const run = await waitForRunStatus(service, `${base()}/do_anything/sessions/${sid}/runs/${rid}`, TERMINAL)
    expect(run.status).toBe("failed")
    expect(run.error).toMatchObject({ code: "budget_exceeded" })
    expect(run.error.detail).toMatch(/credits ran out/)
    expect(run.llm_cost_usd).toBe("1.00")

    // What the run spent stays charged, and its session's cost fields are the ledger's entries.
    const { rows: entries } = await db.query("SELECT kind, amount_micros::int AS amount FROM credit_ledger WHERE run_id = $1", [rid])
    const byKind = (kind: string) => -entries.filter((e) => e.kind === kind).reduce((sum, e) => sum + e.amount, 0)
    expect(byKind("charge_llm")).toBe(1_000_000)
    const session = await service.request("GET", `${base()}/do_anything/sessions/${sid}`)
    expect(micros(session.json.llm_cost_usd)).toBe(1_000_000)
    expect(session.json.browser_cost_usd).toBe(usdFromMicros(byKind("charge_browser")))
    expect(session.json.total_cost_usd).toBe(usdFromMicros(byKind("charge_llm") + byKind("charge_browser")))
    const account = await service.request("GET", `${base()}/billing/account`)
    expect(micros(account.json.credit_balance_usd)).toBeLessThan(0)

    // The monitor's next tick cannot be paid: not run, and the monitor is failing with the reason.
    const failing = await eventually("the monitor failing", async () => {
      const current = await service.request("GET", `${base()}/track/monitors/${monitorId}`)
      return current.json.status === "failing" ? current.json : undefined
    }, { timeoutMs: 30_000 })
    expect(failing.status_reason).toMatch(/^budget_exceeded: /)
    const ticks = await service.request("GET", `${base()}/track/monitors/${monitorId}/runs?limit=100`)
    expect((ticks.json.items as Array<any>).find((tick) => tick.error?.code === "budget_exceeded")).toMatchObject({ status: "failed", total_cost_usd: "0.00" })

    const runNow = await service.request("POST", `${base()}/track/monitors/${monitorId}/run_now`)
    expect(runNow.status, runNow.text).toBe(402)
    expect(runNow.json.code).toBe("insufficient_credits")
    const search = await service.request("POST", `${base()}/web_search/runs`, { body: { queries: ["x"], wait: false } })
    expect(search.status).toBe(402)
    const removed = await service.request("DELETE", `${base()}/track/monitors/${monitorId}`)
    expect(removed.status).toBeLessThan(300)
  })

  it("the budget cap: admin key sets it; at 100 % every create is 402 budget_exceeded (also concurrently); one warning; CLI lifts it", async () => {
    await grant("100")
    const runKey = await cli("keys", "create", "--project", service.projectId, "--scope", "run")
    const forbidden = await service.request("PUT", `${base()}/billing/budget`, { key: runKey.secret_token, body: { monthly_cap_usd: "5.00" } })
    expect(forbidden.status).toBe(403)
    for (const body of [{ monthly_cap_usd: "-1" }, { monthly_cap_usd: "5.00", extra: true }, { monthly_cap_usd: "2000000" }, {}]) {
      const bad = await service.request("PUT", `${base()}/billing/budget`, { body })
      expect(bad.status, JSON.stringify(body)).toBe(422)
    }
    const before = await service.request("GET", `${base()}/billing/budget`)
    // No cap of its own yet: the default plan's (dev, config/plans.json) monthly quota applies.
    expect(before.json).toMatchObject({ monthly_cap_usd: "250.00", exceeded: false })
    const spent = micros(before.json.spent_usd)
    expect(spent).toBeGreaterThanOrEqual(1_000_000)

    // A cap just above this period's spend: 80 % reached, not 100 %.
    const cap = ((spent + 10_000) / 1e6).toFixed(2)
    const set = await service.request("PUT", `${base()}/billing/budget`, { body: { monthly_cap_usd: cap } })
    expect(set.status, set.text).toBe(200)
    expect(set.json).toMatchObject({ project_id: service.projectId, monthly_cap_usd: cap, warning: true, exceeded: false })

    // A run's first step crosses the cap: the warning is written, the run ends budget_exceeded.
    const created = await service.request("POST", `${base()}/do_anything/sessions`, { body: { instructions: "browse on", keep_alive: false } })
    expect(created.status, created.text).toBe(201)
    const run = await waitForRunStatus(service, `${base()}/do_anything/sessions/${created.json.id}/runs/${created.json.latest_run_id}`, TERMINAL)
    expect(run).toMatchObject({ status: "failed", error: { code: "budget_exceeded" } })
    expect(run.error.detail).toMatch(/budget cap/)

    const after = await service.request("GET", `${base()}/billing/budget`)
    expect(after.json).toMatchObject({ monthly_cap_usd: cap, warning: true, exceeded: true, remaining_usd: "0.00" })
    const { runs } = await counts()
    const responses = await Promise.all([...creates(), ...Array.from({ length: 10 }, () =>
      service.request("POST", `${base()}/do_anything/sessions`, { body: { instructions: "again", keep_alive: false } }))])
    for (const response of responses) {
      expect(response.status, response.text).toBe(402)
      expect(response.json).toMatchObject({ code: "budget_exceeded", extra: { monthly_cap_usd: cap } })
    }
    expect((await counts()).runs).toBe(runs)
    const inbox = await service.request("GET", `/v1/projects/${service.projectId}/inbox?limit=100`)
    const warnings = (inbox.json.items as Array<any>).filter((item) => item.type === "billing.quota_warning")
    expect(warnings).toHaveLength(1)
    expect(warnings[0].data).toMatchObject({ monthly_cap_usd: cap })

    const lifted = await cli("budget", "set", "--project", service.projectId, "--usd", "none")
    expect(lifted).toMatchObject({ monthly_cap_usd: null, exceeded: false })
    const accepted = await service.request("POST", `${base()}/web_search/runs`, { body: { queries: ["anything"], wait: false } })
    expect(accepted.status, accepted.text).toBeLessThan(300)
    const shown = await cli("budget", "show", "--project", service.projectId)
    expect(shown).toMatchObject({ project_id: service.projectId, monthly_cap_usd: null })
  })

  it("a DeepResearch run is charged its fee and ends budget_exceeded when a step reaches the cap", async () => {
    model.setScript(researchScript({ sections: [{ title: "Only", queries: ["only-q"] }] }))
    const spent = micros((await service.request("GET", `${base()}/billing/budget`)).json.spent_usd)
    // Room for the fee (0.10) and less than one model call (1.00).
    const cap = ((spent + 500_000) / 1e6).toFixed(2)
    expect((await cli("budget", "set", "--project", service.projectId, "--usd", cap)).monthly_cap_usd).toBe(cap)
    const created = await service.request("POST", `${base()}/deep_research/runs`, { body: { topic: "Budgets", require_outline_approval: false } })
    expect(created.status, created.text).toBe(202)
    const rid = created.json.run_id as string
    const run = await waitForRunStatus(service, `${base()}/deep_research/runs/${rid}`, TERMINAL)
    expect(run).toMatchObject({ status: "failed", error: { code: "budget_exceeded" }, llm_cost_usd: "1.00", service_cost_usd: "0.10", total_cost_usd: "1.10" })
    const { rows } = await db.query("SELECT kind, -sum(amount_micros)::int AS amount FROM credit_ledger WHERE run_id = $1 GROUP BY kind ORDER BY kind", [rid])
    expect(rows).toEqual([{ kind: "charge_llm", amount: 1_000_000 }, { kind: "charge_research", amount: 100_000 }])
    const refused = await service.request("POST", `${base()}/deep_research/runs`, { body: { topic: "Again" } })
    expect(refused.status).toBe(402)
    expect(refused.json.code).toBe("budget_exceeded")
    await cli("budget", "set", "--project", service.projectId, "--usd", "none")
  })

  it("the OpenAPI document has the budget paths and the 402 on every product's create", async () => {
    const doc = await service.request("GET", "/openapi.json", { key: null })
    const paths = doc.json.paths
    expect(Object.keys(paths["/v1/projects/{pid}/billing/budget"])).toEqual(expect.arrayContaining(["get", "put"]))
    for (const path of ["/v1/projects/{pid}/deep_research/runs", "/v1/projects/{pid}/web_search/runs", "/v1/projects/{pid}/track/monitors"]) {
      expect(Object.keys(paths[path].post.responses), path).toContain("402")
    }
    expect(Object.keys(paths["/v1/projects/{pid}/track/monitors/{mid}/run_now"].post.responses)).toContain("402")
  })
})
