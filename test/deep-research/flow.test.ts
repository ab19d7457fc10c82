/**
 * DeepResearch end to end through HTTP: the real service with its embedded PostgreSQL, the scripted
 * model answering the research calls, SearXNG faked on loopback, and Markdown pages on three
 * loopback hosts read by the real Reader.
 *
 * Covers the outline gate (approval with edits, refused answers), the phases and their events,
 * the report and its artifacts (citations integrity, confidence), Convention B, the standalone
 * path, listing, domain lists, the terminal callback and feedback.
 */
import { Webhook } from "standardwebhooks"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest"
import { classify, type ResearchCall, researchScript, type SourceLine } from "../fixtures/model/research-model.ts"
import { docTitle } from "../fixtures/sites/research-web.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import { eventually } from "../support/runs.ts"
import { checkWebhookDelivery, startWebhookReceiver, verifiedDelivery } from "../support/webhook-receiver.ts"
import { usdFromMicros } from "../../src/domain/money.ts"
import {
  allEvents,
  basePath,
  bareQuery,
  createRun,
  dataOf,
  getRun,
  hostnameOf,
  markersOf,
  pageKey,
  researchEnv,
  sectionsOf,
  sourcesListOf,
  waitForGate,
  waitForTerminal,
  type ResearchFixtures,
  startResearchFixtures
} from "./helpers.ts"

let fx: ResearchFixtures
let service: Service
let table: Record<string, ReadonlyArray<string>> = {}

beforeAll(async () => {
  fx = await startResearchFixtures(() => table)
  service = await startService({ env: researchEnv(fx.model, fx.engines) })
})
afterAll(async () => {
  await stopAndClean(service)
  await fx.close()
})

const H1 = "127.0.0.1" as const
const H2 = "127.0.0.2" as const
const H3 = "127.0.0.3" as const

/** The research calls the model received since `from` (an index into model.requests). */
const callsSince = (from: number): Array<ResearchCall> => fx.model.requests.slice(from).map(classify)
const searchedSince = (from: number) => fx.engines.requests.slice(from).map((r) => bareQuery(r.params["q"] ?? ""))

/** Confidence of the three kept standard claims of a section, from its sources' sites. */
const expectedConfidences = (sources: ReadonlyArray<SourceLine>) => {
  const sites = new Set(sources.map((s) => hostnameOf(s.url)))
  return [sites.size >= 2 ? "high" : "medium", "medium", "low"]
}

