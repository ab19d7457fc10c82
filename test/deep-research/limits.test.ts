/**
 * DeepResearch limits and refusals through HTTP: request validation (a 422 creates nothing),
 * defaults, idempotency, the cost cap (before and after the outline), the duration limit at the
 * outline gate, cancel, rejecting the outline, conflicts and 404s, and a service without a model.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { classify, researchScript } from "../fixtures/model/research-model.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import {
  allEvents,
  basePath,
  createRun,
  dataOf,
  getRun,
  markersOf,
  researchEnv,
  sectionsOf,
  sourcesListOf,
  waitForGate,
  waitForTerminal,
  type ResearchFixtures,
  startResearchFixtures
} from "./helpers.ts"

let fx: ResearchFixtures
let table: Record<string, ReadonlyArray<string>> = {}

const H1 = "127.0.0.1" as const
const H2 = "127.0.0.2" as const

beforeAll(async () => {
  fx = await startResearchFixtures(() => table)
})
afterAll(async () => {
  await fx.close()
})

/** Three sections of two sources each (on two sites). */
const threeSections = (tag: string) => {
  table = {
    ...table,
    [`${tag}-1`]: [fx.web.url(H1, `/doc/${tag}-1a`), fx.web.url(H2, `/doc/${tag}-1b`)],
    [`${tag}-2`]: [fx.web.url(H1, `/doc/${tag}-2a`), fx.web.url(H2, `/doc/${tag}-2b`)],
    [`${tag}-3`]: [fx.web.url(H1, `/doc/${tag}-3a`), fx.web.url(H2, `/doc/${tag}-3b`)]
  }
  fx.model.setScript(researchScript({
    sections: [
      { title: `${tag} first`, queries: [`${tag}-1`] },
      { title: `${tag} second`, queries: [`${tag}-2`] },
      { title: `${tag} third`, queries: [`${tag}-3`] }
    ]
  }))
}

