/**
 * Billing through the real service (WA_BILLING=on) over HTTP and the `wa` CLI:
 *
 * - a project without credits gets 402 insufficient_credits (extra.balance_usd, extra.required_usd)
 *   on both DoAnything conventions, and no session is created;
 * - `wa credits grant` credits the project and prints the new balance; a run is then accepted;
 * - a scripted-model run's LLM charges are in /billing/usage, their sum is the run's llm_cost_usd to
 *   the micro-dollar, and the balance dropped by exactly that (monthly bucket first);
 * - /billing/account renders the spec's fields as two-decimal strings;
 * - /billing/usage pages with a cursor and filters by kind and date range.
 */
import type pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"
import { TERMINAL, waitForRunStatus } from "../support/runs.ts"
import { cliJson, micros } from "./support.ts"
import { usdFromMicros } from "../../src/domain/money.ts"

let site: FixtureSites
let model: ScriptedModel
let service: Service
let db: pg.Client

beforeAll(async () => {
  site = await startFixtureSites()
  model = await startScriptedModel(() => ({ text: "no script" }))
  service = await startService({
    env: { WA_MODEL_BASE_URL: model.baseUrl, WA_MODEL: "scripted", WA_ALLOW_PRIVATE_NETWORKS: "true", WA_BILLING: "on" }
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
const grant = (...args: Array<string>) => cliJson(service, "credits", "grant", "--project", service.projectId, ...args)

describe("billing on", () => {
  it("no credits: 402 insufficient_credits with balance and required, nothing created", async () => {
    const body = { instructions: "anything", keep_alive: false }
    const a = await service.request("POST", `${base()}/do_anything/sessions`, { body })
    expect(a.status, a.text).toBe(402)
    expect(a.json).toMatchObject({ code: "insufficient_credits", extra: { balance_usd: "0.00", required_usd: "0.50" } })
    const b = await service.request("POST", `/api/v1/projects/${service.projectId}/do_anything/runs`, { body })
    expect(b.status, b.text).toBe(402)
    expect(b.json.code).toBe("insufficient_credits")
    const { rows } = await db.query("SELECT count(*)::int AS n FROM sessions WHERE project_id = $1", [service.projectId])
    expect(rows[0].n).toBe(0)
    const account = await service.request("GET", `${base()}/billing/account`)
    expect(account.status).toBe(200)
    expect(account.json).toMatchObject({ project_id: service.projectId, credit_balance_usd: "0.00", sessions_count: 0, plan: "dev" })
  })

  it("a CLI grant credits the project; a scripted run is charged its exact llm_cost, monthly credits first", async () => {
    const monthly = await grant("--usd", "0.03", "--bucket", "monthly")
    expect(monthly).toMatchObject({ bucket: "monthly", monthly_credits_usd: "0.03", credit_balance_usd: "0.03" })
    const topup = await grant("--usd", "25")
    expect(topup).toMatchObject({ bucket: "additional", additional_credits_usd: "25.00", credit_balance_usd: "25.03" })
    const bad = await service.cli("credits", "grant", "--project", service.projectId, "--usd", "-3")
    expect(bad.code).not.toBe(0)

    // Two model calls of 20,000 + 500 tokens (0.0215 USD each at the fallback price): the second
    // one crosses the monthly credits.
    model.setScript((_request, turn) =>
      turn === 0 ? { tool: "navigate", args: { url: `${site.url}/page/1` } } : { tool: "done", args: { output: "ok" } })
    const created = await service.request("POST", `${base()}/do_anything/sessions`, { body: { instructions: "spend", keep_alive: false } })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id as string
    const rid = created.json.latest_run_id as string
    const run = await waitForRunStatus(service, `${base()}/do_anything/sessions/${sid}/runs/${rid}`, TERMINAL)
    expect(run.status).toBe("done")

    const { rows: [costs] } = await db.query("SELECT llm_cost_usd::text AS cost FROM runs WHERE id = $1", [rid])
    const runCost = micros(costs.cost)
    expect(runCost).toBeGreaterThan(30_000)

    const usage = await service.request("GET", `${base()}/billing/usage?kind=charge_llm&limit=100`)
    expect(usage.status, usage.text).toBe(200)
    const charges = usage.json.items as Array<any>
    expect(charges.length).toBeGreaterThan(0)
    for (const entry of charges) expect(entry).toMatchObject({ kind: "charge_llm", run_id: rid, session_id: sid })
    expect(charges.reduce((sum, e) => sum + e.amount_micros, 0)).toBe(-runCost)
    expect(charges.reduce((sum, e) => sum + micros(e.amount_usd), 0)).toBe(-runCost)
    // The run's browser time is charged too (charge_browser), and equals its browser_cost_usd.
    const browser = (await service.request("GET", `${base()}/billing/usage?kind=charge_browser&limit=100`)).json.items as Array<any>
    for (const entry of browser) expect(entry).toMatchObject({ run_id: rid, session_id: sid })
    const browserCost = -browser.reduce((sum, e) => sum + e.amount_micros, 0)
    const { rows: [runBrowser] } = await db.query("SELECT browser_cost_usd::text AS cost FROM runs WHERE id = $1", [rid])
    expect(micros(runBrowser.cost)).toBe(browserCost)
    // The monthly bucket was emptied first, the rest came from the additional one.
    expect([...charges, ...browser].filter((e) => e.bucket === "monthly").reduce((sum, e) => sum + e.amount_micros, 0)).toBe(-30_000)

    const { rows: [balance] } = await db.query(
      "SELECT monthly_micros::bigint + additional_micros::bigint AS total, monthly_micros::int AS monthly FROM credit_balances WHERE project_id = $1",
      [service.projectId]
    )
    expect(Number(balance.total)).toBe(25_030_000 - runCost - browserCost)
    expect(balance.monthly).toBe(0)

    const account = await service.request("GET", `${base()}/billing/account`)
    expect(account.json).toMatchObject({
      project_id: service.projectId,
      sessions_count: 1,
      monthly_credits_usd: "0.00",
      credit_balance_usd: usdFromMicros(25_030_000 - runCost - browserCost),
      llm_cost_usd: usdFromMicros(runCost),
      browser_cost_usd: usdFromMicros(browserCost),
      proxy_cost_usd: "0.00",
      total_cost_usd: usdFromMicros(runCost + browserCost)
    })
    for (const field of ["credit_balance_usd", "llm_cost_usd", "total_cost_usd"]) expect(account.json[field]).toMatch(/^-?\d+\.\d{2,6}$/)
    expect(new Date(account.json.period_start).getUTCDate()).toBe(1)
  })

  it("usage pages with a cursor and filters by kind and date range", async () => {
    const all = await service.request("GET", `${base()}/billing/usage?limit=100`)
    const total = all.json.items.length as number
    expect(total).toBeGreaterThanOrEqual(4)
    const seen: Array<string> = []
    let cursor: string | null = null
    do {
      const page: { json: any } = await service.request("GET", `${base()}/billing/usage?limit=1${cursor === null ? "" : `&cursor=${cursor}`}`)
      seen.push(...page.json.items.map((e: any) => e.id))
      cursor = page.json.next_cursor
    } while (cursor !== null)
    expect(seen).toEqual(all.json.items.map((e: any) => e.id))

    const topups = await service.request("GET", `${base()}/billing/usage?kind=topup`)
    expect(topups.json.items.map((e: any) => [e.kind, e.bucket, e.amount_usd])).toEqual([["topup", "additional", "25.00"]])
    const future = await service.request("GET", `${base()}/billing/usage?from=${new Date(Date.now() + 3_600_000).toISOString()}`)
    expect(future.json.items).toEqual([])
    const past = await service.request("GET", `${base()}/billing/usage?to=2000-01-01`)
    expect(past.json.items).toEqual([])
    const badCursor = await service.request("GET", `${base()}/billing/usage?cursor=nope`)
    expect(badCursor.status).toBe(400)
    const badDate = await service.request("GET", `${base()}/billing/usage?from=yesterday`)
    expect(badDate.status).toBe(400)
    expect(badDate.json.extra.param).toBe("from")
  })

  it("the OpenAPI document has the billing paths and the 402 on session creates", async () => {
    const doc = await service.request("GET", "/openapi.json", { key: null })
    expect(Object.keys(doc.json.paths)).toEqual(expect.arrayContaining([
      "/v1/projects/{pid}/billing/account",
      "/v1/projects/{pid}/billing/usage"
    ]))
    expect(Object.keys(doc.json.paths["/v1/projects/{pid}/do_anything/sessions"].post.responses)).toContain("402")
  })
})
