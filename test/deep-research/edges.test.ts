/**
 * DeepResearch edge cases: an approved outline shows its edits at once, Convention B filters by
 * its own status names, and a page reached through a redirect counts as the page it lands on
 * (used by one section only, and held to the domain lists). Same setup as flow.test.ts.
 */
import { afterAll, beforeAll, expect, it } from "vitest"
import { classify, type ResearchCall, researchScript } from "../fixtures/model/research-model.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { basePath, createRun, getRun, hostnameOf, pageKey, researchEnv, waitForGate, waitForTerminal, type ResearchFixtures, startResearchFixtures } from "./helpers.ts"

let fx: ResearchFixtures
let service: Service
let table: Record<string, ReadonlyArray<string>> = {}

const H1 = "127.0.0.1" as const
const H2 = "127.0.0.2" as const
const H3 = "127.0.0.3" as const

beforeAll(async () => {
  fx = await startResearchFixtures(() => table)
  service = await startService({ env: researchEnv(fx.model, fx.engines) })
})
afterAll(async () => {
  await stopAndClean(service)
  await fx.close()
})

const claimsSince = (from: number) =>
  fx.model.requests.slice(from).map(classify).filter((c) => c.kind === "claims") as Array<Extract<ResearchCall, { kind: "claims" }>>

it("after approve_with_edits, the run's outline (intervene answer and GET) shows the edited outline", async () => {
  table = { "ed-1": [fx.web.url(H1, "/doc/ed-1a")], "ed-2": [fx.web.url(H1, "/doc/ed-2a")] }
  // The model is held after the approval, so the run cannot have moved on by itself.
  let release: () => void = () => {}
  const held = new Promise<void>((resolve) => (release = resolve))
  fx.model.setScript(researchScript({
    sections: [{ title: "Edit one", queries: ["ed-1"] }, { title: "Edit two", queries: ["ed-2"] }],
    before: async (call) => {
      if (call.kind === "claims") await held
    }
  }))
  try {
    const { run_id } = await createRun(service, { topic: "Edited outline", depth: "light" })
    const gated = await waitForGate(service, run_id)
    const response = await service.request("POST", `${basePath(service)}/${run_id}/intervene`, {
      body: { request_id: gated.pending_request_id, response: { action: "approve_with_edits", edits: [{ op: "rename_section", section_id: "s1", title: "Renamed one" }, { op: "remove_section", section_id: "s2" }] } }
    })
    expect(response.status, response.text).toBe(200)
    expect(response.json.outline.sections.map((s: any) => s.title)).toEqual(["Renamed one"])
    const polled = await getRun(service, run_id)
    expect(polled.outline.sections.map((s: any) => s.title)).toEqual(["Renamed one"])
  } finally {
    release()
  }
})

it("Convention B lists by its own status values (status=succeeded finds the succeeded runs)", async () => {
  table = { "flat-1": [fx.web.url(H1, "/doc/flat-1a"), fx.web.url(H2, "/doc/flat-1b")] }
  fx.model.setScript(researchScript({ sections: [{ title: "Flat", queries: ["flat-1"] }] }))
  const { run_id } = await createRun(service, { topic: "Flat list", depth: "light", require_outline_approval: false }, "B")
  const run = await waitForTerminal(service, run_id, "B")
  expect(run.status).toBe("succeeded")
  const listed = await service.request("GET", `${basePath(service, "B")}?status=succeeded&limit=100`)
  expect(listed.status).toBe(200)
  expect(listed.json.items.map((r: any) => r.id)).toContain(run_id)
})

it("a page reached through a redirect is the page it lands on: not used by a second section, nor twice in one", async () => {
  table = {
    "rd-1": [fx.web.url(H1, "/doc/rd-a"), fx.web.url(H2, "/doc/rd-b")],
    // Its first hit redirects to rd-a, which the first section already uses.
    "rd-2": [`${fx.web.url(H3, "/go/rd-a")}?to=${H1}`, fx.web.url(H3, "/doc/rd-c"), fx.web.url(H2, "/doc/rd-d")],
    // Its second hit redirects to its first.
    "rd-3": [fx.web.url(H1, "/doc/rd-e"), `${fx.web.url(H2, "/go/rd-e")}?to=${H1}`, fx.web.url(H2, "/doc/rd-f")]
  }
  fx.model.setScript(researchScript({
    sections: [{ title: "Redirect one", queries: ["rd-1"] }, { title: "Redirect two", queries: ["rd-2"] }, { title: "Redirect three", queries: ["rd-3"] }]
  }))
  const from = fx.model.requests.length
  const { run_id } = await createRun(service, { topic: "Redirects", depth: "light", require_outline_approval: false })
  const run = await waitForTerminal(service, run_id)
  expect(run.status, JSON.stringify(run.error)).toBe("done")
  const claims = claimsSince(from)
  const keys = claims.flatMap((c) => c.sources.map((s) => pageKey(s.url)))
  expect(keys.filter((k) => k.endsWith("/doc/rd-a")), JSON.stringify(claims.map((c) => [c.section, c.sources]))).toHaveLength(1)
  expect(keys.filter((k) => k.endsWith("/doc/rd-e")), JSON.stringify(claims.map((c) => [c.section, c.sources]))).toHaveLength(1)
  expect(new Set(keys).size).toBe(keys.length)
})

it("domain_whitelist holds for the page actually read (a redirect off the list is not a source)", async () => {
  table = { "wl-1": [`${fx.web.url(H2, "/go/wl-x")}?to=${H3}`, fx.web.url(H2, "/doc/wl-b")] }
  fx.model.setScript(researchScript({ sections: [{ title: "Whitelist redirect", queries: ["wl-1"] }] }))
  const from = fx.model.requests.length
  const { run_id } = await createRun(service, { topic: "Whitelist redirect", depth: "light", require_outline_approval: false, domain_whitelist: [H2] })
  const run = await waitForTerminal(service, run_id)
  expect(run.status, JSON.stringify(run.error)).toBe("done")
  const hosts = claimsSince(from).flatMap((c) => c.sources.map((s) => hostnameOf(s.url)))
  expect(hosts).toEqual([H2])
})