describe("with a model at 1 USD a call, a minute of one second", () => {
  let service: Service
  // 20k input tokens at 50 USD per million: each scripted call costs exactly 1.00 USD.
  beforeAll(async () => {
    service = await startService({ env: researchEnv(fx.model, fx.engines, { WA_MODEL_PRICE_PER_MTOK: "50,0", WA_RUN_MINUTE_MS: "1000" }) })
  })
  afterAll(() => stopAndClean(service))

  it("rejects invalid create bodies with 422 validation_error and creates nothing", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, "topic"],
      [{ topic: "" }, "topic"],
      [{ topic: "x".repeat(2001) }, "topic"],
      [{ topic: 42 }, "topic"],
      [{ topic: "t", depth: "extreme" }, "depth"],
      [{ topic: "t", output_format: "pdf" }, "output_format"],
      [{ topic: "t", target_audience: "x".repeat(501) }, "target_audience"],
      [{ topic: "t", require_outline_approval: "yes" }, "require_outline_approval"],
      [{ topic: "t", max_duration_minutes: 0 }, "max_duration_minutes"],
      [{ topic: "t", max_duration_minutes: 10_001 }, "max_duration_minutes"],
      [{ topic: "t", max_duration_minutes: 1.5 }, "max_duration_minutes"],
      [{ topic: "t", max_cost_usd: -1 }, "max_cost_usd"],
      [{ topic: "t", max_cost_usd: "-1" }, "max_cost_usd"],
      [{ topic: "t", max_cost_usd: "two dollars" }, "max_cost_usd"],
      [{ topic: "t", domain_whitelist: Array.from({ length: 201 }, (_, i) => `s${i}.example`) }, "domain_whitelist"],
      [{ topic: "t", domain_blacklist: Array.from({ length: 201 }, (_, i) => `s${i}.example`) }, "domain_blacklist"],
      [{ topic: "t", domain_whitelist: "example.com" }, "domain_whitelist"],
      [{ topic: "t", callback_url: "" }, "callback_url"],
      [{ topic: "t", callback_url: `https://example.com/${"x".repeat(2084)}` }, "callback_url"],
      [{ topic: "t", unknown_field: true }, "unknown_field"]
    ]
    for (const convention of ["A", "B", "standalone"] as const) {
      for (const [body, field] of cases) {
        const response = await service.request("POST", basePath(service, convention), { body })
        expect(response.status, `${convention} ${JSON.stringify(body).slice(0, 80)}: ${response.text.slice(0, 300)}`).toBe(422)
        expect(response.json.code).toBe("validation_error")
        if (field !== "unknown_field") {
          expect(response.json.extra.errors.some((e: any) => e.loc?.[1] === field), `${field}: ${JSON.stringify(response.json.extra)}`).toBe(true)
        }
      }
    }
    const notJson = await service.request("POST", basePath(service), { rawBody: "{topic:" })
    expect([400, 422]).toContain(notJson.status)
    for (const convention of ["A", "B", "standalone"] as const) {
      const listed = await service.request("GET", basePath(service, convention))
      expect(listed.status).toBe(200)
      expect(listed.json.items).toEqual([])
    }
    expect(fx.model.requests).toHaveLength(0)
  })

  it("accepts the limits' edges and fills the defaults", async () => {
    // Nine sections of four queries each proposed: each depth keeps its budget.
    fx.model.setScript(researchScript({ sections: Array.from({ length: 9 }, (_, i) => ({ title: `Edge ${i + 1}`, queries: [1, 2, 3, 4].map((q) => `edge-${i + 1}-${q}`) })) }))
    const edge = await createRun(service, {
      topic: "x".repeat(2000),
      target_audience: "y".repeat(500),
      max_duration_minutes: 10_000,
      max_cost_usd: "2.50",
      domain_whitelist: Array.from({ length: 200 }, (_, i) => `s${i}.example`),
      domain_blacklist: null,
      callback_url: `https://example.com/${"x".repeat(2083 - 20)}`
    })
    expect(edge.depth).toBe("standard")
    expect(edge.require_outline_approval).toBe(true)
    expect(Number(edge.max_cost_usd)).toBe(2.5)
    expect(edge.deadline_at).not.toBeNull()
    const numeric = await createRun(service, { topic: "numeric cap", max_cost_usd: 7.5, depth: "deep" })
    expect(Number(numeric.max_cost_usd)).toBe(7.5)
    expect(numeric.depth).toBe("deep")
    const budgets = new Map([[edge.run_id, { sections: 5, queries: 2 }], [numeric.run_id, { sections: 8, queries: 3 }]])
    for (const run of [edge, numeric]) {
      const gated = await waitForGate(service, run.run_id)
      expect(gated.status).toBe("awaiting_input")
      const budget = budgets.get(run.run_id)!
      expect(gated.outline.sections.map((s: any) => s.section_id)).toEqual(Array.from({ length: budget.sections }, (_, i) => `s${i + 1}`))
      for (const section of gated.outline.sections) expect(section.queries).toHaveLength(budget.queries)
      const canceled = await service.request("POST", `${basePath(service)}/${run.run_id}/cancel`, { body: {} })
      expect(canceled.status, canceled.text).toBe(200)
    }
  })

  it("a repeated create with the same Idempotency-Key returns the same run", async () => {
    fx.model.setScript(researchScript({ sections: [{ title: "Idem", queries: ["idem-q"] }] }))
    const key = crypto.randomUUID()
    const first = await service.request("POST", basePath(service), { body: { topic: "idempotent" }, headers: { "idempotency-key": key } })
    const second = await service.request("POST", basePath(service), { body: { topic: "idempotent" }, headers: { "idempotency-key": key } })
    expect(first.status).toBe(202)
    expect(second.status).toBe(202)
    expect(second.json.run_id).toBe(first.json.run_id)
    const listed = await service.request("GET", `${basePath(service)}?limit=100`)
    expect(listed.json.items.filter((r: any) => r.topic === "idempotent")).toHaveLength(1)
    await waitForGate(service, first.json.run_id)
    await service.request("POST", `${basePath(service)}/${first.json.run_id}/cancel`, { body: { reason: "done testing" } })
  })

  it("cost cap reached after the outline: no more model calls, the rest written from the sources, run done", async () => {
    threeSections("cap")
    const from = fx.model.requests.length
    const { run_id } = await createRun(service, { topic: "Capped", depth: "light", require_outline_approval: false, max_cost_usd: "3.50" })
    const run = await waitForTerminal(service, run_id)
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    const calls = fx.model.requests.slice(from).map(classify)
    // 1.00 a call: brief, plan, then calls until 3.50 is reached (the fourth); none after.
    expect(calls).toHaveLength(4)
    expect(calls.slice(0, 2).map((c) => c.kind)).toEqual(["brief", "outline"])
    expect(run.llm_cost_usd).toBe("4.00")
    expect(Number(run.max_cost_usd)).toBe(3.5)

    // Every section is in the report; those the model did not write are partial (cost_cap_reached).
    const md: string = run.result.final_md
    const written = new Set(calls.filter((c) => c.kind === "write").map((c) => (c as { section: string }).section))
    for (const section of run.outline.sections) {
      expect(md).toContain(`## ${section.title}`)
      const partial = run.result.partial_sections.find((p: any) => p.section_id === section.section_id)
      if (written.has(section.title)) expect(partial?.reason).not.toBe("cost_cap_reached")
      else expect(partial, section.section_id).toMatchObject({ reason: "cost_cap_reached" })
    }
    expect(written.size).toBeLessThan(3)
    // Sections written without the model hold extracts of their own sources, cited from the same list.
    const listed = sourcesListOf(md)
    expect(run.result.citations_count).toBe(listed.length)
    expect(listed).toHaveLength(6)
    const parts = sectionsOf(md)
    run.outline.sections.forEach((section: any, i: number) => {
      if (written.has(section.title)) return
      const body = parts.get(section.title) ?? ""
      expect(body, section.title).toContain(`cap-${i + 1}a`)
      const own = new Set(listed.filter((l) => l.url.includes(`/doc/cap-${i + 1}`)).map((l) => l.n))
      expect(markersOf(body).length, section.title).toBeGreaterThan(0)
      for (const n of markersOf(body)) expect(own.has(n), `[${n}] in ${section.title}`).toBe(true)
    })

    const { events } = await allEvents(service, run_id)
    const costs = events.filter((e) => e.event === "run.cost_update").map((e) => dataOf(e))
    // The tokens and the run's fee (deep_research_per_run of config/prices.json: 0.10 USD).
    expect(costs.reduce((sum, c) => sum + Number(c.increment_usd), 0)).toBeCloseTo(4.1, 6)
    expect(Number(costs[costs.length - 1].llm_cost_usd)).toBeCloseTo(4, 6)
  })

  it("cost cap reached before the outline exists: the run fails with cost_cap_reached", async () => {
    threeSections("early")
    const from = fx.model.requests.length
    const { run_id } = await createRun(service, { topic: "Capped early", depth: "light", max_cost_usd: 0.5 })
    const run = await waitForTerminal(service, run_id)
    expect(run.status).toBe("failed")
    expect(run.error.code).toBe("cost_cap_reached")
    expect(fx.model.requests.slice(from).map((r) => classify(r).kind)).toEqual(["brief"])
    expect(run.llm_cost_usd).toBe("1.00")
    expect(run.result).toBeNull()
  })

  it("a zero cap allows no model call at all", async () => {
    threeSections("zero")
    const from = fx.model.requests.length
    const { run_id } = await createRun(service, { topic: "Zero cap", max_cost_usd: "0" })
    const run = await waitForTerminal(service, run_id)
    expect(run.status).toBe("failed")
    expect(run.error.code).toBe("cost_cap_reached")
    expect(fx.model.requests.length).toBe(from)
  })

  it("a run past max_duration_minutes while waiting at the outline gate ends canceled with duration_exceeded", async () => {
    threeSections("late")
    const { run_id } = await createRun(service, { topic: "Too slow to approve", depth: "light", max_duration_minutes: 1 })
    const run = await waitForTerminal(service, run_id)
    expect(run.status).toBe("canceled")
    expect(run.terminal_reason).toBe("duration_exceeded")
    expect(run.error).toEqual({ code: "duration_exceeded", detail: expect.any(String) })
    expect(run.pending_request_id).toBeNull()
    const { events, ended } = await allEvents(service, run_id)
    expect(ended).toBe(true)
    expect(events[events.length - 1]!.event).toBe("run.completed")
  })

  it("cancel while awaiting approval: canceled, the stream ends, a second cancel and intervene are 409", async () => {
    threeSections("cancel")
    const from = fx.model.requests.length
    const { run_id } = await createRun(service, { topic: "Canceled at the gate", depth: "light" })
    const gated = await waitForGate(service, run_id)
    expect(gated.status).toBe("awaiting_input")
    // A stream opened before the cancel ends after the terminal event.
    const streaming = readSse(`${service.url}${basePath(service)}/${run_id}/events`, { authorization: `Bearer ${service.apiKey}` }, { timeoutMs: 30_000 })
    const canceled = await service.request("POST", `${basePath(service)}/${run_id}/cancel`, { body: { reason: "changed my mind" } })
    expect(canceled.status, canceled.text).toBe(200)
    expect(canceled.json.status).toBe("canceled")
    expect(canceled.json.pending_request_id).toBeNull()
    const { events, ended } = await streaming
    expect(ended).toBe(true)
    const last = events.filter((e) => e.event !== "stream.heartbeat").pop()!
    expect(last.event).toBe("run.completed")
    expect(dataOf(last)).toMatchObject({ status: "canceled" })

    const again = await service.request("POST", `${basePath(service)}/${run_id}/cancel`, { body: {} })
    expect(again.status).toBe(409)
    expect(again.json.code).toBe("conflict")
    const intervene = await service.request("POST", `${basePath(service)}/${run_id}/intervene`, { body: { request_id: gated.pending_request_id, response: "approve" } })
    expect(intervene.status).toBe(409)
    expect((await getRun(service, run_id)).status).toBe("canceled")
    expect(fx.model.requests.slice(from).map((r) => classify(r).kind)).toEqual(["brief", "outline"])
    expect(fx.engines.requests.some((r) => (r.params["q"] ?? "").startsWith("cancel-"))).toBe(false)
    const badReason = await service.request("POST", `${basePath(service)}/${run_id}/cancel`, { body: { reason: "x".repeat(201) } })
    expect(badReason.status).toBe(422)
  })

  for (const [name, answer] of [["{approved: false}", { approved: false }], ["{action: reject}", { action: "reject", reason: "too broad" }]] as const) {
    it(`rejecting the outline with ${name} cancels the run (outline_rejected)`, async () => {
      threeSections(`reject${name.length}`)
      const from = fx.model.requests.length
      const { run_id } = await createRun(service, { topic: `Rejected ${name}`, depth: "light" }, "B")
      const gated = await waitForGate(service, run_id, "B")
      const response = await service.request("POST", `${basePath(service, "B")}/${run_id}/intervene`, { body: { request_id: gated.pending_request_id, response: answer } })
      expect(response.status, response.text).toBe(200)
      const run = await waitForTerminal(service, run_id, "B")
      expect(run.status).toBe("canceled")
      expect(run.terminal_reason).toBe("outline_rejected")
      expect(run.result).toBeNull()
      expect(fx.model.requests.slice(from).map((r) => classify(r).kind)).toEqual(["brief", "outline"])
      const intervene = await service.request("POST", `${basePath(service)}/${run_id}/intervene`, { body: { request_id: gated.pending_request_id, response: "approve" } })
      expect(intervene.status).toBe(409)
    })
  }

  it("unknown runs and artifacts are 404 run_not_found on every operation", async () => {
    const rid = "run_doesnotexist"
    for (const convention of ["A", "B", "standalone"] as const) {
      const base = `${basePath(service, convention)}/${rid}`
      const responses = [
        await service.request("GET", base),
        await service.request("GET", `${base}/events`),
        await service.request("POST", `${base}/intervene`, { body: { request_id: "ir_x", response: "approve" } }),
        await service.request("POST", `${base}/cancel`, { body: {} }),
        await service.request("POST", `${base}/feedback`, { body: { rating: 1 } }),
        await service.request("GET", `${base}/artifacts`),
        await service.request("GET", `${base}/artifacts/art_x`)
      ]
      for (const response of responses) {
        expect(response.status, `${convention}: ${response.text}`).toBe(404)
        expect(response.json.code).toBe("run_not_found")
      }
    }
    // Another project's path is forbidden, not a way to see this project's runs.
    const listed = await service.request("GET", `/v1/projects/proj_someoneelse/deep_research/runs`)
    expect([403, 404]).toContain(listed.status)
  })
})

describe("without a model", () => {
  let service: Service
  beforeAll(async () => {
    service = await startService({ env: researchEnv(undefined, fx.engines) })
  })
  afterAll(() => stopAndClean(service))

  it("a run fails with model_not_configured", async () => {
    const { run_id } = await createRun(service, { topic: "No model here" })
    const run = await waitForTerminal(service, run_id)
    expect(run.status).toBe("failed")
    expect(run.error.code).toBe("model_not_configured")
    expect(run.result).toBeNull()
    const { events, ended } = await allEvents(service, run_id)
    expect(ended).toBe(true)
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1))
    expect(dataOf(events[events.length - 1]!)).toMatchObject({ status: "failed", error: { code: "model_not_configured" } })
  })
})
