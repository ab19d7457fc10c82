/**
 * Scheduled DoAnything sessions at scale: N sessions with an interval schedule (default 1,000 at
 * 60 s) on one runner (`node src/main.ts serve`, embedded PostgreSQL in a temp data dir), driven
 * by a loopback scripted model that answers `done` at once.
 *
 * Phases: creation (N × POST .../do_anything/sessions with `schedule`, `--concurrency` in flight;
 * each session's first run runs at once), a warm-up of one interval after the last creation, then
 * a window of `window` seconds. For every firing whose slot lies in the window (read from the
 * database after a settle time):
 *   - recorded: schedule_firings.fired_at − slot (the scheduler's claim);
 *   - decided:  session_schedule_firings.decided_at − slot (the handler's transaction: cap count,
 *     previous-run check, run insert) — the firing lateness of the goal;
 *   - started:  runs.started_at − slot (the Session entity took the run), for firings that made one;
 * plus outcomes (run_created / skipped by reason) and the CPU of the service and of the machine.
 *
 *   node bench/do-schedules.ts [N=1000] [window-seconds=120] [--interval=60] [--concurrency=16]
 *       [--settle=10] [--browser=none|system]
 *
 *   --browser=none (default) points CHROMIUM_PATH at a missing binary: every run fails at once
 *   (browser_unavailable) after the firing made it, so the figures are the scheduling path's, not
 *   1,000 Chromium contexts a minute on a shared machine. --browser=system runs the runs for real
 *   (keep_alive false: each releases its browser context when done).
 *
 * Goal (issue 13): p99 firing lateness <= 2 s. Loopback only; the data dir is removed at the end.
 */
import { readFileSync } from "node:fs"
import { startScriptedModel } from "../test/fixtures/model/scripted-model.ts"
import { embeddedDatabaseClient, startService, stopAndClean } from "../test/support/service.ts"

const args = process.argv.slice(2)
const positional = args.filter((a) => !a.startsWith("--"))
const option = (name: string, fallback: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback

const N = Number(positional[0] ?? 1_000)
const WINDOW_S = Number(positional[1] ?? 120)
const INTERVAL_S = Number(option("interval", "60"))
const CONCURRENCY = Number(option("concurrency", "16"))
const SETTLE_S = Number(option("settle", "10"))
const BROWSER = option("browser", "none")
const GOAL_P99_MS = 2_000

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const quantile = (sorted: ArrayLike<number>, q: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
const stats = (values: Array<number>) => {
  const sorted = Float64Array.from(values).sort()
  return { n: sorted.length, p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95), p99: quantile(sorted, 0.99), max: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1]! }
}
const ms = (x: number) => Number.isNaN(x) ? "n/a" : `${Math.round(x)} ms`
const show = (s: ReturnType<typeof stats>) => `p50 ${ms(s.p50)}, p95 ${ms(s.p95)}, p99 ${ms(s.p99)}, max ${ms(s.max)} (n=${s.n})`

const cpuSeconds = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return 0
  }
}
const machineCpu = () => {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number)
  const total = fields.reduce((a, b) => a + b, 0)
  return { busy: total - fields[3]! - (fields[4] ?? 0), total }
}

