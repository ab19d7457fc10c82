/**
 * WebSearch across a crash: a search whose engine is slow is under way when the service is
 * killed (SIGKILL); started again on the same data dir, the run's persisted Execute is delivered
 * again and the search completes there, with the engines' results.
 */
import { afterAll, beforeAll, expect, it } from "vitest"
import { type FakeEngines, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { eventually, TERMINAL, waitForRunStatus } from "../support/runs.ts"
import { newDataDir, type Service, startService, stopAndClean } from "../support/service.ts"

let engines: FakeEngines
let service: Service | undefined

beforeAll(async () => {
  engines = await startFakeEngines({
    results: (engine, query) => [{ title: `${engine} ${query}`, url: `https://${engine}.example/${encodeURIComponent(query)}`, snippet: "hit" }]
  })
})
afterAll(async () => {
  await stopAndClean(service)
  await engines.close()
})

it("a search under way when the service is killed completes after the restart", async () => {
  const env = { WA_SEARXNG_URL: engines.url, WA_ALLOW_PRIVATE_NETWORKS: "true", WA_WEB_SEARCH_WAIT_SECONDS: "1" }
  engines.setBehavior("searxng", { latencyMs: 8_000 })
  const dataDir = newDataDir()
  const first = await startService({ dataDir, env })
  const created = await first.request("POST", `/v1/projects/${first.projectId}/web_search/runs`, {
    body: { queries: ["survives"], engines: ["searxng"], wait: false }
  })
  expect(created.status).toBe(202)
  const runId = created.json.id
  // The engine was called: the search is under way.
  await eventually("the slow engine is called", () => engines.requestsTo("searxng").length > 0 || undefined, { timeoutMs: 20_000 })
  expect((await first.request("GET", `/v1/projects/${first.projectId}/web_search/runs/${runId}`)).json.status).toBe("running")
  await first.kill()

  engines.setBehavior("searxng", {})
  service = await startService({ dataDir, env, credentials: { projectId: first.projectId, apiKey: first.apiKey } })
  const run = await waitForRunStatus(service, `/v1/projects/${service.projectId}/web_search/runs/${runId}`, TERMINAL, { timeoutMs: 60_000 })
  expect(run.status, JSON.stringify(run.error)).toBe("done")
  expect(run.results.results.map((r: any) => r.url)).toEqual(["https://searxng.example/survives"])
})
