/**
 * Scheduled DoAnything sessions across a runner's death: two `wa serve` nodes (each an API node, a
 * socket runner and a scheduler) on one PostgreSQL (TEST_DATABASE_URL, else an embedded one of
 * its own), four sessions on a 2 s interval schedule whose runs take a while (the scripted model
 * answers slowly), so runs are under way most of the time. The node executing a scheduled run is
 * killed with SIGKILL.
 *
 * What must hold (no lost, no doubled firing):
 * - every schedule keeps firing on the survivor, and its firings keep making runs;
 * - doubled: every recorded firing (schedule_firings) was decided exactly once (one row in
 *   session_schedule_firings, none left pending), a run_created firing names one run, no run is
 *   named by two firings, and no scheduled run exists without its firing;
 * - lost: every recorded firing was dispatched, and every run a firing made ended `done` (the
 *   run cut off by the kill resumed on the survivor: `run.resumed`).
 */
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { clusterNodeEnv, eventually, shardsSettled } from "./nodes.ts"
import { freshDatabase } from "../support/service.ts"

const SESSIONS = 4
const INTERVAL_SECONDS = 2

let model: ScriptedModel
let a: Service
let b: Service
let db: pg.Client
let dropDatabase: () => Promise<void> = async () => {}

beforeAll(async () => {
  // Each run: one slow model turn, then done.
  model = await startScriptedModel(async () => {
    await new Promise((resolve) => setTimeout(resolve, 1_200))
    return { tool: "done", args: { output: "checked" } }
  })
  const database = await freshDatabase("dosched")
  const databaseUrl = database.url
  dropDatabase = database.drop
  const env = clusterNodeEnv(databaseUrl, undefined, model.baseUrl, {
    WA_MAX_CONCURRENT_SESSIONS: "100",
    WA_RATE_LIMIT_REQUESTS: "100000",
    WA_SCHEDULE_MIN_INTERVAL_SECONDS: "1",
    WA_SCHEDULER_POLL_MS: "100",
    WA_SCHEDULED_CAP: "100",
    WA_CLUSTER_HEALTH_CHECK_SECONDS: "1",
    WA_CLUSTER_LOCK_EXPIRATION_SECONDS: "6",
    WA_DRAIN_SECONDS: "1"
  })
  a = await startService({ env })
  b = await startService({ env, credentials: { projectId: a.projectId, apiKey: a.apiKey } })
  db = new pg.Client({ connectionString: databaseUrl })
  await db.connect()
  await shardsSettled("the shards split over both runners", [a.url, b.url], { timeoutMs: 60_000 })
}, 240_000)

afterAll(async () => {
  await db?.end()
  await Promise.all([stopAndClean(a), stopAndClean(b)])
  await dropDatabase()
  await model?.close()
}, 120_000)

