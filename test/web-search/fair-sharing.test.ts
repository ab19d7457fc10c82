/**
 * Fair sharing between tenants, against the real service: a project's runs in flight are capped
 * (429 too_many_concurrent_runs with Retry-After, counted in the create's transaction, nothing
 * half-created), and the engine calls runs start wait in a bounded lane where another project's
 * search is served in turn, not after the first project's whole line.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { FAKE_KEYS, type FakeEngines, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { eventually, TERMINAL, waitForRunStatus } from "../support/runs.ts"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"
import { DEFAULT_WORK_LIMITS } from "../../src/fairness/fair-queue.ts"

const CAP = 5
let engines: FakeEngines
let service: Service
let other: { projectId: string; key: string }

beforeAll(async () => {
  engines = await startFakeEngines({
    results: (engine, query) => [{ title: `${engine} ${query}`, url: `https://${engine}.example/${encodeURIComponent(query)}`, snippet: "hit" }]
  })
  service = await startService({
    env: {
      WA_SEARXNG_URL: engines.url,
      WA_BRAVE_API_KEY: FAKE_KEYS.brave,
      WA_BRAVE_BASE_URL: engines.url,
      WA_GOOGLE_API_KEY: FAKE_KEYS.google,
      WA_GOOGLE_CX: FAKE_KEYS.googleCx,
      WA_GOOGLE_BASE_URL: engines.url,
      WA_ALLOW_PRIVATE_NETWORKS: "true",
      WA_MAX_CONCURRENT_RUNS: String(CAP),
      WA_RATE_LIMIT_REQUESTS: "100000"
    }
  })
  const project = JSON.parse((await service.cli("projects", "create", "--name", "other-tenant")).stdout)
  const key = JSON.parse((await service.cli("keys", "create", "--project", project.project_id, "--name", "other")).stdout)
  other = { projectId: project.project_id, key: key.secret_token }
})
afterAll(async () => {
  await stopAndClean(service)
  await engines.close()
})

const runsPath = (projectId: string) => `/v1/projects/${projectId}/web_search/runs`

/** The other tenant's reads, with its own key. */
const otherReader = { request: (method: string, path: string) => service.request(method, path, { key: other.key }) }

/** Waits until every run of `ids` (of the default project, or the other tenant's) has ended. */
const allEnded = (projectId: string, ids: ReadonlyArray<string>, timeoutMs = 90_000) =>
  Promise.all(ids.map((id) =>
    waitForRunStatus(projectId === other.projectId ? otherReader : service, `${runsPath(projectId)}/${id}`, TERMINAL, { timeoutMs, everyMs: 250 })))

describe("runs in flight per project", () => {
  it("30 concurrent creates against a cap of 5: 5 accepted, 25 × 429 too_many_concurrent_runs with Retry-After, nothing half-created", async () => {
    engines.setBehavior("searxng", { latencyMs: 3_000 })
    try {
      const responses = await Promise.all(Array.from({ length: 30 }, (_, i) =>
        service.request("POST", runsPath(service.projectId), { body: { queries: [`capped ${i}`], engines: ["searxng"], wait: false } })))
      const accepted = responses.filter((r) => r.status === 202)
      const refused = responses.filter((r) => r.status === 429)
      expect(accepted).toHaveLength(CAP)
      expect(refused).toHaveLength(30 - CAP)
      for (const response of refused) {
        expect(response.json).toMatchObject({ code: "too_many_concurrent_runs", extra: { limit: CAP, active: CAP } })
        expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0)
        expect(response.headers.get("ratelimit")).toBe(`limit=${CAP}, remaining=0, reset=${response.headers.get("retry-after")}`)
      }

      // Only the accepted runs exist, each with its first event; the refused left no row behind.
      const db = await embeddedDatabaseClient(service.dataDir)
      try {
        const runs = await db.query(`SELECT id FROM runs WHERE project_id = $1 AND request->'queries'->>0 LIKE 'capped %'`, [service.projectId])
        expect(runs.rows.map((r) => r.id).sort()).toEqual(accepted.map((r) => r.json.run_id).sort())
        const events = await db.query(`SELECT count(*)::int AS n FROM run_events WHERE run_id = ANY($1)`, [runs.rows.map((r) => r.id)])
        expect(events.rows[0].n).toBeGreaterThanOrEqual(CAP)
      } finally {
        await db.end()
      }

      // The cap is the project's: another tenant still starts its runs.
      const others = await service.request("POST", runsPath(other.projectId), { key: other.key, body: { queries: ["another tenant"], engines: ["searxng"], wait: false } })
      expect(others.status, others.text).toBe(202)

      // Room comes back as runs end.
      await allEnded(service.projectId, accepted.map((r) => r.json.run_id))
      const again = await service.request("POST", runsPath(service.projectId), { body: { queries: ["after the cap"], engines: ["searxng"], wait: false } })
      expect(again.status, again.text).toBe(202)
      await allEnded(service.projectId, [again.json.run_id])
      await allEnded(other.projectId, [others.json.run_id])
    } finally {
      engines.setBehavior("searxng", {})
    }
  })
})

