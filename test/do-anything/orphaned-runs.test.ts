/**
 * A run whose creating request died between its commit and the dispatch of its Execute message
 * (the process killed in between) does not stay pending until a retry that may never come: the
 * service dispatches it when it starts again. The crash's window is too narrow to hit on purpose,
 * so the test makes its outcome directly: a pending follow-up row on a running session and no
 * Execute message, as that commit leaves them.
 */
import { randomUUID } from "node:crypto"
import { afterEach, describe, expect, it, vi } from "vitest"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"

vi.setConfig({ testTimeout: 180_000 })

// Runs end at once (no browser to lease): the test is about dispatch, not about the agent.
const env = { CHROMIUM_PATH: "/nonexistent/orphaned-runs-no-browser" }
const terminal = new Set(["succeeded", "failed", "canceled", "timed_out"])

const running: Array<Service> = []
afterEach(async () => {
  const last = running.at(-1)
  running.length = 0
  await stopAndClean(last)
})

const runsOf = async (service: Service, sessionId: string): Promise<Array<{ id: string; status: string }>> => {
  const response = await service.request("GET", `/v1/projects/${service.projectId}/do_anything/sessions/${sessionId}`)
  expect(response.status, response.text).toBe(200)
  return response.json.runs
}

const until = async <A>(what: string, probe: () => Promise<A | undefined>, seconds: number): Promise<A> => {
  for (const started = Date.now(); Date.now() - started < seconds * 1000;) {
    const found = await probe()
    if (found !== undefined) return found
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`${what}: not within ${seconds} s`)
}

describe("a run committed but never dispatched", () => {
  it("is dispatched when the service starts again, and ends", async () => {
    let service = await startService({ env })
    running.push(service)
    const created = await service.request("POST", `/v1/projects/${service.projectId}/do_anything/sessions`, {
      body: { instructions: "first", keep_alive: true }
    })
    expect(created.status, created.text).toBe(201)
    const sessionId = created.json.id as string
    const first = await until("the first run ends", async () => {
      const runs = await runsOf(service, sessionId)
      return runs.every((run) => terminal.has(run.status)) ? runs[0] : undefined
    }, 60)

    // What a follow-up's commit leaves when its process dies before dispatching: the run pending,
    // the session running and holding it, no Execute message.
    const orphanId = `run_${randomUUID().replaceAll("-", "")}`
    const db = await embeddedDatabaseClient(service.dataDir)
    try {
      await db.query(
        `INSERT INTO runs SELECT (jsonb_populate_record(NULL::runs, to_jsonb(r) || jsonb_build_object(
           'id', $2::text, 'status', 'pending', 'instructions', 'the orphan', 'created_at', now(), 'updated_at', now(),
           'terminal_reason', NULL, 'output', NULL, 'error_code', NULL, 'error_detail', NULL,
           'started_at', NULL, 'finished_at', NULL, 'step_count', 0))).* FROM runs r WHERE r.id = $1`,
        [first!.id, orphanId]
      )
      await db.query(`UPDATE sessions SET status = 'running', latest_run_id = $2 WHERE id = $1`, [sessionId, orphanId])
      const messages = await db.query(`SELECT 1 FROM cluster_messages WHERE position($1 in payload) > 0`, [orphanId])
      expect(messages.rowCount).toBe(0)
    } finally {
      await db.end()
    }
    expect((await runsOf(service, sessionId)).find((run) => run.id === orphanId)?.status).toBe("pending")

    await service.kill()
    service = await startService({ env, dataDir: service.dataDir, credentials: { projectId: service.projectId, apiKey: service.apiKey } })
    running.push(service)
    const ended = await until("the orphaned run ends after the restart", async () => {
      const orphan = (await runsOf(service, sessionId)).find((run) => run.id === orphanId)
      return orphan !== undefined && terminal.has(orphan.status) ? orphan : undefined
    }, 60)
    expect(ended.status).not.toBe("pending")
    expect(service.logs.some((line) => JSON.stringify(line).includes("undispatched run dispatched"))).toBe(true)
  })
})