describe("scale-out: scheduled sessions whose runner dies", () => {
  it("the survivor keeps firing every schedule: no firing lost, none doubled, every scheduled run ends", async () => {
    const scheduleIds: Array<string> = []
    for (let i = 0; i < SESSIONS; i++) {
      const via = i % 2 === 0 ? a : b
      const created = await via.request("POST", `/v1/projects/${via.projectId}/do_anything/sessions`, {
        body: { instructions: `Check stock of widget ${i}`, schedule: { kind: "interval", interval_seconds: INTERVAL_SECONDS } }
      })
      expect(created.status, created.text).toBe(201)
      const listed = await via.request("GET", `/v1/projects/${via.projectId}/schedules?session_id=${created.json.id}`)
      scheduleIds.push(listed.json.items[0].id)
    }
    const doneRuns = async (after = 0) => {
      const { rows } = await db.query<{ schedule_id: string; n: string }>(
        `SELECT schedule_id, count(*)::text AS n FROM runs
         WHERE schedule_id = ANY($1) AND status = 'done' AND created_at > to_timestamp($2 / 1000.0) GROUP BY schedule_id`,
        [scheduleIds, after]
      )
      return new Map(rows.map((row) => [row.schedule_id, Number(row.n)]))
    }
    await eventually("two scheduled runs of every session done", async () => {
      const done = await doneRuns()
      return scheduleIds.every((id) => (done.get(id) ?? 0) >= 2) ? true : undefined
    }, { timeoutMs: 90_000 })

    // Kill the node that is executing a scheduled run right now.
    const { victim, runId } = await eventually("a node in the middle of a scheduled run", async () => {
      const { rows } = await db.query<{ id: string }>(`SELECT id FROM runs WHERE schedule_id = ANY($1) AND status = 'running'`, [scheduleIds])
      for (const row of rows) {
        const node = [a, b].find((n) => n.logs.some((line) => line.message === "run started" && line.annotations["run_id"] === row.id))
        if (node !== undefined) return { victim: node, runId: row.id }
      }
      return undefined
    }, { everyMs: 20, timeoutMs: 30_000 })
    const survivor = victim === a ? b : a
    await victim.kill()
    const killAt = Date.now()
    // On a loaded machine the chosen run may have ended between the pick and the kill; then it had
    // nothing to resume (its status then is already terminal, as the dead node left it).
    const { rows: [atKill] } = await db.query(`SELECT status FROM runs WHERE id = $1`, [runId])

    await eventually("two more scheduled runs of every session done after the kill", async () => {
      const done = await doneRuns(killAt)
      return scheduleIds.every((id) => (done.get(id) ?? 0) >= 2) ? true : undefined
    }, { timeoutMs: 120_000 })
    const pausedAt = new Date()
    for (const id of scheduleIds) {
      const paused = await survivor.request("POST", `/v1/projects/${survivor.projectId}/schedules/${id}/pause`)
      expect(paused.status, paused.text).toBe(200)
    }
    await eventually("every firing dispatched and decided, no scheduled run under way", async () => {
      const { rows } = await db.query(
        `SELECT (SELECT count(*) FROM schedule_firings WHERE owner_kind = 'session_schedule' AND owner_id = ANY($1) AND dispatched_at IS NULL)
              + (SELECT count(*) FROM session_schedule_firings WHERE schedule_id = ANY($1) AND outcome = 'pending')
              + (SELECT count(*) FROM runs WHERE schedule_id = ANY($1) AND status NOT IN ('done', 'failed', 'canceled')) AS open`,
        [scheduleIds]
      )
      return Number(rows[0].open) === 0 ? true : undefined
    }, { timeoutMs: 60_000 })

    const { rows: recorded } = await db.query<{ owner_id: string; slot_at: Date }>(
      `SELECT owner_id, slot_at FROM schedule_firings WHERE owner_kind = 'session_schedule' AND owner_id = ANY($1)`, [scheduleIds])
    const { rows: decided } = await db.query<{ schedule_id: string; slot_at: Date; outcome: string; reason: string | null; run_id: string | null; decided_at: Date }>(
      `SELECT schedule_id, slot_at, outcome, reason, run_id, decided_at FROM session_schedule_firings WHERE schedule_id = ANY($1)`, [scheduleIds])
    const { rows: runs } = await db.query<{ id: string; schedule_id: string; status: string; error_code: string | null }>(
      `SELECT id, schedule_id, status, error_code FROM runs WHERE schedule_id = ANY($1)`, [scheduleIds])

    // Every recorded firing was decided once; every decision has its recorded firing.
    const key = (id: string, slot: Date) => `${id}@${slot.toISOString()}`
    expect(decided.map((f) => key(f.schedule_id, f.slot_at)).sort()).toEqual(recorded.map((f) => key(f.owner_id, f.slot_at)).sort())
    // A run per run_created firing, no run twice, no scheduled run without its firing.
    const created = decided.filter((f) => f.outcome === "run_created")
    expect(created.every((f) => f.run_id !== null)).toBe(true)
    expect(new Set(created.map((f) => f.run_id)).size).toBe(created.length)
    expect(created.map((f) => f.run_id).sort()).toEqual(runs.map((run) => run.id).sort())
    // Skipped only while the session's previous run was under way, or (decided after the pause at the
    // end of the test) because the schedule was paused.
    for (const skipped of decided.filter((f) => f.outcome === "skipped")) {
      if (skipped.reason === "paused") expect(skipped.decided_at.getTime()).toBeGreaterThanOrEqual(pausedAt.getTime())
      else expect(skipped.reason).toBe("previous_run_active")
    }
    // Every scheduled run ended done: the one cut off by the kill resumed on the survivor.
    expect(runs.filter((run) => run.status !== "done").map((run) => `${run.id} ${run.status} ${run.error_code}`)).toEqual([])
    const { rows: resumed } = await db.query(`SELECT 1 FROM run_events WHERE run_id = $1 AND type = 'run.resumed'`, [runId])
    if (!["done", "failed", "canceled"].includes(atKill.status)) expect(resumed.length).toBeGreaterThan(0)
  }, 420_000)
})