describe("outline gate, report and artifacts", () => {
  const brief = { title: "Flow brief title", objective: "Flow objective: what the sources say about widgets.", key_questions: ["How much?", "Since when?"] }
  const proposed = [
    { title: "Costs", queries: ["flow-cost", "flow-cost-extra"] },
    { title: "History", queries: ["flow-history", "flow-history-extra"] },
    { title: "Policy", queries: ["flow-policy", "flow-policy-extra"] },
    { title: "A fourth section", queries: ["flow-fourth"] }
  ]
  let rid: string
  let requestFrom = 0
  let searchFrom = 0
  let gated: any
  let finished: any

  beforeAll(() => {
    table = {
      "flow-cost": [fx.web.url(H1, "/doc/cost-a"), fx.web.url(H2, "/doc/cost-b"), fx.web.url(H3, "/doc/cost-c")],
      "flow-cost-extra": [fx.web.url(H1, "/doc/never-1")],
      "flow-history": [fx.web.url(H1, "/doc/never-2")],
      "flow-history-extra": [fx.web.url(H1, "/doc/never-3")],
      "flow-policy": [fx.web.url(H1, "/doc/never-4")],
      "flow-policy-extra": [fx.web.url(H1, "/doc/never-5")],
      "flow-fourth": [fx.web.url(H1, "/doc/never-6")],
      // The first hit is the cost section's page again (with a tracking parameter): one section only.
      "flow-policy-new": [`${fx.web.url(H1, "/doc/cost-a")}?utm_source=newsletter`, fx.web.url(H1, "/doc/policy-a"), fx.web.url(H1, "/doc/policy-b")],
      // One page too short to be a source: the section ends with one source of two.
      "flow-outlook": [fx.web.url(H2, "/short/outlook-x"), fx.web.url(H2, "/doc/outlook-a")]
    }
    fx.model.setScript(researchScript({ brief, sections: proposed }))
    requestFrom = fx.model.requests.length
    searchFrom = fx.engines.requests.length
  })

  it("plans within the depth budget and waits at the outline gate", async () => {
    const created = await createRun(service, { topic: "Widgets and their prices", depth: "light" })
    rid = created.run_id
    expect(created).toMatchObject({
      id: rid,
      run_id: rid,
      session_id: null,
      project_id: service.projectId,
      kind: "deep_research",
      topic: "Widgets and their prices",
      depth: "light",
      require_outline_approval: true,
      max_cost_usd: null,
      callback_url: null,
      result: null
    })
    expect(rid).toMatch(/^run_/)
    expect(["pending", "running"]).toContain(created.status)

    gated = await waitForGate(service, rid)
    expect(gated.status).toBe("awaiting_input")
    expect(gated.phase).toBe("hitl_outline")
    expect(gated.pending_request_id).toMatch(/^ir_/)
    // light: three sections of one query each; the fourth section and second queries are cut.
    expect(gated.outline.sections).toEqual([
      { section_id: "s1", title: "Costs", questions: expect.any(Array), queries: ["flow-cost"] },
      { section_id: "s2", title: "History", questions: expect.any(Array), queries: ["flow-history"] },
      { section_id: "s3", title: "Policy", questions: expect.any(Array), queries: ["flow-policy"] }
    ])
    // Nothing is searched before the outline is approved.
    expect(searchedSince(searchFrom)).toEqual([])
    expect(callsSince(requestFrom).map((c) => c.kind)).toEqual(["brief", "outline"])
    expect(callsSince(requestFrom)[0]!.prompt).toContain("Widgets and their prices")

    const stream = await readSse(`${service.url}${basePath(service)}/${rid}/events`, { authorization: `Bearer ${service.apiKey}` }, {
      stopAfter: (events) => events.some((e) => e.event === "run.input_request")
    })
    const request = dataOf(stream.events.find((e) => e.event === "run.input_request")!)
    expect(request.request_id).toBe(gated.pending_request_id)
    expect(request.input_request_id).toBe(gated.pending_request_id)
    expect(typeof request.prompt).toBe("string")
    expect(request.prompt.length).toBeGreaterThan(0)
    const schema = JSON.stringify(request.schema)
    for (const title of ["Costs", "History", "Policy"]) expect(schema).toContain(title)
    expect(schema).not.toContain("A fourth section")
  })

  it("refuses a wrong request id (409) and malformed answers (422), and keeps waiting", async () => {
    const intervene = (body: unknown) => service.request("POST", `${basePath(service)}/${rid}/intervene`, { body })
    const wrong = await intervene({ request_id: "ir_not_this_one", response: "approve" })
    expect(wrong.status, wrong.text).toBe(409)
    expect(wrong.json.code).toBe("conflict")

    const malformed: Array<unknown> = [
      { request_id: gated.pending_request_id, response: { action: "dance" } },
      { request_id: gated.pending_request_id, response: { action: "approve_with_edits", edits: [] } },
      { request_id: gated.pending_request_id, response: { action: "approve_with_edits", edits: [{ op: "explode", section_id: "s1" }] } },
      { request_id: gated.pending_request_id, response: 42 },
      // An edit naming a section the outline does not have.
      { request_id: gated.pending_request_id, response: { action: "approve_with_edits", edits: [{ op: "remove_section", section_id: "s9" }] } },
      { request_id: gated.pending_request_id, response: { action: "approve_with_edits", edits: [{ op: "rename_section", section_id: "s7", title: "x" }] } },
      // Unknown field of the (strict) intervene body, and a missing request_id.
      { request_id: gated.pending_request_id, response: "approve", extra: true },
      { response: "approve" }
    ]
    for (const body of malformed) {
      const response = await intervene(body)
      expect(response.status, JSON.stringify(body) + " -> " + response.text).toBe(422)
      expect(response.json.code).toBe("validation_error")
    }
    const still = await getRun(service, rid)
    expect(still.status).toBe("awaiting_input")
    expect(still.phase).toBe("hitl_outline")
    expect(still.pending_request_id).toBe(gated.pending_request_id)
    expect(still.outline).toEqual(gated.outline)
    expect(searchedSince(searchFrom)).toEqual([])
  })

  it("approve_with_edits applies the edits; the run gathers, crosschecks, writes and finishes", async () => {
    const response = await service.request("POST", `${basePath(service)}/${rid}/intervene`, {
      body: {
        kind: "answer_input_request",
        request_id: gated.pending_request_id,
        metadata: { reviewer: "test" },
        response: {
          action: "approve_with_edits",
          edits: [
            { op: "rename_section", section_id: "s1", title: "Costs and prices" },
            { op: "remove_section", section_id: "s2" },
            { op: "set_queries", section_id: "s3", queries: ["flow-policy-new"] },
            { op: "add_section", title: "Outlook", queries: ["flow-outlook"] },
            "Focus on recent years"
          ]
        }
      }
    })
    expect(response.status, response.text).toBe(200)
    expect(response.json.status).not.toBe("awaiting_input")
    expect(response.json.pending_request_id).toBeNull()

    // Answering the same request again: it is no longer pending.
    const again = await service.request("POST", `${basePath(service)}/${rid}/intervene`, { body: { request_id: gated.pending_request_id, response: "approve" } })
    expect(again.status).toBe(409)

    finished = await waitForTerminal(service, rid)
    expect(finished.status, JSON.stringify(finished.error)).toBe("done")
    expect(finished.terminal_reason).toBe("done")
    expect(finished.error).toBeNull()
    // Phases apply while the run is under way: an ended run shows none.
    expect(finished.phase).toBeNull()
    // The run's outline is the approved one, with its edits.
    const sections = finished.outline.sections
    expect(sections.map((s: any) => s.title)).toEqual(["Costs and prices", "Policy", "Outlook"])
    expect(sections[0]).toMatchObject({ section_id: "s1", queries: ["flow-cost"] })
    expect(sections[1]).toMatchObject({ section_id: "s3", queries: ["flow-policy-new"] })
    expect(sections[2].queries).toEqual(["flow-outlook"])
    expect(["s1", "s2", "s3"]).not.toContain(sections[2].section_id)
    expect(finished.finished_at).not.toBeNull()
    expect(finished.started_at).not.toBeNull()
  })

  it("searched only the approved outline's queries, and gave each page to one section", async () => {
    expect(new Set(searchedSince(searchFrom))).toEqual(new Set(["flow-cost", "flow-policy-new", "flow-outlook"]))
    for (let i = 1; i <= 6; i++) expect(fx.web.hits(fx.web.url(H1, `/doc/never-${i}`))).toBe(0)

    const claims = callsSince(requestFrom).filter((c) => c.kind === "claims") as Array<Extract<ResearchCall, { kind: "claims" }>>
    expect(claims.map((c) => c.section).sort()).toEqual(["Costs and prices", "Outlook", "Policy"])
    const sources = claims.flatMap((c) => c.sources)
    // Source ids S1..Sn over the whole run, each once.
    expect(sources.map((s) => Number(s.id.slice(1))).sort((a, b) => a - b)).toEqual(sources.map((_, i) => i + 1))
    // A page is used by one section only (the tracking parameter does not make it another page).
    const keys = sources.map((s) => pageKey(s.url))
    expect(new Set(keys).size).toBe(keys.length)
    expect(keys.filter((k) => k.endsWith("/doc/cost-a"))).toHaveLength(1)
    // Budgets: two sources per section; the short page is not a source.
    for (const call of claims) expect(call.sources.length).toBeLessThanOrEqual(2)
    expect(claims.find((c) => c.section === "Outlook")!.sources.map((s) => pageKey(s.url))).toEqual([pageKey(fx.web.url(H2, "/doc/outlook-a"))])
    expect(keys.some((k) => k.includes("/short/"))).toBe(false)
    // The model saw the page text, titled as the page is.
    const costs = claims.find((c) => c.section === "Costs and prices")!
    expect(costs.prompt).toContain("This page is about cost-a")
    expect(costs.sources[0]!.title).toBe(docTitle("cost-a"))

    const writes = callsSince(requestFrom).filter((c) => c.kind === "write")
    expect(writes.map((c) => (c as { section: string }).section).sort()).toEqual(["Costs and prices", "Outlook", "Policy"])
    // The reviewer's note reaches the writer; dropped claims do not.
    for (const write of writes) {
      expect(write.prompt).toContain("Focus on recent years")
      expect(write.prompt).not.toContain("Bogus claim")
    }
    expect(callsSince(requestFrom).filter((c) => c.kind === "brief" || c.kind === "outline")).toHaveLength(2)
  })

  it("the report: title, objective, one part per section, cited sources, partial sections", async () => {
    const result = finished.result
    const md: string = result.final_md
    expect(md.startsWith(`# ${brief.title}`)).toBe(true)
    expect(md).toContain(brief.objective)
    expect([...md.matchAll(/^## (.*)$/gm)].map((m) => m[1]!.trim())).toEqual(["Costs and prices", "Policy", "Outlook", "Sources"])
    expect(md).toContain("a fact from one source")
    expect(md).not.toContain("[99]")
    expect(md).not.toContain("Bogus claim")

    const claims = callsSince(requestFrom).filter((c) => c.kind === "claims") as Array<Extract<ResearchCall, { kind: "claims" }>>
    const listed = sourcesListOf(md)
    expect(listed.map((l) => l.n)).toEqual(listed.map((_, i) => i + 1))
    expect(result.citations_count).toBe(listed.length)
    // Every source was cited by a kept claim, so every source is in the list.
    expect(new Set(listed.map((l) => pageKey(l.url)))).toEqual(new Set(claims.flatMap((c) => c.sources.map((s) => pageKey(s.url)))))
    const known = new Set(listed.map((l) => l.n))
    for (const n of markersOf(md.slice(0, md.indexOf("## Sources")))) expect(known.has(n), `[${n}] in the report`).toBe(true)

    // Each section cites only its own sources.
    const parts = sectionsOf(md)
    for (const call of claims) {
      const own = new Set(listed.filter((l) => call.sources.some((s) => pageKey(s.url) === pageKey(l.url))).map((l) => l.n))
      const used = markersOf(parts.get(call.section) ?? "")
      expect(used.length, call.section).toBeGreaterThan(0)
      for (const n of used) expect(own.has(n), `[${n}] in ${call.section}`).toBe(true)
    }

    // Confidence: both-sites claims high, single-site medium, contested low; the bogus claim dropped.
    const expected = { high: 0, medium: 0, low: 0 } as Record<string, number>
    for (const call of claims) for (const c of expectedConfidences(call.sources)) expected[c]!++
    expect(result.confidence_summary).toEqual(expected)

    const outlookId = finished.outline.sections.find((s: any) => s.title === "Outlook").section_id
    expect(result.partial_sections).toHaveLength(1)
    expect(result.partial_sections[0]).toMatchObject({ section_id: outlookId, reason: "insufficient_sources", coverage_ratio: 0.5 })
    expect(result.partial_sections[0].blockers.join("\n")).toContain("/short/outlook-x")
  })

  it("artifacts: final.md, citations.json and confidence.json, consistent with the result", async () => {
    const result = finished.result
    const listed = await service.request("GET", `${basePath(service)}/${rid}/artifacts`)
    expect(listed.status).toBe(200)
    const byName = new Map<string, any>(listed.json.items.map((a: any) => [a.name, a]))
    expect([...byName.keys()].sort()).toEqual(["citations.json", "confidence.json", "final.md"])
    for (const artifact of listed.json.items) {
      expect(artifact).toMatchObject({ run_id: rid, id: expect.any(String), created_at: expect.any(String) })
    }
    expect(byName.get("final.md").content_type).toMatch(/^text\/markdown/)
    expect(byName.get("citations.json").content_type).toMatch(/^application\/json/)
    expect(byName.get("confidence.json").content_type).toMatch(/^application\/json/)
    expect(byName.get("final.md").id).toBe(result.final_artifact_id)

    const content = async (name: string) => {
      const artifact = byName.get(name)
      const response = await service.fetch(`${service.url}${basePath(service)}/${rid}/artifacts/${artifact.id}`, { headers: { authorization: `Bearer ${service.apiKey}` } })
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toContain(artifact.content_type.split(";")[0])
      const text = await response.text()
      expect(Buffer.byteLength(text)).toBe(artifact.size_bytes)
      return text
    }
    expect(await content("final.md")).toBe(result.final_md)

    const citations = JSON.parse(await content("citations.json"))
    expect(citations).toHaveLength(result.citations_count)
    expect(citations.map((c: any) => c.n)).toEqual(citations.map((_: any, i: number) => i + 1))
    const claims = callsSince(requestFrom).filter((c) => c.kind === "claims") as Array<Extract<ResearchCall, { kind: "claims" }>>
    const sectionIdOf = new Map<string, string>(finished.outline.sections.map((s: any) => [s.title, s.section_id]))
    const listedInReport = sourcesListOf(result.final_md)
    for (const citation of citations) {
      const owner = claims.find((c) => c.sources.some((s) => s.id === citation.source_id))!
      expect(owner, citation.source_id).toBeDefined()
      const source = owner.sources.find((s) => s.id === citation.source_id)!
      expect(pageKey(citation.url)).toBe(pageKey(source.url))
      expect(citation.title).toBe(source.title)
      expect(citation.site).toBe(hostnameOf(source.url))
      expect(citation.section_ids).toEqual([sectionIdOf.get(owner.section)])
      expect(listedInReport.find((l) => l.n === citation.n)).toMatchObject({ url: citation.url })
    }

    const confidence = JSON.parse(await content("confidence.json"))
    expect(confidence.summary).toEqual(result.confidence_summary)
    expect(confidence.sections.map((s: any) => s.section_id)).toEqual(finished.outline.sections.map((s: any) => s.section_id))
    const numbers = new Set(citations.map((c: any) => c.n))
    for (const section of confidence.sections) {
      const call = claims.find((c) => c.section === section.title)!
      expect(section.claims.map((c: any) => c.confidence)).toEqual(expectedConfidences(call.sources))
      for (const claim of section.claims) {
        expect(claim.text).not.toContain("Bogus")
        expect(claim.citations.length).toBeGreaterThan(0)
        for (const n of claim.citations) expect(numbers.has(n)).toBe(true)
      }
    }

    const missing = await service.request("GET", `${basePath(service)}/${rid}/artifacts/art_nothing`)
    expect(missing.status).toBe(404)
  })

  it("events: contiguous ids, phases in order, gate, progress, costs, one terminal event", async () => {
    const { events, ended } = await allEvents(service, rid)
    expect(ended).toBe(true)
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1))
    const types = events.map((e) => e.event)
    expect(types[types.length - 1]).toBe("run.completed")
    expect(types.filter((t) => t === "run.completed")).toHaveLength(1)
    expect(dataOf(events[events.length - 1]!)).toMatchObject({ status: "done" })

    const phases = events.filter((e) => e.event === "run.phase_changed").map((e) => dataOf(e))
    for (const phase of phases) expect(phase.run_id).toBe(rid)
    expect(phases.map((p) => p.phase)).toEqual(["brief", "plan", "hitl_outline", "gather", "crosscheck", "synthesize"])

    const index = (type: string, predicate: (data: any) => boolean = () => true) => events.findIndex((e) => e.event === type && predicate(dataOf(e)))
    expect(index("run.input_request")).toBeGreaterThan(index("run.phase_changed", (d) => d.phase === "hitl_outline"))
    expect(index("run.input_request_resolved")).toBeGreaterThan(index("run.input_request"))
    expect(index("run.phase_changed", (d) => d.phase === "gather")).toBeGreaterThan(index("run.input_request_resolved"))

    const progress = events.filter((e) => e.event === "run.research.progress").map((e) => dataOf(e)).filter((p) => p.phase === "gather")
    const claims = callsSince(requestFrom).filter((c) => c.kind === "claims") as Array<Extract<ResearchCall, { kind: "claims" }>>
    for (const section of finished.outline.sections) {
      const mine = progress.filter((p) => p.section_id === section.section_id)
      expect(mine.length, section.section_id).toBeGreaterThan(0)
      for (const p of mine) expect(p).toMatchObject({ phase: "gather", sources_target: 2 })
      expect(mine[mine.length - 1].sources_found).toBe(claims.find((c) => c.section === section.title)!.sources.length)
    }
    const gatherAt = index("run.phase_changed", (d) => d.phase === "gather")
    const crosscheckAt = index("run.phase_changed", (d) => d.phase === "crosscheck")
    for (const e of events.filter((e) => e.event === "run.research.progress" && dataOf(e).phase === "gather")) {
      expect(e.id!).toBeGreaterThan(events[gatherAt]!.id!)
      expect(e.id!).toBeLessThan(events[crosscheckAt]!.id!)
    }

    // Costs: the scripted model reports 20k input and 500 output tokens a call, 1 and 3 USD per
    // million tokens for an unknown model: 0.0215 USD a call.
    const calls = callsSince(requestFrom).length
    const costs = events.filter((e) => e.event === "run.cost_update").map((e) => dataOf(e))
    expect(costs.length).toBeGreaterThan(0)
    const spent = costs.reduce((sum, c) => sum + Number(c.increment_usd), 0)
    // Besides the tokens, the run's fee (deep_research_per_run of config/prices.json: 0.10 USD).
    expect(spent).toBeCloseTo(calls * 0.0215 + 0.1, 6)
    expect(Number(costs[costs.length - 1].service_cost_usd)).toBeCloseTo(0.1, 6)
    expect(Number(costs[costs.length - 1].llm_cost_usd)).toBeCloseTo(calls * 0.0215, 6)
    expect(finished.llm_cost_usd).toBe(usdFromMicros(calls * 21_500))
  })

  it("replays the events after Last-Event-ID", async () => {
    const all = (await allEvents(service, rid)).events
    const { events } = await allEvents(service, rid, "A", { "last-event-id": "5" })
    expect(events.map((e) => e.id)).toEqual(all.slice(5).map((e) => e.id))
    expect(events.map((e) => e.event)).toEqual(all.slice(5).map((e) => e.event))
  })

  it("feedback on the finished run is accepted; a bad one is a 422", async () => {
    const ok = await service.request("POST", `${basePath(service)}/${rid}/feedback`, { body: { rating: 4, thumbs: "up", feedback_text: "useful", labels: ["accurate"] } })
    expect(ok.status, ok.text).toBe(200)
    expect(ok.json.id).toBe(rid)
    for (const body of [{ rating: 6 }, { thumbs: "sideways" }, { rating: 3, extra: 1 }, { feedback_text: "x".repeat(2001) }]) {
      const bad = await service.request("POST", `${basePath(service)}/${rid}/feedback`, { body })
      expect(bad.status, JSON.stringify(body)).toBe(422)
    }
    const unknown = await service.request("POST", `${basePath(service)}/run_nothing/feedback`, { body: { rating: 3 } })
    expect(unknown.status).toBe(404)
  })
})

/** A one-section research that needs no approval, on pages of two sites. */
const quickRun = (tag: string) => {
  table = { ...table, [`${tag}-q`]: [fx.web.url(H1, `/doc/${tag}-a`), fx.web.url(H2, `/doc/${tag}-b`)] }
  fx.model.setScript(researchScript({ brief: { title: `Brief ${tag}`, objective: `Objective ${tag}.`, key_questions: ["Q?"] }, sections: [{ title: `Section ${tag}`, queries: [`${tag}-q`] }] }))
}

describe("other accepted outline answers", () => {
  for (const [name, answer] of [["\"approve\"", "approve"], ["{approved: true}", { approved: true }], ["{action: approve}", { action: "approve" }]] as const) {
    it(`${name} approves the outline as planned`, async () => {
      const tag = `ok${name.replace(/\W/g, "")}`
      quickRun(tag)
      const { run_id } = await createRun(service, { topic: `Approve with ${name}`, depth: "light" })
      const gated = await waitForGate(service, run_id)
      expect(gated.status).toBe("awaiting_input")
      const response = await service.request("POST", `${basePath(service)}/${run_id}/intervene`, { body: { request_id: gated.pending_request_id, response: answer } })
      expect(response.status, response.text).toBe(200)
      const done = await waitForTerminal(service, run_id)
      expect(done.status, JSON.stringify(done.error)).toBe("done")
      expect(done.outline).toEqual(gated.outline)
      expect(done.result.final_md).toContain(`## Section ${tag}`)
    })
  }
})

describe("conventions", () => {
  it("Convention B: 202, status succeeded with terminal_reason done (events, 409s and callback too), no outline gate when not asked", async () => {
    quickRun("conv-b")
    const from = fx.model.requests.length
    const receiver = await startWebhookReceiver()
    onTestFinished(() => receiver.close())
    const created = await createRun(service, { topic: "Convention B topic", depth: "light", require_outline_approval: false, callback_url: `${receiver.url}/b` }, "B")
    expect(created.run_id).toMatch(/^run_/)
    expect(created.session_id).toBeNull()
    expect(created.require_outline_approval).toBe(false)
    const run = await waitForTerminal(service, created.run_id, "B")
    expect(run.status, JSON.stringify(run.error)).toBe("succeeded")
    expect(run.terminal_reason).toBe("done")
    expect(run.result.citations_count).toBe(2)
    expect(run.result.partial_sections).toEqual([])
    // The same run through Convention A.
    expect((await getRun(service, created.run_id, "A")).status).toBe("done")
    const { events } = await allEvents(service, created.run_id, "B")
    expect(events.filter((e) => e.event === "run.phase_changed").map((e) => dataOf(e).phase)).toEqual(["brief", "plan", "gather", "crosscheck", "synthesize"])
    // The stream under /api/v1 names the stored `done` succeeded.
    expect(events.filter((e) => dataOf(e)?.status === "done")).toEqual([])
    expect(dataOf(events.find((e) => e.event === "run.completed")!)).toMatchObject({ status: "succeeded", terminal_reason: "done" })
    expect(events.some((e) => e.event === "run.input_request")).toBe(false)
    expect(callsSince(from).map((c) => c.kind)).toEqual(["brief", "outline", "claims", "write"])
    const artifacts = await service.request("GET", `${basePath(service, "B")}/${created.run_id}/artifacts`)
    expect(artifacts.json.items).toHaveLength(3)
    expect(artifacts.json.next_cursor).toBeNull()
    // Paged: newest first, two then one, the same three.
    const first = await service.request("GET", `${basePath(service, "B")}/${created.run_id}/artifacts?limit=2`)
    expect(first.json.items).toHaveLength(2)
    const rest = await service.request("GET", `${basePath(service, "B")}/${created.run_id}/artifacts?limit=2&cursor=${first.json.next_cursor}`)
    expect(rest.json).toMatchObject({ next_cursor: null })
    expect([...first.json.items, ...rest.json.items].map((a: any) => a.id)).toEqual(artifacts.json.items.map((a: any) => a.id))
    expect(artifacts.json.items.map((a: any) => a.id)).toEqual(artifacts.json.items.map((a: any) => a.id).sort().reverse())
    const final = await service.request("GET", `${basePath(service, "B")}/${created.run_id}/artifacts/${run.result.final_artifact_id}`)
    expect(final.text).toBe(run.result.final_md)
    // Intervening on a run that is not waiting for input is a conflict.
    const intervene = await service.request("POST", `${basePath(service, "B")}/${created.run_id}/intervene`, { body: { request_id: "ir_x", response: "approve" } })
    expect(intervene.status).toBe(409)
    expect(intervene.json.extra.status).toBe("succeeded")
    // The callback of a run created through /api/v1 is the flat view.
    await eventually("the callback delivered", () => receiver.received[0], { timeoutMs: 10_000 })
    const secret = (await service.request("GET", `/v1/projects/${service.projectId}/webhook_secret`)).json.secret
    expect(verifiedDelivery(secret, receiver.received[0]!).data).toMatchObject({ run_id: created.run_id, status: "succeeded", terminal_reason: "done" })
  })

  it("standalone /v1/deep_research: the project comes from the key", async () => {
    quickRun("standalone")
    const created = await createRun(service, { topic: "Standalone topic", depth: "light", require_outline_approval: false }, "standalone")
    expect(created.project_id).toBe(service.projectId)
    const run = await waitForTerminal(service, created.run_id, "standalone")
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect((await getRun(service, created.run_id, "A")).result.final_md).toBe(run.result.final_md)
    const listed = await service.request("GET", `${basePath(service, "standalone")}?limit=100`)
    expect(listed.json.items.map((r: any) => r.id)).toContain(created.run_id)
    const artifacts = await service.request("GET", `${basePath(service, "standalone")}/${created.run_id}/artifacts`)
    expect(artifacts.json.items.map((a: any) => a.name).sort()).toEqual(["citations.json", "confidence.json", "final.md"])
    const { events, ended } = await allEvents(service, created.run_id, "standalone")
    expect(ended).toBe(true)
    expect(events[events.length - 1]!.event).toBe("run.completed")
    expect((await service.request("GET", `${basePath(service, "standalone")}/${created.run_id}`, { key: null })).status).toBe(401)
  })

  it("lists runs newest first, with limit, cursor and status", async () => {
    const all = await service.request("GET", `${basePath(service)}?limit=100`)
    expect(all.status).toBe(200)
    const ids = all.json.items.map((r: any) => r.id)
    expect(ids.length).toBeGreaterThanOrEqual(6)
    expect(all.json.items.every((r: any) => r.kind === "deep_research")).toBe(true)
    expect([...ids].sort().reverse()).toEqual(ids)
    const first = await service.request("GET", `${basePath(service)}?limit=2`)
    expect(first.json.items.map((r: any) => r.id)).toEqual(ids.slice(0, 2))
    expect(first.json.next_cursor).toEqual(expect.any(String))
    const second = await service.request("GET", `${basePath(service)}?limit=2&cursor=${encodeURIComponent(first.json.next_cursor)}`)
    expect(second.json.items.map((r: any) => r.id)).toEqual(ids.slice(2, 4))
    const done = await service.request("GET", `${basePath(service)}?status=done&limit=100`)
    expect(done.json.items.length).toBeGreaterThan(0)
    expect(done.json.items.every((r: any) => r.status === "done")).toBe(true)
    const flat = await service.request("GET", `${basePath(service, "B")}?limit=100`)
    expect(flat.json.items.every((r: any) => r.status !== "done")).toBe(true)
    expect(flat.json.items.some((r: any) => r.status === "succeeded")).toBe(true)
    const badLimit = await service.request("GET", `${basePath(service)}?limit=101`)
    expect(badLimit.status).toBe(422)
    // Other kinds of runs are not listed here, nor research runs elsewhere.
    const searches = await service.request("GET", `/v1/projects/${service.projectId}/web_search/runs/${ids[0]}`)
    expect(searches.status).toBe(404)
  })
})

describe("concurrent runs", () => {
  it("two runs at once keep their own sources, numbering and outline; a page may serve both", async () => {
    // Both runs find the same two pages: the one-section-per-page rule holds within a run only.
    table = { ...table, "para-q": [fx.web.url(H1, "/doc/para-a"), fx.web.url(H2, "/doc/para-b")] }
    fx.model.setScript(researchScript({
      sections: (prompt) => {
        const run = prompt.includes("Parallel one") ? "one" : "two"
        return [{ title: `Parallel ${run} section`, queries: ["para-q"] }]
      }
    }))
    const from = fx.model.requests.length
    const [one, two] = await Promise.all([
      createRun(service, { topic: "Parallel one", depth: "light", require_outline_approval: false, target_audience: "policy makers" }),
      createRun(service, { topic: "Parallel two", depth: "light", require_outline_approval: false })
    ])
    const [runOne, runTwo] = await Promise.all([waitForTerminal(service, one.run_id), waitForTerminal(service, two.run_id)])
    for (const [run, name] of [[runOne, "one"], [runTwo, "two"]] as const) {
      expect(run.status, JSON.stringify(run.error)).toBe("done")
      expect(run.outline.sections.map((s: any) => s.title)).toEqual([`Parallel ${name} section`])
      expect(run.result.citations_count).toBe(2)
      expect(sourcesListOf(run.result.final_md).map((l) => pageKey(l.url)).sort()).toEqual([pageKey(fx.web.url(H1, "/doc/para-a")), pageKey(fx.web.url(H2, "/doc/para-b"))])
      expect(run.result.partial_sections).toEqual([])
    }
    const claims = callsSince(from).filter((c) => c.kind === "claims") as Array<Extract<ResearchCall, { kind: "claims" }>>
    expect(claims).toHaveLength(2)
    // Source ids count from S1 in each run.
    for (const call of claims) expect(call.sources.map((s) => s.id).sort()).toEqual(["S1", "S2"])
    // The audience of a run reaches its model calls, and only its own.
    const briefs = callsSince(from).filter((c) => c.kind === "brief")
    expect(briefs.filter((c) => c.prompt.includes("policy makers"))).toHaveLength(1)
    expect(briefs.find((c) => c.prompt.includes("policy makers"))!.prompt).toContain("Parallel one")
  })
})

describe("domain lists", () => {
  it("domain_blacklist: no page of a blacklisted site is read or cited", async () => {
    table = { ...table, "dom-q": [fx.web.url(H3, "/doc/dom-c"), fx.web.url(H1, "/doc/dom-a"), fx.web.url(H2, "/doc/dom-b")] }
    fx.model.setScript(researchScript({ sections: [{ title: "Blacklisted", queries: ["dom-q"] }] }))
    const { run_id } = await createRun(service, { topic: "Blacklist", depth: "light", require_outline_approval: false, domain_blacklist: ["127.0.0.3"] })
    const run = await waitForTerminal(service, run_id)
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(fx.web.hits(fx.web.url(H3, "/doc/dom-c"))).toBe(0)
    const urls = sourcesListOf(run.result.final_md).map((l) => hostnameOf(l.url))
    expect(urls.sort()).toEqual(["127.0.0.1", "127.0.0.2"])
  })

  it("domain_whitelist: only pages of whitelisted sites are read", async () => {
    table = { ...table, "domw-q": [fx.web.url(H1, "/doc/domw-a"), fx.web.url(H2, "/doc/domw-b"), fx.web.url(H3, "/doc/domw-c")] }
    fx.model.setScript(researchScript({ sections: [{ title: "Whitelisted", queries: ["domw-q"] }] }))
    const { run_id } = await createRun(service, { topic: "Whitelist", depth: "light", require_outline_approval: false, domain_whitelist: ["127.0.0.2"] })
    const run = await waitForTerminal(service, run_id)
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(fx.web.hits(fx.web.url(H1, "/doc/domw-a")) + fx.web.hits(fx.web.url(H3, "/doc/domw-c"))).toBe(0)
    expect(sourcesListOf(run.result.final_md).map((l) => hostnameOf(l.url))).toEqual(["127.0.0.2"])
    expect(run.result.partial_sections).toEqual([
      expect.objectContaining({ section_id: "s1", reason: "insufficient_sources", coverage_ratio: 0.5 })
    ])
  })
})

describe("callbacks", () => {
  it("posts the terminal run view to callback_url, signed the Standard Webhooks way", async () => {
    const received: Array<{ headers: Record<string, string>; body: string }> = []
    const receiver = createServer((req, res) => {
      let body = ""
      req.on("data", (c) => (body += c))
      req.on("end", () => {
        received.push({ headers: req.headers as Record<string, string>, body })
        res.writeHead(204).end()
      })
    })
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r))
    try {
      quickRun("callback")
      const callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
      const { run_id } = await createRun(service, { topic: "Callback", depth: "light", require_outline_approval: false, callback_url: callbackUrl })
      const run = await waitForTerminal(service, run_id)
      expect(run.status).toBe("done")
      expect(run.callback_url).toBe(callbackUrl)
      await eventually("the callback delivered", () => received.length > 0 || undefined, { timeoutMs: 10_000 })
      expect(received).toHaveLength(1)
      const secret = (await service.request("GET", `/v1/projects/${service.projectId}/webhook_secret`)).json.secret
      const payload = new Webhook(secret).verify(received[0]!.body, received[0]!.headers) as any
      // A deep_research.run.completed body of the document's webhooks section, with its headers.
      expect(checkWebhookDelivery(received[0]!.headers, received[0]!.body).problems).toEqual([])
      expect(payload.data).toMatchObject({ id: run_id, kind: "deep_research", status: "done" })
      expect(payload.data.result.final_artifact_id).toBe(run.result.final_artifact_id)
      expect(() => new Webhook(secret).verify(received[0]!.body.replace("done", "failed"), received[0]!.headers)).toThrow()

      // A run canceled at the gate is called back once, canceled.
      received.length = 0
      quickRun("callback-cancel")
      const gatedRun = await createRun(service, { topic: "Callback on cancel", depth: "light", callback_url: callbackUrl })
      await waitForGate(service, gatedRun.run_id)
      const canceled = await service.request("POST", `${basePath(service)}/${gatedRun.run_id}/cancel`, { body: { reason: "no longer needed" } })
      expect(canceled.status).toBe(200)
      await eventually("the callback delivered", () => received.length > 0 || undefined, { timeoutMs: 10_000 })
      // Give a second (duplicate) delivery the time to arrive, if one were coming.
      await new Promise((r) => setTimeout(r, 1000))
      expect(received).toHaveLength(1)
      const canceledPayload = new Webhook(secret).verify(received[0]!.body, received[0]!.headers) as any
      expect(checkWebhookDelivery(received[0]!.headers, received[0]!.body).problems).toEqual([])
      expect(canceledPayload.data).toMatchObject({ id: gatedRun.run_id, kind: "deep_research", status: "canceled", result: null })
    } finally {
      receiver.close()
    }
  })
})
