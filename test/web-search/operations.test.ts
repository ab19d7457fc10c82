/**
 * WebSearch run operations through HTTP against the real service, with the fake engines on
 * loopback: cancel (a run under way becomes canceled, an ended one is 409), refine (the same
 * search narrowed by a text, with parent_run_id) and send_followup (new queries with the
 * original's settings, leaving out the pages the chain already returned), under both conventions,
 * with their 404s, 409s and 422s, Idempotency-Key, and their place in the OpenAPI document.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { FAKE_KEYS, type FakeEngines, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { readSse } from "../support/sse.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { TERMINAL, waitForRunStatus } from "../support/runs.ts"

let engines: FakeEngines
let service: Service

/** The query as the engine got it, without the site operators the adapter appends. */
const bare = (query: string) => query.split(/\s+/).filter((token) => token !== "" && !token.includes("site:") && token !== "OR").join(" ")

/** Every query finds the page common to all, a page of its own, and a second page of its own. */
const hits = (_engine: string, query: string) => {
  const q = encodeURIComponent(bare(query))
  return [
    { title: "The page every query finds", url: "https://common.example/page", snippet: "common" },
    { title: `Own page for ${bare(query)}`, url: `https://own.example/${q}`, snippet: `only ${bare(query)}` },
    { title: `Second page for ${bare(query)}`, url: `https://second.example/${q}`, snippet: `also ${bare(query)}` }
  ]
}

beforeAll(async () => {
  engines = await startFakeEngines({ results: hits })
  service = await startService({
    env: {
      WA_SEARXNG_URL: engines.url,
      WA_BRAVE_API_KEY: FAKE_KEYS.brave,
      WA_BRAVE_BASE_URL: engines.url,
      WA_WEB_SEARCH_WAIT_SECONDS: "2",
      WA_ALLOW_PRIVATE_NETWORKS: "true"
    }
  })
})
afterAll(async () => {
  await stopAndClean(service)
  await engines.close()
})

const path = (convention: "A" | "B" = "A") => convention === "A"
  ? `/v1/projects/${service.projectId}/web_search/runs`
  : `/api/v1/projects/${service.projectId}/web_search/runs`

const post = (p: string, body: unknown, headers: Record<string, string> = {}) => service.request("POST", p, { body, headers })

/** A run created with `body`, finished (200 within the wait). */
const finished = async (body: Record<string, unknown>) => {
  const response = await post(path(), body)
  expect(response.status, response.text).toBe(200)
  expect(response.json.status).toBe("done")
  return response.json
}

/** A run that stays under way for a while: brave answers after `ms`. */
const slowRun = async (body: Record<string, unknown>, convention: "A" | "B" = "A") => {
  const response = await post(path(convention), { engines: ["brave"], wait: false, ...body })
  expect(response.status, response.text).toBe(202)
  return response.json
}

const withSlowBrave = async <A>(ms: number, body: () => Promise<A>): Promise<A> => {
  engines.setBehavior("brave", { latencyMs: ms })
  try {
    return await body()
  } finally {
    engines.setBehavior("brave", {})
  }
}

const urlsOf = (run: any): Array<string> => run.results.results.map((r: any) => r.canonical_url)

