/**
 * Track failover: two `wa serve` nodes (each an API node, a cluster runner and a scheduler) on one
 * external PostgreSQL, six monitors on a 2 s interval whose pages answer slowly, so ticks are under
 * way most of the time. The node whose process is reading a monitor's page (a tick under way on
 * it) is killed with SIGKILL; the pages change right after. Runs only where TEST_DATABASE_URL is
 * set (TEST_REDIS_URL is used when set).
 *
 * What must hold (spec "Schedules": two runners never tick the same monitor for the same slot; no
 * lost and no doubled tick):
 * - every monitor keeps ticking on the survivor;
 * - doubled: no slot has two tick runs (the UNIQUE constraint says so; checked anyway), every tick
 *   run completed exactly once (one `monitor.tick.completed` event per run, one snapshot per run),
 *   and the tick numbers of a monitor are 1..N without repeats;
 * - lost: every firing the schedulers recorded (`schedule_firings`) was dispatched and became
 *   exactly one tick run for its slot, and no scheduled tick run exists without its firing; the
 *   slots of each monitor follow the grid (anchor + k * interval) with no slot skipped, except one
 *   catch-up gap per monitor at most, which must begin no earlier than one interval before the
 *   kill. That gap is allowed because a scheduler pass that stalls for longer than an interval
 *   (handing a firing to the dead runner's shard until its lock expires) fires the overdue slot
 *   once and skips the rest, by design ("after downtime a monitor ticks once to catch up");
 * - every tick run ends: a tick cut off by the kill (its page read aborted) ends `done` on the
 *   survivor;
 * - the change made after the kill fires one tick per monitor, whose signed notification is
 *   received exactly once.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs"
import { createServer, type Server, type ServerResponse } from "node:http"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { listenOnLoopback } from "../support/listen.ts"
import { startWebhookReceiver, verifiedDelivery, type WebhookReceiver } from "../support/webhook-receiver.ts"
import { externalDatabase, type Service, startService, stopAndClean } from "../support/service.ts"
import { eventually, shardsSettled } from "./nodes.ts"

const databaseUrl = process.env["TEST_DATABASE_URL"] || undefined
const redisUrl = process.env["TEST_REDIS_URL"] || undefined

const INTERVAL_MS = 2_000
const MONITORS = 6

/** The pid of the process holding the client end of a loopback TCP connection from `port` (Linux /proc). */
const pidOfClientPort = (port: number, pids: ReadonlyArray<number>): number | undefined => {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`
  const inodes = new Set<string>()
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = ""
    try {
      text = readFileSync(table, "utf8")
    } catch {
      continue
    }
    for (const line of text.split("\n").slice(1)) {
      const columns = line.trim().split(/\s+/)
      if (columns[1]?.endsWith(hex)) inodes.add(columns[9]!)
    }
  }
  for (const pid of pids) {
    let fds: Array<string> = []
    try {
      fds = readdirSync(`/proc/${pid}/fd`)
    } catch {
      continue
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`)
        if (inodes.has(target.slice("socket:[".length, -1)) && target.startsWith("socket:[")) return pid
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined
}