const model = await startScriptedModel(() => ({ tool: "done", args: { output: "checked" } }))
const service = await startService({
  env: {
    WA_MODEL_BASE_URL: model.baseUrl,
    WA_MODEL: "scripted",
    WA_ALLOW_PRIVATE_NETWORKS: "true",
    WA_STEP_SCREENSHOTS: "false",
    WA_MAX_CONCURRENT_SESSIONS: String(N + 100),
    WA_RATE_LIMIT_REQUESTS: "1000000",
    WA_SCHEDULED_CAP: String(N + 100),
    WA_SCHEDULE_MIN_INTERVAL_SECONDS: "1",
    ...(BROWSER === "none" ? { CHROMIUM_PATH: "/nonexistent/chromium", WA_BROWSER: "system" } : {})
  }
})
const db = await embeddedDatabaseClient(service.dataDir)
try {
  console.log(`do-schedules: ${N} sessions, interval ${INTERVAL_S} s, window ${WINDOW_S} s, browser ${BROWSER} (measured under load: the machine is shared)`)
  const createdAt = Date.now()
  let next = 0
  let failed = 0
  let firstFailure = ""
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < N) {
      const i = next++
      const response = await service.request("POST", `/v1/projects/${service.projectId}/do_anything/sessions`, {
        body: { instructions: `Check item ${i}`, keep_alive: BROWSER === "none", schedule: { kind: "interval", interval_seconds: INTERVAL_S } }
      })
      if (response.status !== 201) {
        failed++
        firstFailure ||= `${response.status} ${response.text}`
      }
    }
  }))
  const creationS = (Date.now() - createdAt) / 1000
  console.log(`creation: ${N - failed} sessions in ${creationS.toFixed(1)} s (${((N - failed) / creationS).toFixed(0)}/s), ${failed} failed${firstFailure === "" ? "" : ` (first: ${firstFailure.slice(0, 300)})`}`)

  await sleep(INTERVAL_S * 1000)
  const windowStart = new Date()
  const cpu0 = { service: cpuSeconds(service.process.pid!), machine: machineCpu() }
  await sleep(WINDOW_S * 1000)
  const windowEnd = new Date()
  const cpu1 = { service: cpuSeconds(service.process.pid!), machine: machineCpu() }
  await sleep(SETTLE_S * 1000)

  const { rows } = await db.query<{ slot_at: Date; fired_at: Date | null; decided_at: Date | null; outcome: string | null; reason: string | null; started_at: Date | null; created_at: Date | null }>(
    `SELECT f.slot_at, f.fired_at, d.decided_at, d.outcome, d.reason, r.started_at, r.created_at
     FROM schedule_firings f
     LEFT JOIN session_schedule_firings d ON d.schedule_id = f.owner_id AND d.slot_at = f.slot_at
     LEFT JOIN runs r ON r.id = d.run_id
     WHERE f.owner_kind = 'session_schedule' AND f.slot_at >= $1 AND f.slot_at < $2`,
    [windowStart, windowEnd]
  )
  const due = N * WINDOW_S / INTERVAL_S
  const outcomes = new Map<string, number>()
  for (const row of rows) {
    const key = row.outcome === null ? "undecided" : row.outcome === "skipped" ? `skipped:${row.reason}` : row.outcome
    outcomes.set(key, (outcomes.get(key) ?? 0) + 1)
  }
  const late = (pick: (row: typeof rows[number]) => Date | null) =>
    stats(rows.flatMap((row) => pick(row) === null ? [] : [pick(row)!.getTime() - row.slot_at.getTime()]))
  const decided = late((row) => row.decided_at)
  console.log(`slots due in the window: ~${Math.round(due)}; firings recorded: ${rows.length}; outcomes: ${[...outcomes].map(([k, v]) => `${k} ${v}`).join(", ")}`)
  console.log(`lateness slot -> firing recorded: ${show(late((row) => row.fired_at))}`)
  console.log(`lateness slot -> firing decided (run made or skip recorded): ${show(decided)}`)
  console.log(`lateness slot -> run row created: ${show(late((row) => row.created_at))}`)
  console.log(`lateness slot -> run started by the Session entity: ${show(late((row) => row.started_at))}`)
  const wall = (windowEnd.getTime() - windowStart.getTime()) / 1000
  const machineBusy = (cpu1.machine.busy - cpu0.machine.busy) / Math.max(1, cpu1.machine.total - cpu0.machine.total)
  console.log(`CPU over the window: service ${((cpu1.service - cpu0.service) / wall).toFixed(2)} cores; machine busy ${(machineBusy * 100).toFixed(0)} % (all cores, shared)`)
  console.log(`goal p99 firing lateness <= ${GOAL_P99_MS} ms: ${decided.p99 <= GOAL_P99_MS ? "met" : "NOT met"} (p99 ${ms(decided.p99)})`)
} finally {
  await db.end()
  await stopAndClean(service)
  await model.close()
}