describe("cancel", () => {
  it("a run under way becomes canceled, stays canceled, and its stream ends with run.completed canceled", async () => {
    await withSlowBrave(2500, async () => {
      const run = await slowRun({ queries: ["cancel-me"] })
      const response = await post(`${path()}/${run.run_id}/cancel`, { reason: "changed my mind" })
      expect(response.status, response.text).toBe(200)
      expect(response.json).toMatchObject({ run_id: run.run_id, status: "canceled", terminal_reason: "canceled", results: null, parent_run_id: null })
      expect(response.json.finished_at).not.toBeNull()

      const { events } = await readSse(`${service.url}${path()}/${run.run_id}/events`, { authorization: `Bearer ${service.apiKey}` })
      const changes = events.filter((e) => e.event === "run.status_changed").map((e) => e.data?.data)
      expect(changes.at(-1)).toMatchObject({ status: "canceled", reason: "changed my mind" })
      const completed = events.filter((e) => e.event === "run.completed")
      expect(completed).toHaveLength(1)
      expect(completed[0]!.data?.data).toMatchObject({ status: "canceled", terminal_reason: "canceled" })

      // The engine answers later: the search was stopped, the run does not come back to life.
      await new Promise((resolve) => setTimeout(resolve, 3000))
      const later = await service.request("GET", `${path()}/${run.run_id}`)
      expect(later.json.status).toBe("canceled")
      expect(later.json.results).toBeNull()
    })
  })

  it("Convention B cancels too, and a reason is optional", async () => {
    await withSlowBrave(2500, async () => {
      const run = await slowRun({ queries: ["cancel-flat"] }, "B")
      const response = await post(`${path("B")}/${run.run_id}/cancel`, {})
      expect(response.status, response.text).toBe(200)
      expect(response.json.status).toBe("canceled")
    })
  })

  it("an ended run is 409 conflict, and stays as it was", async () => {
    const done = await finished({ queries: ["ended-run"], engines: ["searxng"] })
    const response = await post(`${path()}/${done.run_id}/cancel`, { reason: "too late" })
    expect(response.status, response.text).toBe(409)
    expect(response.json.code).toBe("conflict")
    expect(response.json.extra.status).toBe("done")
    const again = await service.request("GET", `${path()}/${done.run_id}`)
    expect(again.json.status).toBe("done")
    expect(again.json.results.results.length).toBeGreaterThan(0)
  })

  it("a reason over 200 characters is 422; an unknown run is 404", async () => {
    const done = await finished({ queries: ["reason-limit"], engines: ["searxng"] })
    const long = await post(`${path()}/${done.run_id}/cancel`, { reason: "x".repeat(201) })
    expect(long.status).toBe(422)
    expect(long.json.code).toBe("validation_error")
    const missing = await post(`${path()}/run_nothing/cancel`, {})
    expect(missing.status).toBe(404)
    expect(missing.json.code).toBe("run_not_found")
  })
})

