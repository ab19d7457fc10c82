/**
 * A run whose creating request died between its commit and the dispatch of its Execute message
 * (the process killed in between) does not stay pending until a retry that may never come: the
 * service dispatches it when it starts again (src/runs/undispatched.ts), whatever its kind. The
 * crash's window is too narrow to hit on purpose, so the test makes its outcome directly: a
 * pending run row with no Execute message, as that commit leaves it, for a DoAnything follow-up
 * (its session running and holding it) and for a WebSearch run.
 */
import { randomUUID } from "node:crypto"
import type pg from "pg"
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest"
import { type FakeEngines, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { eventually } from "../support/runs.ts"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"

vi.setConfig({ testTimeout: 180_000 })

let engines: FakeEngines
beforeAll(async () => {
  engines = await startFakeEngines({ results: (engine, query) => [{ title: query, url: `https://${engine}.example/${encodeURIComponent(query)}`, snippet: "hit" }] })
})
afterAll(async () => {
  await engines.close()
})

// DoAnything runs end at once (no browser to lease): the test is about dispatch, not about the agent.
const env = () => ({ CHROMIUM_PATH: "/nonexistent/undispatched-runs-no-browser", WA_SEARXNG_URL: engines.url, WA_ALLOW_PRIVATE_NETWORKS: "true" })
const terminal = new Set(["done", "failed", "canceled", "timed_out"])

const running: Array<Service> = []
afterEach(async () => {
  const last = running.at(-1)
  running.length = 0
  await stopAndClean(last)
})

/** A copy of an ended run, pending again under a new id, as a commit that was never dispatched leaves it. */
const pendingCopy = async (db: pg.Client, runId: string, instructions: string) => {
  const id = `run_${randomUUID().replaceAll("-", "").slice(0, 26)}`
  await db.query(
    `INSERT INTO runs SELECT (jsonb_populate_record(NULL::runs, to_jsonb(r) || jsonb_build_object(
       'id', $2::text, 'status', 'pending', 'instructions', $3::text, 'created_at', now(), 'updated_at', now(),
       'terminal_reason', NULL, 'output', NULL, 'error_code', NULL, 'error_detail', NULL, 'phase', NULL, 'executor', NULL,
       'started_at', NULL, 'finished_at', NULL, 'step_count', 0))).* FROM runs r WHERE r.id = $1`,
    [runId, id, instructions]
  )
  expect((await db.query(`SELECT 1 FROM cluster_messages WHERE position($1 in payload) > 0 OR entity_id = $1`, [id])).rowCount).toBe(0)
  return id
}

describe("runs committed but never dispatched", () => {
  it("are dispatched when the service starts again, and end: a DoAnything follow-up and a WebSearch run", async () => {
    let service = await startService({ env: env() })
    running.push(service)
    const base = `/v1/projects/${service.projectId}`
    const created = await service.request("POST", `${base}/do_anything/sessions`, { body: { instructions: "first", keep_alive: true } })
    expect(created.status, created.text).toBe(201)
    const sessionId = created.json.id as string
    const sessionRuns = async (): Promise<Array<{ id: string; status: string }>> =>
      (await service.request("GET", `${base}/do_anything/sessions/${sessionId}`)).json.runs
    const first = await eventually("the first run ends", async () => {
      const runs = await sessionRuns()
      return runs.every((run) => terminal.has(run.status)) ? runs[0] : undefined
    })
    const search = await service.request("POST", `${base}/web_search/runs`, { body: { queries: ["dispatched"], engines: ["searxng"], wait: false } })
    expect(search.status, search.text).toBe(202)
    await eventually("the search ends", async () => {
      const run = (await service.request("GET", `${base}/web_search/runs/${search.json.id}`)).json
      return terminal.has(run.status) ? run : undefined
    })

    const db = await embeddedDatabaseClient(service.dataDir)
    let followUp: string
    let searchRun: string
    try {
      followUp = await pendingCopy(db, first!.id, "the undispatched follow-up")
      await db.query(`UPDATE sessions SET status = 'running', latest_run_id = $2 WHERE id = $1`, [sessionId, followUp])
      searchRun = await pendingCopy(db, search.json.id, "")
    } finally {
      await db.end()
    }
    expect((await sessionRuns()).find((run) => run.id === followUp)?.status).toBe("pending")

    await service.kill()
    service = await startService({ env: env(), dataDir: service.dataDir, credentials: { projectId: service.projectId, apiKey: service.apiKey } })
    running.push(service)
    await eventually("the follow-up ends after the restart", async () => {
      const run = (await sessionRuns()).find((r) => r.id === followUp)
      return run !== undefined && terminal.has(run.status) ? run : undefined
    })
    const searched = await eventually("the search ends after the restart", async () => {
      const run = (await service.request("GET", `${base}/web_search/runs/${searchRun}`)).json
      return terminal.has(run.status) ? run : undefined
    })
    expect(searched.status, JSON.stringify(searched.error)).toBe("done")
    const dispatched = service.logs.filter((line) => line.message === "undispatched run dispatched").map((line) => line.annotations["kind"])
    expect(dispatched.sort()).toEqual(["do_anything", "web_search"])
  })
})
