/**
 * DeepResearch across a crash: the service is killed (SIGKILL) in the middle of the gather phase
 * (a page of the second section is held unanswered) and started again on the same data dir. The
 * run resumes from its last checkpoint: what was done is not redone (no second brief or outline,
 * the first section's pages are not read again), its events continue with contiguous ids, and it
 * finishes with a consistent report. A run waiting at the outline gate survives a restart too.
 */
import { afterAll, beforeAll, expect, it } from "vitest"
import { classify, type ResearchCall, researchScript } from "../fixtures/model/research-model.ts"
import { newDataDir, type Service, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import { allEvents, basePath, createRun, dataOf, getRun, markersOf, pageKey, researchEnv, sourcesListOf, waitForGate, waitForTerminal, type ResearchFixtures, startResearchFixtures } from "./helpers.ts"

let fx: ResearchFixtures
let table: Record<string, ReadonlyArray<string>> = {}
let service: Service | undefined

const H1 = "127.0.0.1" as const
const H2 = "127.0.0.2" as const

beforeAll(async () => {
  fx = await startResearchFixtures(() => table)
})
afterAll(async () => {
  await stopAndClean(service)
  await fx.close()
})

it("a run killed in the middle of gather resumes after the restart from its last checkpoint and finishes", async () => {
  table = {
    "rs-1": [fx.web.url(H1, "/doc/rs-1a"), fx.web.url(H2, "/doc/rs-1b")],
    "rs-2": [fx.web.url(H1, "/doc/rs-2a"), fx.web.url(H2, "/doc/rs-2b")],
    "rs-3": [fx.web.url(H1, "/doc/rs-3a"), fx.web.url(H2, "/doc/rs-3b")]
  }
  fx.model.setScript(researchScript({
    sections: [
      { title: "Restart first", queries: ["rs-1"] },
      { title: "Restart second", queries: ["rs-2"] },
      { title: "Restart third", queries: ["rs-3"] }
    ]
  }))
  const from = fx.model.requests.length
  const hold = fx.web.hold(fx.web.url(H1, "/doc/rs-2a"))

  const dataDir = newDataDir()
  const first = await startService({ dataDir, env: researchEnv(fx.model, fx.engines) })
  const { run_id } = await createRun(first, { topic: "Survives a crash", depth: "light", require_outline_approval: false })
  // The second section's first page is requested and held; the first section is gathered by then
  // (its last progress event says so).
  await hold.reached
  await readSse(`${first.url}${basePath(first)}/${run_id}/events`, { authorization: `Bearer ${first.apiKey}` }, {
    timeoutMs: 20_000,
    stopAfter: (events) => events.some((e) => e.event === "run.research.progress" && dataOf(e).phase === "gather" && dataOf(e).section_id === "s1")
  })
  const before = await getRun(first, run_id)
  expect(before.status).toBe("running")
  expect(before.phase).toBe("gather")
  await first.kill()
  hold.release()

  service = await startService({ dataDir, env: researchEnv(fx.model, fx.engines), credentials: { projectId: first.projectId, apiKey: first.apiKey } })
  const run = await waitForTerminal(service, run_id)
  expect(run.status, JSON.stringify(run.error)).toBe("done")

  // Done work is not redone: one brief, one outline; the first section's pages read once.
  const calls = fx.model.requests.slice(from).map(classify)
  expect(calls.filter((c) => c.kind === "brief")).toHaveLength(1)
  expect(calls.filter((c) => c.kind === "outline")).toHaveLength(1)
  expect(fx.web.hits(fx.web.url(H1, "/doc/rs-1a"))).toBe(1)
  expect(fx.web.hits(fx.web.url(H2, "/doc/rs-1b"))).toBe(1)
  expect(fx.web.hits(fx.web.url(H1, "/doc/rs-2a"))).toBe(2)

  // One crosscheck and one write per section, with source ids unique across the run.
  const claims = calls.filter((c) => c.kind === "claims") as Array<Extract<ResearchCall, { kind: "claims" }>>
  expect(claims.map((c) => c.section).sort()).toEqual(["Restart first", "Restart second", "Restart third"])
  expect(calls.filter((c) => c.kind === "write")).toHaveLength(3)
  const sources = claims.flatMap((c) => c.sources)
  expect(sources).toHaveLength(6)
  expect(new Set(sources.map((s) => s.id)).size).toBe(6)
  expect(new Set(sources.map((s) => pageKey(s.url))).size).toBe(6)

  // The report is whole and its citations consistent.
  const md: string = run.result.final_md
  const listed = sourcesListOf(md)
  expect(listed).toHaveLength(6)
  expect(run.result.citations_count).toBe(6)
  expect(run.result.partial_sections).toEqual([])
  const known = new Set(listed.map((l) => l.n))
  for (const n of markersOf(md.slice(0, md.indexOf("## Sources")))) expect(known.has(n)).toBe(true)

  // Events: contiguous ids, no duplicate, the resume marked, each phase entered once.
  const { events, ended } = await allEvents(service, run_id)
  expect(ended).toBe(true)
  expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1))
  expect(events.filter((e) => e.event === "run.resumed")).toHaveLength(1)
  const resumedAt = events.findIndex((e) => e.event === "run.resumed")
  expect(resumedAt).toBeGreaterThan(events.findIndex((e) => e.event === "run.phase_changed" && dataOf(e).phase === "gather"))
  expect(events.filter((e) => e.event === "run.phase_changed").map((e) => dataOf(e).phase)).toEqual(["brief", "plan", "gather", "crosscheck", "synthesize"])
  expect(events.filter((e) => e.event === "run.completed")).toHaveLength(1)
  // The first section was not gathered again after the restart.
  const s1After = events.slice(resumedAt).filter((e) => e.event === "run.research.progress" && dataOf(e).phase === "gather" && dataOf(e).section_id === "s1")
  expect(s1After).toEqual([])
  await stopAndClean(service)
  service = undefined
})

it("a run waiting at the outline gate still waits after a restart, and an approval then finishes it", async () => {
  table = { "gate-1": [fx.web.url(H1, "/doc/gate-1a"), fx.web.url(H2, "/doc/gate-1b")] }
  fx.model.setScript(researchScript({ sections: [{ title: "Gate section", queries: ["gate-1"] }] }))
  const from = fx.model.requests.length
  const dataDir = newDataDir()
  const first = await startService({ dataDir, env: researchEnv(fx.model, fx.engines) })
  const { run_id } = await createRun(first, { topic: "Waits across a restart", depth: "light" })
  const gated = await waitForGate(first, run_id)
  expect(gated.status).toBe("awaiting_input")
  await first.kill()

  service = await startService({ dataDir, env: researchEnv(fx.model, fx.engines), credentials: { projectId: first.projectId, apiKey: first.apiKey } })
  const after = await getRun(service, run_id)
  expect(after.status).toBe("awaiting_input")
  expect(after.pending_request_id).toBe(gated.pending_request_id)
  expect(after.outline).toEqual(gated.outline)
  const approved = await service.request("POST", `${basePath(service)}/${run_id}/intervene`, { body: { request_id: gated.pending_request_id, response: "approve" } })
  expect(approved.status, approved.text).toBe(200)
  const run = await waitForTerminal(service, run_id)
  expect(run.status, JSON.stringify(run.error)).toBe("done")
  const calls = fx.model.requests.slice(from).map(classify)
  expect(calls.map((c) => c.kind)).toEqual(["brief", "outline", "claims", "write"])
  const { events } = await allEvents(service, run_id)
  expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1))
  expect(events.filter((e) => e.event === "run.input_request")).toHaveLength(1)
})