describe("refine", () => {
  const original = {
    queries: ["widgets", "gadgets"],
    engines: ["searxng"],
    max_results_per_query: 7,
    rerank: true,
    summarize: false,
    freshness: "month",
    language: "de",
    site_blacklist: ["blocked.example"],
    objective: "find widgets"
  }

  it("starts a run of the same search narrowed by the text, with parent_run_id, 200 within the wait", async () => {
    const parent = await finished(original)
    expect(parent.parent_run_id).toBeNull()
    const from = engines.requests.length
    const response = await post(`${path()}/${parent.run_id}/refine`, { text: "prices  in 2024" })
    expect(response.status, response.text).toBe(200)
    const refined = response.json
    expect(refined.run_id).not.toBe(parent.run_id)
    expect(refined).toMatchObject({ kind: "web_search", status: "done", parent_run_id: parent.run_id })
    expect(refined.request).toEqual({
      queries: ["widgets prices in 2024", "gadgets prices in 2024"],
      engines: ["searxng"],
      max_results_per_query: 7,
      rerank: true,
      summarize: false,
      freshness: "month",
      site_whitelist: null,
      site_blacklist: ["blocked.example"],
      language: "de",
      objective: "prices in 2024"
    })
    // The engines were asked the refined queries, and the results come from them.
    const asked = engines.requests.slice(from).map((r) => bare(r.params["q"] ?? ""))
    expect(asked.sort()).toEqual(["gadgets prices in 2024", "widgets prices in 2024"])
    expect(urlsOf(refined)).toContain(`https://own.example/${encodeURIComponent("widgets prices in 2024")}`)
    expect(new Set(refined.results.results.map((r: any) => r.source_query))).toEqual(new Set(["widgets prices in 2024", "gadgets prices in 2024"]))

    const polled = await service.request("GET", `${path()}/${refined.run_id}`)
    expect(polled.json.parent_run_id).toBe(parent.run_id)
    expect(polled.json.request.queries).toEqual(refined.request.queries)
  })

  it("a long text is cut at a word so each query stays within 500 characters", async () => {
    const parent = await finished({ queries: ["base"], engines: ["searxng"] })
    const text = Array.from({ length: 200 }, (_, i) => `word${i}`).join(" ")
    const response = await post(`${path()}/${parent.run_id}/refine`, { text, wait: false })
    expect(response.status, response.text).toBe(202)
    const [query] = response.json.request.queries
    expect(query.length).toBeLessThanOrEqual(500)
    expect(query.startsWith("base word0 word1")).toBe(true)
    expect(text.includes(query.slice(5).split(" ").at(-1))).toBe(true)
    expect(response.json.request.objective).toBe(text)
  })

  it("the original may still be running; wait false answers 202; Convention B shows succeeded", async () => {
    await withSlowBrave(2500, async () => {
      const parent = await slowRun({ queries: ["still-running"] }, "B")
      const response = await post(`${path("B")}/${parent.run_id}/refine`, { text: "narrower", wait: false })
      expect(response.status, response.text).toBe(202)
      expect(response.json.parent_run_id).toBe(parent.run_id)
      const done = await waitForRunStatus(service, `${path("B")}/${response.json.run_id}`, TERMINAL, { timeoutMs: 20_000 })
      expect(done.status).toBe("succeeded")
      expect(done.request.queries).toEqual(["still-running narrower"])
      expect(done.request.engines).toEqual(["brave"])
    })
  })

  it("refuses an empty, missing or too long text and unknown fields (422), an unknown run (404)", async () => {
    const parent = await finished({ queries: ["refine-limits"], engines: ["searxng"] })
    for (const body of [{}, { text: "" }, { text: "x".repeat(2001) }, { text: "ok", queries: ["x"] }, { text: 5 }]) {
      const response = await post(`${path()}/${parent.run_id}/refine`, body)
      expect(response.status, JSON.stringify(body) + " -> " + response.text).toBe(422)
      expect(response.json.code).toBe("validation_error")
    }
    const missing = await post(`${path()}/run_nothing/refine`, { text: "x" })
    expect(missing.status).toBe(404)
    expect(missing.json.code).toBe("run_not_found")
  })

  it("the same Idempotency-Key returns the same derived run", async () => {
    const parent = await finished({ queries: ["idem"], engines: ["searxng"] })
    const headers = { "idempotency-key": crypto.randomUUID() }
    const first = await post(`${path()}/${parent.run_id}/refine`, { text: "again" }, headers)
    const second = await post(`${path()}/${parent.run_id}/refine`, { text: "again" }, headers)
    expect(first.status).toBe(200)
    expect(second.status).toBe(200)
    expect(second.json.run_id).toBe(first.json.run_id)
    const other = await post(`${path()}/${parent.run_id}/refine`, { text: "different" }, headers)
    expect(other.status).toBe(422)
  })
})

