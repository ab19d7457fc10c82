/**
 * WebSearch through HTTP against the real service, with fake engines on loopback that speak each
 * engine's real API: both conventions, the wait rule, progress events, failing engines, 422s.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { FAKE_KEYS, type FakeEngines, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import { TERMINAL, waitForRunStatus } from "../support/runs.ts"

let engines: FakeEngines
let service: Service

const hits = (engine: string, query: string) => [
  { title: `Shared result for ${query}`, url: `https://shared.example/${encodeURIComponent(query)}?utm_source=${engine}`, snippet: `A page both engines know (${engine})` },
  { title: `${engine} only for ${query}`, url: `https://${engine}.example/${encodeURIComponent(query)}`, snippet: `Only ${engine} has this` }
]

beforeAll(async () => {
  engines = await startFakeEngines({ results: hits, answer: (engine) => engine === "searxng" ? "42" : undefined })
  service = await startService({
    env: {
      WA_SEARXNG_URL: engines.url,
      WA_BRAVE_API_KEY: FAKE_KEYS.brave,
      WA_BRAVE_BASE_URL: engines.url,
      WA_DUCKDUCKGO_BASE_URL: engines.url,
      WA_WEB_SEARCH_WAIT_SECONDS: "2",
      WA_ALLOW_PRIVATE_NETWORKS: "true"
    }
  })
})
afterAll(async () => {
  await stopAndClean(service)
  await engines.close()
})

const path = (convention: "A" | "B") => convention === "A"
  ? `/v1/projects/${service.projectId}/web_search/runs`
  : `/api/v1/projects/${service.projectId}/web_search/runs`

describe("wait", () => {
  it("blocks and answers 200 with de-duplicated, fused results (Convention A)", async () => {
    const response = await service.request("POST", path("A"), { body: { queries: ["alpha", "beta"], engines: ["searxng", "brave"] } })
    expect(response.status).toBe(200)
    expect(response.json.status).toBe("done")
    const results = response.json.results
    expect(results.total_unique_results).toBe(6) // shared x2 queries + 2 engines x 2 queries
    const shared = results.results.find((r: any) => r.canonical_url === "https://shared.example/alpha")
    expect(shared.dedup_count).toBe(2)
    // Agreement between engines lifts the shared pages to the top.
    expect(results.results.slice(0, 2).map((r: any) => r.canonical_url.startsWith("https://shared.example/")).every(Boolean)).toBe(true)
    expect(results.results.map((r: any) => r.final_rank)).toEqual(results.results.map((_: any, i: number) => i + 1))
    expect(results.engine_answer).toBe("42")
    expect(results.is_summarized).toBe(false)
  })

  it("Convention B shows succeeded", async () => {
    const response = await service.request("POST", path("B"), { body: { queries: ["gamma"], engines: ["searxng"] } })
    expect(response.status).toBe(200)
    expect(response.json.status).toBe("succeeded")
    expect(response.json.terminal_reason).toBe("done")
    const polled = await service.request("GET", `${path("B")}/${response.json.run_id}`)
    expect(polled.json.results.results.length).toBeGreaterThan(0)
  })

  it("wait false answers 202 at once; polling and events follow the run", async () => {
    const created = await service.request("POST", path("A"), { body: { queries: ["delta"], engines: ["searxng", "brave"], wait: false } })
    expect(created.status).toBe(202)
    expect(["pending", "running", "done"]).toContain(created.json.status)
    const { events } = await readSse(`${service.url}${path("A")}/${created.json.run_id}/events`, { authorization: `Bearer ${service.apiKey}` })
    const types = events.map((e) => e.event)
    expect(types).toContain("run.search.progress")
    expect(types[types.length - 1]).toBe("run.completed")
    const polled = await service.request("GET", `${path("A")}/${created.json.run_id}`)
    expect(polled.json.status).toBe("done")
  })

  it("past the wait limit the POST answers 202 and the run finishes later", async () => {
    engines.setBehavior("brave", { latencyMs: 3500 })
    try {
      const created = await service.request("POST", path("A"), { body: { queries: ["slow"], engines: ["brave"] } })
      expect(created.status).toBe(202)
      const run = await waitForRunStatus(service, `${path("A")}/${created.json.run_id}`, TERMINAL, { timeoutMs: 10_000 })
      expect(run.status).toBe("done")
      expect(run.results.results.length).toBeGreaterThan(0)
    } finally {
      engines.setBehavior("brave", {})
    }
  })
})

describe("failures", () => {
  it("an engine that returns 500 is listed as unresponsive and the others' hits are returned", async () => {
    engines.setBehavior("brave", { failure: "500" })
    try {
      const response = await service.request("POST", path("A"), { body: { queries: ["epsilon"], engines: ["searxng", "brave"] } })
      expect(response.status).toBe(200)
      expect(response.json.results.unresponsive_engines).toEqual(["brave"])
      expect(response.json.results.results.length).toBeGreaterThan(0)
    } finally {
      engines.setBehavior("brave", {})
    }
  })

  it("an unknown engine is a 422 naming the valid ones, and no run is created", async () => {
    const response = await service.request("POST", path("A"), { body: { queries: ["x"], engines: ["altavista"] } })
    expect(response.status).toBe(422)
    expect(response.json.code).toBe("validation_error")
    expect(response.json.detail).toContain("searxng")
    expect(response.json.extra.errors[0].loc).toEqual(["body", "engines"])
  })

  it("schema limits: queries required and bounded", async () => {
    for (const body of [{}, { queries: [] }, { queries: ["x".repeat(501)] }, { queries: ["x"], max_results_per_query: 0 }]) {
      const response = await service.request("POST", path("A"), { body })
      expect(response.status, JSON.stringify(body)).toBe(422)
    }
  })

  it("a run of another kind or project is 404", async () => {
    const response = await service.request("GET", `${path("A")}/run_nothing`)
    expect(response.status).toBe(404)
    expect(response.json.code).toBe("run_not_found")
  })
})
