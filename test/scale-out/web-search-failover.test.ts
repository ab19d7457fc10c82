/**
 * WebSearch failover on two API nodes (each also a runner) on one external PostgreSQL and Redis: a
 * search whose engine hangs is under way on one runner when that runner is killed (SIGKILL); once
 * its shard locks expire the survivor takes the shard, the persisted Execute is delivered again
 * and the search completes there with the engine's results and a `run.resumed` event. The
 * single-node version is test/web-search/restart.test.ts. Runs only where TEST_DATABASE_URL and
 * TEST_REDIS_URL are set.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeEngines, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { TERMINAL, waitForRunStatus } from "../support/runs.ts"
import { externalDatabase, type Service, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import { clusterNodeEnv, eventually, shardsSettled } from "./nodes.ts"

const databaseUrl = process.env["TEST_DATABASE_URL"] || undefined
const redisUrl = process.env["TEST_REDIS_URL"] || undefined

describe.skipIf(databaseUrl === undefined || redisUrl === undefined)("scale-out: a WebSearch whose runner dies", () => {
  let engines: FakeEngines
  let database: Awaited<ReturnType<typeof externalDatabase>>
  let a: Service
  let b: Service

  beforeAll(async () => {
    engines = await startFakeEngines({
      results: (engine, query) => [{ title: `${engine} ${query}`, url: `https://${engine}.example/${encodeURIComponent(query)}`, snippet: "hit" }]
    })
    database = await externalDatabase()
    // No model: the search summarizes extractively (the scripted model's URL is not needed).
    const { WA_MODEL_BASE_URL: _url, WA_MODEL: _model, ...env } = clusterNodeEnv(database!.url, redisUrl!, "", {
      WA_SEARXNG_URL: engines.url,
      WA_WEB_SEARCH_WAIT_SECONDS: "1",
      WA_CLUSTER_HEALTH_CHECK_SECONDS: "1",
      // A dead runner's shards go to the survivor soon after.
      WA_CLUSTER_LOCK_EXPIRATION_SECONDS: "6",
      WA_DRAIN_SECONDS: "1"
    })
    a = await startService({ env })
    b = await startService({ env, credentials: { projectId: a.projectId, apiKey: a.apiKey } })
    // Both runners hold shards before the search is placed.
    await shardsSettled("the shards split over both runners", [a.url, b.url])
  }, 180_000)

  afterAll(async () => {
    await Promise.all([stopAndClean(a), stopAndClean(b)])
    await database?.drop()
    await engines?.close()
  }, 120_000)

  it("the search completes on the survivor with the engine's results", async () => {
    engines.setBehavior("searxng", { failure: "hang" })
    const created = await a.request("POST", `/v1/projects/${a.projectId}/web_search/runs`, {
      body: { queries: ["fails over"], engines: ["searxng"], wait: false }
    })
    expect(created.status, created.text).toBe(202)
    const runId = created.json.id as string
    // The engine was called: the search is under way, on the runner whose log names the run.
    await eventually("the hanging engine is called", async () => engines.requestsTo("searxng").length > 0 || undefined, { timeoutMs: 20_000 })
    const owner = await eventually("the runner executing the search", async () =>
      [a, b].find((node) => node.logs.some((line) => line.message === "run started" && line.annotations["run_id"] === runId)))
    const survivor = owner === a ? b : a
    const path = `/v1/projects/${survivor.projectId}/web_search/runs/${runId}`
    expect((await survivor.request("GET", path)).json.status).toBe("running")

    await owner.kill()
    engines.setBehavior("searxng", {})
    const run = await waitForRunStatus(survivor, path, TERMINAL, { timeoutMs: 45_000 })
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.results.results.map((r: any) => r.url)).toEqual(["https://searxng.example/fails%20over"])
    // Searched again on the survivor, which says so in the run's events and its log.
    expect(engines.requestsTo("searxng").length).toBeGreaterThanOrEqual(2)
    const { events } = await readSse(`${survivor.url}${path}/events`, { authorization: `Bearer ${survivor.apiKey}` })
    expect(events.some((event) => event.event === "run.resumed")).toBe(true)
    expect(events.at(-1)?.event).toBe("run.completed")
    expect(survivor.logs.some((line) => line.message === "run resumed" && line.annotations["run_id"] === runId)).toBe(true)
  }, 90_000)
})