describe("send_followup", () => {
  it("new queries with the original's settings; pages the original returned are left out", async () => {
    const parent = await finished({ queries: ["first"], engines: ["searxng"], language: "fr", max_results_per_query: 3, objective: "the first look" })
    expect(urlsOf(parent)).toContain("https://common.example/page")

    const response = await post(`${path()}/${parent.run_id}/followup`, { queries: ["second"] })
    expect(response.status, response.text).toBe(200)
    const follow = response.json
    expect(follow).toMatchObject({ status: "done", parent_run_id: parent.run_id })
    expect(follow.request).toMatchObject({ queries: ["second"], engines: ["searxng"], language: "fr", max_results_per_query: 3, objective: "the first look" })
    expect([...urlsOf(follow)].sort()).toEqual(["https://own.example/second", "https://second.example/second"])
    expect(urlsOf(follow)).not.toContain("https://common.example/page")
    expect(follow.results.results.map((r: any) => r.final_rank)).toEqual([1, 2])
    expect(follow.results.excluded_count).toBe(1)

    // A follow-up of the follow-up leaves out what either returned; `text` becomes the objective.
    const next = await post(`${path()}/${follow.run_id}/followup`, { queries: ["second", "third"], text: "dig deeper" })
    expect(next.status, next.text).toBe(200)
    expect(next.json.parent_run_id).toBe(follow.run_id)
    expect(next.json.request.objective).toBe("dig deeper")
    const urls = urlsOf(next.json)
    expect(urls).not.toContain("https://common.example/page")
    expect(urls).not.toContain("https://own.example/second")
    expect(urls).not.toContain("https://second.example/second")
    expect(urls.sort()).toEqual(["https://own.example/third", "https://second.example/third"])
    expect(next.json.results.excluded_count).toBe(3)
  })

  it("the original must have ended: 409 while it runs", async () => {
    await withSlowBrave(2500, async () => {
      const parent = await slowRun({ queries: ["not-yet"] })
      const response = await post(`${path()}/${parent.run_id}/followup`, { queries: ["more"] })
      expect(response.status, response.text).toBe(409)
      expect(response.json.code).toBe("conflict")
      expect(response.json.extra).toMatchObject({ run_id: parent.run_id })
    })
  })

  it("a canceled original can be followed up (nothing to leave out); Convention B", async () => {
    const parent = await withSlowBrave(2500, async () => {
      const run = await slowRun({ queries: ["abandoned"] }, "B")
      const canceled = await post(`${path("B")}/${run.run_id}/cancel`, {})
      expect(canceled.status).toBe(200)
      return run
    })
    const response = await post(`${path("B")}/${parent.run_id}/followup`, { queries: ["instead"] })
    expect(response.status, response.text).toBe(200)
    expect(response.json.status).toBe("succeeded")
    expect(response.json.request.engines).toEqual(["brave"])
    expect(urlsOf(response.json)).toContain("https://common.example/page")
    expect(response.json.results.excluded_count).toBe(0)
  })

  it("refuses missing or bad queries, a bad text and unknown fields (422), an unknown run (404)", async () => {
    const parent = await finished({ queries: ["followup-limits"], engines: ["searxng"] })
    for (const body of [{}, { queries: [] }, { queries: ["x".repeat(501)] }, { queries: ["ok"], text: "" }, { queries: ["ok"], text: "x".repeat(2001) }, { queries: ["ok"], engines: ["brave"] }]) {
      const response = await post(`${path()}/${parent.run_id}/followup`, body)
      expect(response.status, JSON.stringify(body) + " -> " + response.text).toBe(422)
      expect(response.json.code).toBe("validation_error")
    }
    const missing = await post(`${path()}/run_nothing/followup`, { queries: ["x"] })
    expect(missing.status).toBe(404)
  })
})

describe("contract", () => {
  it("the OpenAPI document describes cancel, refine and followup under both conventions", async () => {
    const spec = (await service.request("GET", "/openapi.json", { key: null })).json
    for (const prefix of ["/v1/projects/{pid}/web_search/runs/{rid}", "/api/v1/projects/{pid}/web_search/runs/{rid}"]) {
      for (const [operation, codes] of [["cancel", ["404", "409", "422"]], ["refine", ["202", "404", "422"]], ["followup", ["202", "404", "409", "422"]]] as const) {
        const op = spec.paths[`${prefix}/${operation}`]?.post
        expect(op, `${prefix}/${operation}`).toBeDefined()
        expect(op.description.length).toBeGreaterThan(40)
        for (const code of codes) expect(Object.keys(op.responses), `${prefix}/${operation} ${code}`).toContain(code)
        expect(op.security).toBeDefined()
      }
    }
  })
})