describe.skipIf(databaseUrl === undefined)("scale-out: monitors whose runner dies mid-schedule", () => {
  let database: Awaited<ReturnType<typeof externalDatabase>>
  let db: pg.Client
  let a: Service
  let b: Service
  let pages: Server
  let pagesUrl: string
  let receiver: WebhookReceiver
  const content = new Map<string, string>()
  /** Page reads under way: path and the pid of the node reading. */
  const pending = new Map<ServerResponse, { path: string; pid: number | undefined }>()
  /** While set, page answers wait (in `held`): from picking the node to kill until it is dead, so its read cannot end first. */
  let holding = false
  const held: Array<() => void> = []
  /** Page reads whose reader went away before the answer, with the pid that read. */
  const aborted: Array<{ path: string; pid: number | undefined }> = []
  let pageDelayMs = 1_200

  beforeAll(async () => {
    pages = createServer((request, response) => {
      const path = request.url ?? "/"
      const read = { path, pid: pidOfClientPort(request.socket.remotePort ?? 0, [a, b].filter(Boolean).map((node) => node.process.pid!)) }
      pending.set(response, read)
      response.on("close", () => {
        if (pending.delete(response) && !response.writableFinished) aborted.push(read)
      })
      const answer = () => {
        if (response.destroyed) return
        const text = content.get(path)
        response.writeHead(text === undefined ? 404 : 200, { "content-type": "text/html; charset=utf-8" })
        response.end(text === undefined ? "not found" : `<!doctype html><html><body><main><h1>Widget</h1><p>${text}</p></main></body></html>`)
      }
      setTimeout(() => (holding ? held.push(answer) : answer()), pageDelayMs)
    })
    pagesUrl = (await listenOnLoopback(pages)).url
    receiver = await startWebhookReceiver()
    database = await externalDatabase()
    db = new pg.Client({ connectionString: database!.url })
    const env: Record<string, string> = {
      DATABASE_URL: database!.url,
      ...(redisUrl === undefined ? {} : { REDIS_URL: redisUrl }),
      WA_ALLOW_PRIVATE_NETWORKS: "true",
      WA_STEP_SCREENSHOTS: "false",
      WA_SCHEDULE_MIN_INTERVAL_SECONDS: "1",
      WA_SCHEDULER_POLL_MS: "100",
      WA_WEBHOOK_RETRY_BASE_MS: "100",
      WA_RATE_LIMIT_REQUESTS: "100000",
      WA_CLUSTER_HEALTH_CHECK_SECONDS: "1",
      // A dead runner's shards go to the survivor soon after.
      WA_CLUSTER_LOCK_EXPIRATION_SECONDS: "6",
      WA_DRAIN_SECONDS: "1"
    }
    a = await startService({ env })
    b = await startService({ env, credentials: { projectId: a.projectId, apiKey: a.apiKey } })
    await db.connect()
    // Both runners hold shards before the monitors are placed.
    await shardsSettled("the shards split over both runners", [a.url, b.url], { timeoutMs: 60_000 })
  }, 120_000)

  afterAll(async () => {
    await db?.end()
    await Promise.all([stopAndClean(a), stopAndClean(b)])
    await database?.drop()
    await new Promise((resolve) => pages?.close(resolve))
    await receiver?.close()
  }, 60_000)

  it("every monitor keeps ticking on the survivor: no slot lost beyond one catch-up, none doubled, every tick ends, one notification per change", async () => {
    const monitors: Array<{ id: string; secret: string; path: string }> = []
    for (let i = 0; i < MONITORS; i++) {
      const path = `/m${i}`
      content.set(path, "In stock.")
      const via = i % 2 === 0 ? a : b
      const created = await via.request("POST", `/v1/projects/${via.projectId}/track/monitors`, {
        body: {
          intent: `Tell me when widget ${i} sells out`,
          notify_channel: { kind: "callback_url", url: `${receiver.url}${path}` },
          schedule: { kind: "interval", interval_seconds: INTERVAL_MS / 1000 },
          target_urls: [`${pagesUrl}${path}`]
        }
      })
      expect(created.status, created.text).toBe(201)
      monitors.push({ id: created.json.id, secret: created.json.notify_secret, path })
    }
    const ids = monitors.map((monitor) => monitor.id)
    const doneTicks = async (after = 0) => {
      const { rows } = await db.query<{ monitor_id: string; n: string }>(
        `SELECT monitor_id, count(*)::text AS n FROM monitor_runs
         WHERE monitor_id = ANY($1) AND trigger = 'schedule' AND status = 'done' AND started_at > to_timestamp($2 / 1000.0)
         GROUP BY monitor_id`,
        [ids, after]
      )
      return new Map(rows.map((row) => [row.monitor_id, Number(row.n)]))
    }
    await eventually("two finished ticks of every monitor", async () => {
      const done = await doneTicks()
      return ids.every((id) => (done.get(id) ?? 0) >= 2) ? true : undefined
    }, { timeoutMs: 30_000 })

    // Kill a node that is reading a page (a tick is under way on it). Answers are held from the
    // pick until it is dead: on a loaded host its read could otherwise end before the kill lands.
    const victim = await eventually("a node in the middle of a tick", async () => {
      const reading = [...pending].find(([response, read]) => read.pid !== undefined && !response.writableEnded)?.[1]
      const node = [a, b].find((candidate) => candidate.process.pid === reading?.pid)
      if (node !== undefined) holding = true
      return node
    }, { everyMs: 20, timeoutMs: 15_000 })
    const survivor = victim === a ? b : a
    await victim.kill()
    const killAt = Date.now()
    pageDelayMs = 300
    for (const monitor of monitors) content.set(monitor.path, "Sold out.")
    holding = false
    for (const answer of held.splice(0)) answer()

    // The survivor ticks every monitor again, three times; every recorded firing was dispatched
    // and no tick is under way.
    await eventually("three ticks of every monitor after the kill, every firing dispatched, no tick under way", async () => {
      const done = await doneTicks(killAt)
      if (!ids.every((id) => (done.get(id) ?? 0) >= 3)) return undefined
      const { rows } = await db.query(
        `SELECT (SELECT count(*) FROM schedule_firings WHERE owner_kind = 'monitor' AND owner_id = ANY($1) AND dispatched_at IS NULL)
              + (SELECT count(*) FROM monitor_runs WHERE monitor_id = ANY($1) AND status = 'running') AS open`,
        [ids]
      )
      return Number(rows[0].open) === 0 ? true : undefined
    }, { timeoutMs: 45_000 })
    // Stop the schedules, so what is compared below no longer moves. A slot fired as the pause
    // lands is recorded and its tick skipped (the monitor is paused by then).
    const pausedAt = Date.now()
    for (const id of ids) {
      const paused = await survivor.request("PATCH", `/v1/projects/${survivor.projectId}/track/monitors/${id}`, { body: { action: "pause" } })
      expect(paused.status, paused.text).toBe(200)
    }
    await eventually("the last ticks end and the last firings are dispatched", async () => {
      const { rows } = await db.query(
        `SELECT (SELECT count(*) FROM schedule_firings WHERE owner_kind = 'monitor' AND owner_id = ANY($1) AND dispatched_at IS NULL)
              + (SELECT count(*) FROM monitor_runs WHERE monitor_id = ANY($1) AND status = 'running') AS open`,
        [ids]
      )
      return Number(rows[0].open) === 0 ? true : undefined
    }, { timeoutMs: 20_000 })

    // A tick was cut off on the killed node (its page read aborted), and it ended on the survivor.
    const cut = aborted.filter((read) => read.pid === victim.process.pid)
    expect(cut.length).toBeGreaterThan(0)

    const { rows: all } = await db.query<{ id: string; monitor_id: string; n: number | null; slot_at: Date | null; trigger: string; status: string; created_at: Date; started_at: Date; finished_at: Date; fired: boolean }>(
      `SELECT id, monitor_id, n, slot_at, trigger, status, created_at, started_at, finished_at, fired FROM monitor_runs WHERE monitor_id = ANY($1)`,
      [ids]
    )
    // Every tick run ended: done, or skipped for a slot fired as the monitors were paused.
    expect(all.filter((run) => run.status !== "done" && !(run.status === "skipped" && run.created_at.getTime() >= pausedAt)).map((run) => `${run.id} ${run.status}`)).toEqual([])
    const runs = all.filter((run) => run.status === "done")
    const { rows: firings } = await db.query<{ owner_id: string; slot_at: Date; dispatched_at: Date | null }>(
      `SELECT owner_id, slot_at, dispatched_at FROM schedule_firings WHERE owner_kind = 'monitor' AND owner_id = ANY($1)`,
      [ids]
    )
    const { rows: completions } = await db.query<{ run_id: string; n: string }>(
      `SELECT data->>'run_id' AS run_id, count(*)::text AS n FROM monitor_events
       WHERE monitor_id = ANY($1) AND type = 'monitor.tick.completed' GROUP BY 1`,
      [ids]
    )
    const { rows: snapshots } = await db.query<{ run_id: string }>(`SELECT run_id FROM monitor_snapshots WHERE monitor_id = ANY($1)`, [ids])
    const completed = new Map(completions.map((row) => [row.run_id, Number(row.n)]))

    // Every tick run completed exactly once, with one snapshot.
    for (const run of runs) expect(completed.get(run.id), `completions of ${run.id}`).toBe(1)
    expect(snapshots.map((row) => row.run_id).sort()).toEqual(runs.map((run) => run.id).sort())
    // The ticks cut off by the kill (their monitors' reads aborted) were taken up again on the
    // survivor: started before the kill, started again (`resumed`), done.
    const { rows: resumptions } = await db.query<{ monitor_id: string; run_id: string }>(
      `SELECT monitor_id, data->>'run_id' AS run_id FROM monitor_events
       WHERE monitor_id = ANY($1) AND type = 'monitor.tick.started' AND (data->>'resumed')::boolean`,
      [ids]
    )
    for (const path of new Set(cut.map((read) => read.path))) {
      const monitor = monitors.find((m) => m.path === path)!
      const taken = runs.filter((run) => run.monitor_id === monitor.id && run.started_at.getTime() < killAt && resumptions.some((r) => r.run_id === run.id))
      expect(taken, `the cut-off tick of ${monitor.id}`).toHaveLength(1)
    }

    for (const monitor of monitors) {
      const own = runs.filter((run) => run.monitor_id === monitor.id)
      const numbers = own.map((run) => run.n!).sort((x, y) => x - y)
      expect(numbers, `tick numbers of ${monitor.id}`).toEqual(numbers.map((_, i) => i + 1))
      const slots = all.filter((run) => run.monitor_id === monitor.id).filter((run) => run.trigger === "schedule").map((run) => run.slot_at!.getTime()).sort((x, y) => x - y)
      const slotList = slots.map((slot) => new Date(slot).toISOString()).join(", ")
      // No slot doubled; the firings and the tick runs name the same slots, every firing dispatched.
      expect(new Set(slots).size, `slots of ${monitor.id}: ${slotList}`).toBe(slots.length)
      const fired = firings.filter((firing) => firing.owner_id === monitor.id)
      expect(fired.map((firing) => firing.slot_at.getTime()).sort((x, y) => x - y), `firings vs runs of ${monitor.id}`).toEqual(slots)
      expect(fired.every((firing) => firing.dispatched_at !== null)).toBe(true)
      // On the grid, none skipped but for one catch-up gap at most, not before the kill's interval.
      for (const slot of slots) expect((slot - slots[0]!) % INTERVAL_MS, `slots of ${monitor.id}: ${slotList}`).toBe(0)
      const gaps = slots.slice(1).map((slot, i) => ({ from: slots[i]!, size: slot - slots[i]! })).filter((gap) => gap.size !== INTERVAL_MS)
      expect(gaps.length, `slots of ${monitor.id} (kill at ${new Date(killAt).toISOString()}): ${slotList}`).toBeLessThanOrEqual(1)
      for (const gap of gaps) expect(gap.from, `gap in ${slotList}`).toBeGreaterThanOrEqual(killAt - INTERVAL_MS)
      // One tick per monitor fired on the change, and its notification came exactly once.
      const firedRuns = own.filter((run) => run.fired)
      expect(firedRuns, `fired ticks of ${monitor.id}`).toHaveLength(1)
      const deliveries = await eventually(`the notification of ${monitor.id}`, async () => {
        const ours = receiver.received.filter((entry) => entry.body.includes(monitor.id))
        return ours.length > 0 ? ours : undefined
      }, { timeoutMs: 20_000 })
      expect(deliveries).toHaveLength(1)
      const payload = verifiedDelivery(monitor.secret, deliveries[0]!)
      expect(payload.data).toMatchObject({ monitor_id: monitor.id, run_id: firedRuns[0]!.id, changed: true })
    }
  }, 150_000)
})
