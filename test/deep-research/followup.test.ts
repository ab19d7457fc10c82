/**
 * DeepResearch send_followup and refine through HTTP: the real service, the scripted research
 * model, SearXNG faked, the research web on loopback.
 *
 * A follow-up is a new run on the question, with the parent's settings, whose brief, plan and
 * writing get the parent's report as context; a refinement redoes the parent's report with
 * instructions, reusing its outline, sources and claims (nothing searched again) when the outline
 * was final, planning again otherwise. Both carry parent_run_id; 409 / 422 / 404 as documented.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { classify, type ResearchCall, researchScript } from "../fixtures/model/research-model.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import {
  basePath,
  bareQuery,
  type Convention,
  createRun,
  getRun,
  researchEnv,
  type ResearchFixtures,
  sectionsOf,
  sourcesListOf,
  startResearchFixtures,
  waitForGate,
  waitForTerminal
} from "./helpers.ts"

let fx: ResearchFixtures
let service: Service
let table: Record<string, ReadonlyArray<string>> = {}

const H1 = "127.0.0.1" as const
const H2 = "127.0.0.2" as const
const H3 = "127.0.0.3" as const

const QUESTION = "How are widgets maintained?"

beforeAll(async () => {
  fx = await startResearchFixtures(() => table)
  service = await startService({ env: researchEnv(fx.model, fx.engines) })
  table = {
    "fu-cost": [fx.web.url(H1, "/doc/fu-cost-a"), fx.web.url(H2, "/doc/fu-cost-b")],
    "fu-history": [fx.web.url(H1, "/doc/fu-hist-a"), fx.web.url(H3, "/doc/fu-hist-b")],
    "fu-maint": [fx.web.url(H2, "/doc/fu-maint-a"), fx.web.url(H3, "/doc/fu-maint-b")],
    "fu-replan": [fx.web.url(H3, "/doc/fu-replan-a")]
  }
  // The follow-up's outline is about maintenance; a re-plan with instructions gets its own section.
  fx.model.setScript(researchScript({
    sections: (prompt) =>
      prompt.includes(QUESTION)
        ? [{ title: "Maintenance", queries: ["fu-maint"] }]
        : prompt.includes("only the replanned part")
        ? [{ title: "Replanned", queries: ["fu-replan"] }]
        : [{ title: "Costs", queries: ["fu-cost"] }, { title: "History", queries: ["fu-history"] }]
  }))
})
afterAll(async () => {
  await stopAndClean(service)
  await fx.close()
})

const callsSince = (from: number): Array<ResearchCall> => fx.model.requests.slice(from).map(classify)
const searchedSince = (from: number) => fx.engines.requests.slice(from).map((r) => bareQuery(r.params["q"] ?? ""))
const post = (convention: Convention, rid: string, operation: string, body: unknown, headers: Record<string, string> = {}) =>
  service.request("POST", `${basePath(service, convention)}/${rid}/${operation}`, { body, headers })

const settings = {
  topic: "Widgets",
  depth: "light",
  target_audience: "buyers of widgets",
  require_outline_approval: false,
  max_cost_usd: "5",
  max_duration_minutes: 30,
  domain_blacklist: ["blocked.example"]
}

let parent: any

describe("a finished parent", () => {
  beforeAll(async () => {
    const created = await createRun(service, settings)
    parent = await waitForTerminal(service, created.run_id)
    expect(parent.status).toBe("done")
    expect(parent.parent_run_id).toBeNull()
    expect(parent.instructions).toBeNull()
    expect([...sectionsOf(parent.result.final_md).keys()]).toEqual(["Costs", "History", "Sources"])
  })

  it("send_followup: a new run on the question, built on the parent's report, with the parent's settings", async () => {
    const modelFrom = fx.model.requests.length
    const searchFrom = fx.engines.requests.length
    const response = await post("A", parent.run_id, "followup", { text: QUESTION })
    expect(response.status, response.text).toBe(202)
    const created = response.json
    expect(created.run_id).not.toBe(parent.run_id)
    expect(created).toMatchObject({
      kind: "deep_research",
      parent_run_id: parent.run_id,
      instructions: null,
      topic: QUESTION,
      depth: "light",
      require_outline_approval: false,
      max_cost_usd: "5.00"
    })

    const done = await waitForTerminal(service, created.run_id)
    expect(done.status).toBe("done")
    expect(done.parent_run_id).toBe(parent.run_id)
    // The new report answers the question from new sources; it does not repeat the parent's sections.
    expect([...sectionsOf(done.result.final_md).keys()]).toEqual(["Maintenance", "Sources"])
    expect(sourcesListOf(done.result.final_md).map((s) => s.url).sort()).toEqual(table["fu-maint"]!.slice().sort())
    expect(searchedSince(searchFrom)).toEqual(["fu-maint"])

    // The brief, the planner and the writer were given the parent's report as context.
    const calls = callsSince(modelFrom)
    expect(calls.map((c) => c.kind)).toEqual(["brief", "outline", "claims", "write"])
    const parentSentence = "Costs: a fact every source states"
    expect(parent.result.final_md).toContain(parentSentence)
    for (const call of calls.filter((c) => c.kind === "brief" || c.kind === "outline")) expect(call.prompt, call.kind).toContain(QUESTION)
    for (const call of calls.filter((c) => c.kind !== "claims")) {
      expect(call.prompt, call.kind).toContain("earlier report")
      expect(call.prompt, call.kind).toContain(parentSentence)
    }
    expect(calls.find((c) => c.kind === "outline")!.prompt).toContain("do not repeat its sections")
  })

  it("refine: the same topic rewritten by the text from the parent's sources, nothing searched again", async () => {
    const modelFrom = fx.model.requests.length
    const searchFrom = fx.engines.requests.length
    const text = "more on costs, shorter"
    const response = await post("A", parent.run_id, "refine", { text })
    expect(response.status, response.text).toBe(202)
    const created = response.json
    expect(created).toMatchObject({
      parent_run_id: parent.run_id,
      instructions: text,
      topic: "Widgets",
      depth: "light",
      require_outline_approval: false,
      max_cost_usd: "5.00"
    })
    // The parent's outline is kept as it was.
    expect(created.outline).toEqual(parent.outline)

    const done = await waitForTerminal(service, created.run_id)
    expect(done.status).toBe("done")
    expect(done.instructions).toBe(text)
    expect(searchedSince(searchFrom)).toEqual([])
    const calls = callsSince(modelFrom)
    // No brief, plan or cross-check again: every section is written anew, with the instructions.
    expect(calls.map((c) => c.kind)).toEqual(["write", "write"])
    for (const call of calls) expect(call.prompt).toContain(text)
    expect(sourcesListOf(done.result.final_md)).toEqual(sourcesListOf(parent.result.final_md))
    expect([...sectionsOf(done.result.final_md).keys()]).toEqual(["Costs", "History", "Sources"])
    expect(done.result.citations_count).toBe(parent.result.citations_count)
    expect(done.result.confidence_summary).toEqual(parent.result.confidence_summary)
  })

  it("works under Convention B and the standalone path; the same Idempotency-Key gives the same run", async () => {
    const headers = { "idempotency-key": crypto.randomUUID() }
    const first = await post("B", parent.run_id, "refine", { text: "flat refine" }, headers)
    const second = await post("B", parent.run_id, "refine", { text: "flat refine" }, headers)
    expect(first.status, first.text).toBe(202)
    expect(second.status).toBe(202)
    expect(second.json.run_id).toBe(first.json.run_id)
    expect(first.json.parent_run_id).toBe(parent.run_id)
    expect((await waitForTerminal(service, first.json.run_id, "B")).status).toBe("succeeded")

    const standalone = await post("standalone", parent.run_id, "followup", { text: QUESTION })
    expect(standalone.status, standalone.text).toBe(202)
    expect(standalone.json.parent_run_id).toBe(parent.run_id)
    const done = await waitForTerminal(service, standalone.json.run_id, "standalone")
    expect(done.status).toBe("done")
    expect((await getRun(service, standalone.json.run_id)).parent_run_id).toBe(parent.run_id)
  })

  it("refuses a missing, empty or too long text and unknown fields (422), an unknown run (404)", async () => {
    for (const operation of ["followup", "refine"]) {
      for (const body of [{}, { text: "" }, { text: "x".repeat(2001) }, { text: "ok", depth: "deep" }, { text: 7 }]) {
        const response = await post("A", parent.run_id, operation, body)
        expect(response.status, `${operation} ${JSON.stringify(body)} -> ${response.text}`).toBe(422)
        expect(response.json.code).toBe("validation_error")
      }
      const missing = await post("A", "run_nothing", operation, { text: "x" })
      expect(missing.status).toBe(404)
      expect(missing.json.code).toBe("run_not_found")
    }
  })
})

describe("a parent that has not finished", () => {
  it("409 for both while it waits at the gate; once canceled, refine plans again with the text", async () => {
    const created = await createRun(service, { ...settings, topic: "Gated widgets", require_outline_approval: true })
    const gated = await waitForGate(service, created.run_id)
    expect(gated.status).toBe("awaiting_input")

    for (const operation of ["followup", "refine"]) {
      const response = await post("A", gated.run_id, operation, { text: "too early" })
      expect(response.status, `${operation} -> ${response.text}`).toBe(409)
      expect(response.json.code).toBe("conflict")
      expect(response.json.extra).toEqual({ run_id: gated.run_id, status: "awaiting_input" })
    }

    const canceled = await post("A", gated.run_id, "cancel", { reason: "rethink" })
    expect(canceled.status).toBe(200)
    // A follow-up needs a report: a canceled run has none.
    const followup = await post("A", gated.run_id, "followup", { text: QUESTION })
    expect(followup.status).toBe(409)
    expect(followup.json.extra.status).toBe("canceled")

    // Its outline was never approved: the refined run plans again, with the text, and asks again.
    const modelFrom = fx.model.requests.length
    const refined = await post("A", gated.run_id, "refine", { text: "only the replanned part" })
    expect(refined.status, refined.text).toBe(202)
    expect(refined.json).toMatchObject({ parent_run_id: gated.run_id, instructions: "only the replanned part", require_outline_approval: true })
    const again = await waitForGate(service, refined.json.run_id)
    expect(again.status).toBe("awaiting_input")
    expect(again.outline.sections.map((s: any) => s.title)).toEqual(["Replanned"])
    const calls = callsSince(modelFrom)
    // The parent's brief is reused; the planner got the instructions.
    expect(calls.map((c) => c.kind)).toEqual(["outline"])
    expect(calls[0]!.prompt).toContain("only the replanned part")
    expect((await post("A", refined.json.run_id, "cancel", {})).status).toBe(200)
  })
})

describe("contract", () => {
  it("the OpenAPI document describes followup and refine under the three prefixes", async () => {
    const spec = (await service.request("GET", "/openapi.json", { key: null })).json
    for (const prefix of ["/v1/projects/{pid}/deep_research/runs/{rid}", "/api/v1/projects/{pid}/deep_research/runs/{rid}", "/v1/deep_research/{rid}"]) {
      for (const operation of ["followup", "refine"]) {
        const op = spec.paths[`${prefix}/${operation}`]?.post
        expect(op, `${prefix}/${operation}`).toBeDefined()
        expect(op.description.length).toBeGreaterThan(40)
        for (const code of ["202", "404", "409", "422"]) expect(Object.keys(op.responses), `${prefix}/${operation} ${code}`).toContain(code)
      }
    }
  })
})