describe("engine calls in fair shares", () => {
  it("while one tenant's runs fill the engine lane, the lane holds its bound and another tenant's search ends before them", async () => {
    // Tenant A: 5 runs of 20 queries on two slow engines = 200 engine calls, 6 s each (the engine timeout is 8 s).
    const latencyMs = 6_000
    engines.setBehavior("brave", { latencyMs })
    engines.setBehavior("google", { latencyMs })
    const before = engines.requests.length
    try {
      const created = await Promise.all(Array.from({ length: CAP }, (_, run) =>
        service.request("POST", runsPath(service.projectId), {
          body: { queries: Array.from({ length: 20 }, (_, q) => `saturate ${run} ${q}`), engines: ["brave", "google"], wait: false }
        })))
      for (const response of created) expect(response.status, response.text).toBe(202)
      const burst = created.map((r) => r.json.run_id as string)

      // No call answers within 6 s of the first one's arrival, so what arrived in the first 4 s is
      // under way at once: it never passes the lane's bound.
      const arrived = () => engines.requests.slice(before).filter((r) => r.engine === "brave" || r.engine === "google").length
      let firstSeen: number | undefined
      const samples: Array<number> = []
      await eventually("4 s of A's engine calls", () => {
        const count = arrived()
        if (count > 0) firstSeen ??= Date.now()
        if (firstSeen === undefined) return undefined
        if (Date.now() - firstSeen < latencyMs - 2_000) samples.push(count)
        return Date.now() - firstSeen >= latencyMs - 2_000 || undefined
      }, { timeoutMs: 60_000, everyMs: 100 })
      expect(Math.max(...samples)).toBeGreaterThan(0)
      expect(Math.max(...samples)).toBeLessThanOrEqual(DEFAULT_WORK_LIMITS.engine_call)

      // Tenant B's search gets the next free slots in turn: it ends while A's line is still long.
      const mine = await service.request("POST", runsPath(other.projectId), { key: other.key, body: { queries: ["my turn"], engines: ["searxng"], wait: false } })
      expect(mine.status, mine.text).toBe(202)
      const ended = await waitForRunStatus(otherReader, `${runsPath(other.projectId)}/${mine.json.run_id}`, TERMINAL, { timeoutMs: 60_000, everyMs: 100 })
      expect(ended.status).toBe("done")
      expect(ended.results.results.map((r: any) => r.url)).toEqual(["https://searxng.example/my%20turn"])
      const stillRunning = await Promise.all(burst.map((id) => service.request("GET", `${runsPath(service.projectId)}/${id}`)))
      expect(stillRunning.filter((r) => !TERMINAL.includes(r.json.status)).length).toBeGreaterThan(0)

      await allEnded(service.projectId, burst, 120_000)
    } finally {
      engines.setBehavior("brave", {})
      engines.setBehavior("google", {})
    }
  })
})
