/**
 * Track at scale: N direct-mode fingerprint monitors on one runner (`node src/main.ts serve`,
 * embedded PostgreSQL in a temp data dir), each watching its own page of a local fixture site
 * (node:http on loopback, small static HTML pages, no scripts, so every read is a plain HTTP
 * fetch + the fast HTML text extraction), interval `--interval` seconds, console_inbox channel.
 *
 * Phases:
 *   1. creation: N × POST /v1/projects/{pid}/track/monitors with `--concurrency` requests in flight
 *      (each monitor's first tick, the baseline, runs at once, while the others are still being
 *      created);
 *   2. warm-up: `--warmup` seconds (default one interval) after the last creation, so the burst of
 *      first ticks is over; reported separately ("first ticks");
 *   3. the window: `window` seconds of steady state. Measured:
 *      - tick lateness = monitor_runs.started_at − slot_at of every scheduled tick whose slot lies
 *        in the window (read from the database after a settle time), p50/p95/p99/max, split into
 *        its stages: slot → firing recorded by the scheduler (schedule_firings.fired_at), → tick
 *        row created by the handler (monitor_runs.created_at), → started by the Monitor entity;
 *      - slots due in the window (from each schedule's anchor) vs. ticks recorded / started /
 *        failed; tick duration (finished_at − started_at);
 *      - ticks/s sustained (ticks finished in the window / window) vs. the rate needed (N / interval);
 *      - CPU of the service process (user+sys seconds per wall second, /proc/PID/stat) and of the
 *        embedded PostgreSQL (postmaster and its children), and the machine's total busy CPU
 *        (/proc/stat) and load average, since the machine is shared;
 *      - RSS of the service process (/proc/PID/status): at window start, end, max (sampled 1/s);
 *      - PostgreSQL transactions and rows written per tick (pg_stat_database, pg_stat_user_tables).
 *
 *   node bench/track-scale.ts [N=10000] [window-seconds=180] [--interval=60] [--warmup=<interval>]
 *       [--concurrency=16] [--settle=15] [--changing=0] [--pages=1] [--profile]
 *   (or TRACK_SCALE_N, TRACK_SCALE_WINDOW_SECONDS in the environment)
 *
 *   --changing=F  a fraction F of the pages changes every interval (diff + inbox notification);
 *                 0 by default: every tick is a fetch, a fingerprint and "no change".
 *   --profile     opens the service's inspector on a loopback port (SIGUSR1, --inspect-port=0) and,
 *                 over the window, records a CPU profile (top functions and files by self time; the
 *                 .cpuprofile is kept), the event-loop delay (perf_hooks.monitorEventLoopDelay,
 *                 evaluated in the service) and a sampling heap profile (live memory by allocation site).
 *   --sql-activity  samples pg_stat_activity of the service's connections every 50 ms over the
 *                 window: states (active, idle in transaction, …), wait events, the busiest statements.
 *   --sql-log     logs every statement during the window (ALTER SYSTEM log_statement = 'all' on the
 *                 bench's own embedded database) and counts statements per finished tick by text.
 *                 Logging costs PostgreSQL time: use it for counting, not for the latency figures.
 *
 * Goal (issue 11): p99 lateness <= 2 s. Loopback only; the data dir is removed at the end.
 */
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { embeddedDatabaseClient, startService, stopAndClean } from "../test/support/service.ts"

const args = process.argv.slice(2)
const positional = args.filter((a) => !a.startsWith("--"))
const option = (name: string, fallback: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const flag = (name: string) => args.includes(`--${name}`)

const N = Number(positional[0] ?? process.env["TRACK_SCALE_N"] ?? 10_000)
const WINDOW_S = Number(positional[1] ?? process.env["TRACK_SCALE_WINDOW_SECONDS"] ?? 180)
const INTERVAL_S = Number(option("interval", "60"))
const WARMUP_S = Number(option("warmup", String(INTERVAL_S)))
const CONCURRENCY = Number(option("concurrency", "16"))
const SETTLE_S = Number(option("settle", "15"))
const CHANGING = Number(option("changing", "0"))
const PAGES_PER_MONITOR = Number(option("pages", "1"))
const PROFILE = flag("profile")
const SQL_ACTIVITY = flag("sql-activity")
const SQL_LOG = flag("sql-log")
const GOAL_P99_MS = 2_000

const CLK_TCK = 100
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const round1 = (x: number) => Math.round(x * 10) / 10
const round2 = (x: number) => Math.round(x * 100) / 100
const quantile = (sorted: ArrayLike<number>, q: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
const stats = (values: Array<number>) => {
  const sorted = Float64Array.from(values).sort()
  return { n: sorted.length, p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95), p99: quantile(sorted, 0.99), max: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1]! }
}
const ms = (x: number) => Number.isNaN(x) ? "n/a" : x >= 10_000 ? `${round1(x / 1000)} s` : `${Math.round(x)} ms`
const showStats = (s: ReturnType<typeof stats>) => `p50 ${ms(s.p50)}, p95 ${ms(s.p95)}, p99 ${ms(s.p99)}, max ${ms(s.max)} (n=${s.n})`

// ---------------------------------------------------------------------------------------------
// /proc sampling
// ---------------------------------------------------------------------------------------------

/** user+sys CPU seconds of a process (0 when it is gone). */
const cpuSeconds = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    // fields[0] is field 3 (state); utime is field 14, stime field 15.
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK
  } catch {
    return 0
  }
}
const parentOf = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
  } catch {
    return -1
  }
}
const rssMb = (pid: number) => {
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))
    return line === undefined ? Number.NaN : Number(line.split(/\s+/)[1]) / 1024
  } catch {
    return Number.NaN
  }
}
/** The postmaster and its children (backends come and go; their CPU is counted while they live). */
const postgresPids = (postmaster: number) => {
  const pids = [postmaster]
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry)
    if (Number.isInteger(pid) && parentOf(pid) === postmaster) pids.push(pid)
  }
  return pids
}
/** Machine CPU: busy and total jiffies over all cores. */
const machineCpu = () => {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number)
  const total = fields.reduce((a, b) => a + b, 0)
  const idle = fields[3]! + (fields[4] ?? 0)
  return { busy: total - idle, total }
}
const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")

/**
 * CPU of the embedded PostgreSQL: short-lived backends exit between samples, so this tracks every
 * child seen (its last CPU reading) plus the postmaster's cumulative children time (cutime+cstime,
 * which includes reaped children).
 */
const postgresCpuTracker = (postmaster: number) => {
  const lastSeen = new Map<number, number>()
  const reaped = () => {
    try {
      const stat = readFileSync(`/proc/${postmaster}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      return (Number(fields[13]) + Number(fields[14])) / CLK_TCK
    } catch {
      return 0
    }
  }
  const sample = () => {
    const live = new Set(postgresPids(postmaster))
    for (const pid of live) lastSeen.set(pid, cpuSeconds(pid))
    for (const pid of [...lastSeen.keys()]) if (!live.has(pid)) lastSeen.delete(pid)
    let sum = reaped()
    for (const value of lastSeen.values()) sum += value
    return sum
  }
  return { sample }
}

// ---------------------------------------------------------------------------------------------
// the fixture site
// ---------------------------------------------------------------------------------------------

const pageVersion = new Map<number, number>()
let fixtureRequests = 0
const pageHtml = (i: number) => {
  const version = pageVersion.get(i) ?? 0
  return `<!doctype html><html><head><title>Item ${i}</title><meta charset="utf-8"></head><body>` +
    `<nav><a href="/">Home</a> | <a href="/cart">Cart</a></nav><main><h1>Item ${i}</h1>` +
    `<p>This is the product page of item number ${i}. It is a small static page served from loopback.</p>` +
    `<p>Price: ${100 + (i % 50)} dollars. Stock: ${version % 2 === 0 ? "in stock" : "sold out"}. Revision ${version}.</p>` +
    `<ul><li>Weight: ${i % 7 + 1} kg</li><li>Colour: ${["red", "green", "blue"][i % 3]}</li><li>Ships in ${i % 5 + 1} days</li></ul>` +
    `<p>Updated 2026-11-22 10:04:11 UTC.</p></main><footer>Fixture site</footer></body></html>`
}
const startFixtureSite = async () => {
  const server: Server = createServer((request, response) => {
    fixtureRequests++
    const match = /^\/p\/(\d+)$/.exec(request.url ?? "")
    if (match === null) {
      response.writeHead(404).end("not found")
      return
    }
    const body = pageHtml(Number(match[1]))
    response.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-length": Buffer.byteLength(body) })
    response.end(body)
  })
  server.keepAliveTimeout = 65_000
  server.maxConnections = 20_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", 4096, resolve))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

// ---------------------------------------------------------------------------------------------
// profiling over the DevTools protocol (--profile)
// ---------------------------------------------------------------------------------------------

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: ReadonlyArray<number>
}
interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
  readonly startTime: number
  readonly endTime: number
}

const inspectorSession = async (wsUrl: string) => {
  const socket = new WebSocket(wsUrl)
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true })
    socket.addEventListener("error", () => reject(new Error(`cannot connect to ${wsUrl}`)), { once: true })
  })
  let nextId = 1
  const pending = new Map<number, (result: any) => void>()
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: unknown }
    if (message.id !== undefined) pending.get(message.id)?.(message.error !== undefined ? { error: message.error } : message.result)
  })
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<any>((resolve) => {
      const id = nextId++
      pending.set(id, resolve)
      socket.send(JSON.stringify({ id, method, params }))
    })
  return { call, close: () => socket.close() }
}

const summariseProfile = (profile: CpuProfile) => {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const selfUs = new Map<number, number>()
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
  }
  const total = profile.endTime - profile.startTime
  const byFunction = new Map<string, number>()
  const byFile = new Map<string, number>()
  const root = path.resolve(import.meta.dirname, "..")
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame
    const file = frame.url === "" ? `(${frame.functionName || "native"})` : frame.url.replace(`file://${root}/`, "").replace(/^node:/, "node:")
    const shortFile = file.replace(/^.*node_modules\//, "node_modules/")
    const fn = `${frame.functionName || "(anonymous)"} ${shortFile}:${frame.lineNumber + 1}`
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us)
    // Group node_modules by package, our code by file.
    const group = shortFile.startsWith("node_modules/")
      ? shortFile.split("/").slice(0, shortFile.startsWith("node_modules/@") ? 3 : 2).join("/") + (shortFile.includes("/effect/dist/") ? `/${shortFile.split("/dist/")[1]?.split("/")[0] ?? ""}` : "")
      : shortFile
    byFile.set(group, (byFile.get(group) ?? 0) + us)
  }
  const top = (map: Map<string, number>, count: number) =>
    [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, count).map(([name, us]) => `    ${round1((100 * us) / total).toString().padStart(5)} %  ${round1(us / 1000).toString().padStart(8)} ms  ${name}`)
  return { totalMs: total / 1000, functions: top(byFunction, 30), files: top(byFile, 25) }
}

interface HeapNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly selfSize: number
  readonly children: ReadonlyArray<HeapNode>
}
const summariseHeap = (head: HeapNode) => {
  const root = path.resolve(import.meta.dirname, "..")
  const bySite = new Map<string, number>()
  let total = 0
  const walk = (node: HeapNode, ours: string | undefined) => {
    const frame = node.callFrame
    const file = frame.url.replace(`file://${root}/`, "").replace(/^.*node_modules\//, "node_modules/")
    // Attribute to the innermost frame of our own code (src/) if any, else the frame itself.
    const here = file.startsWith("src/") ? `${frame.functionName || "(anonymous)"} ${file}:${frame.lineNumber + 1}` : ours
    if (node.selfSize > 0) {
      const key = `${frame.functionName || "(anonymous)"} ${file || "(native)"}:${frame.lineNumber + 1}${here !== undefined && !file.startsWith("src/") ? `  ← ${here}` : ""}`
      bySite.set(key, (bySite.get(key) ?? 0) + node.selfSize)
      total += node.selfSize
    }
    for (const child of node.children) walk(child, here)
  }
  walk(head, undefined)
  return {
    totalMb: total / 1048576,
    top: [...bySite.entries()].sort((a, b) => b[1] - a[1]).slice(0, 20).map(([site, bytes]) => `    ${round1(bytes / 1048576).toString().padStart(7)} MB  ${site}`)
  }
}

/** Statement text without literals and extra space, for grouping. */
const normaliseSql = (text: string) =>
  text.replace(/\s+/g, " ").replace(/'(?:[^']|'')*'/g, "?").replace(/\b\d+\b/g, "?").replace(/\$\d+/g, "?").trim().slice(0, 150)

/** pg_stat_activity of the service's connections, sampled every 50 ms. */
const activitySampler = (client: { query: (text: string) => Promise<{ rows: Array<any> }> }) => {
  const states = new Map<string, number>()
  const active = new Map<string, number>()
  const waits = new Map<string, number>()
  let samples = 0
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      const { rows } = await client.query(`SELECT state, wait_event_type, wait_event, query FROM pg_stat_activity
        WHERE application_name = 'web-agent-service' AND pid <> pg_backend_pid()`)
      samples++
      for (const row of rows) {
        states.set(row.state ?? "null", (states.get(row.state ?? "null") ?? 0) + 1)
        if (row.state === "active" || row.state === "idle in transaction") {
          const key = `${row.state === "active" ? "" : "[idle in tx, last] "}${normaliseSql(row.query ?? "")}`
          active.set(key, (active.get(key) ?? 0) + 1)
          const wait = row.wait_event === null ? `${row.state}: on CPU` : `${row.state}: ${row.wait_event_type}/${row.wait_event}`
          waits.set(wait, (waits.get(wait) ?? 0) + 1)
        }
      }
      await sleep(50)
    }
  })()
  return {
    stop: async () => {
      stopped = true
      await loop
      const avg = (n: number) => round2(n / Math.max(1, samples))
      const top = (map: Map<string, number>, count: number) => [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, count)
      return [
        `  pg_stat_activity, ${samples} samples (average connections in each state): ${top(states, 10).map(([k, v]) => `${k} ${avg(v)}`).join(", ")}`,
        `    active / idle-in-transaction by wait: ${top(waits, 8).map(([k, v]) => `${k} ${avg(v)}`).join(", ")}`,
        "    busiest statements (average connections on each):",
        ...top(active, 15).map(([k, v]) => `      ${avg(v).toString().padStart(5)}  ${k}`)
      ]
    }
  }
}

// ---------------------------------------------------------------------------------------------
// the bench
// ---------------------------------------------------------------------------------------------

const main = async () => {
  const hardStop = setTimeout(() => {
    console.error("bench: hard time limit reached")
    process.exit(3)
  }, (WARMUP_S + WINDOW_S + SETTLE_S + 1800) * 1000)
  hardStop.unref()

  console.log(`track-scale: ${N} direct-mode fingerprint monitors, interval ${INTERVAL_S} s, ${PAGES_PER_MONITOR} page(s) each, ` +
    `console_inbox; warm-up ${WARMUP_S} s, window ${WINDOW_S} s; ${CHANGING * 100}% of pages change per interval`)
  console.log(`machine: ${readFileSync("/proc/cpuinfo", "utf8").split("\n").filter((l) => l.startsWith("processor")).length} cores, load average ${loadAverage()}`)

  const site = await startFixtureSite()
  const profileDir = PROFILE ? mkdtempSync(path.join(tmpdir(), "wa-track-prof-")) : undefined
  let inspectorUrl: string | undefined
  const service = await startService({
    env: {
      WA_ALLOW_PRIVATE_NETWORKS: "true",
      WA_SCHEDULE_MIN_INTERVAL_SECONDS: String(Math.min(60, INTERVAL_S)),
      WA_RATE_LIMIT_REQUESTS: "1000000000",
      // The bench's one project holds all N monitors: the plan that allows the most per project.
      WA_DEFAULT_PLAN: "scaleup",
      ...(PROFILE ? { NODE_OPTIONS: "--inspect-port=127.0.0.1:0" } : {})
    }
  })
  if (PROFILE) {
    // The inspector is opened now (SIGUSR1, on the port --inspect-port gave: any free loopback
    // port); it prints "Debugger listening on ws://127.0.0.1:PORT/UUID" on stderr.
    const stderr: Array<string> = []
    service.process.stderr!.on("data", (chunk) => stderr.push(String(chunk)))
    service.process.kill("SIGUSR1")
    const deadline = Date.now() + 10_000
    while (inspectorUrl === undefined && Date.now() < deadline) {
      const found = /ws:\/\/127\.0\.0\.1:\d+\/[\w-]+/.exec(stderr.join(""))
      if (found !== null) inspectorUrl = found[0]
      else await sleep(100)
    }
  }
  const pid = service.process.pid!
  cleanup = () => stopAndClean(service)
  // The service logs at Info; the harness keeps every line: count them by level and message, then let them go.
  const logCounts = new Map<string, number>()
  let countLogs = false
  const trimLogs = setInterval(() => {
    if (countLogs) {
      for (const line of service.logs) {
        const key = `${line.level} ${line.message}${line.level !== "INFO" && line.level !== "DEBUG" ? ` ${JSON.stringify(line.annotations).slice(0, 160)}` : ""}`
        logCounts.set(key, (logCounts.get(key) ?? 0) + 1)
      }
    }
    service.logs.length = 0
  }, 1_000)
  const db = await embeddedDatabaseClient(service.dataDir)
  const postmaster = Number(readFileSync(path.join((() => {
    try {
      return readFileSync(path.join(service.dataDir, "postgres.location"), "utf8").trim()
    } catch {
      return path.join(service.dataDir, "postgres")
    }
  })(), "postmaster.pid"), "utf8").split("\n")[0])
  const pg = postgresCpuTracker(postmaster)
  console.log(`service pid ${pid}, RSS ${round1(rssMb(pid))} MB at start; PostgreSQL postmaster pid ${postmaster}; fixture site ${site.url}`)

  // RSS sampling for the whole run.
  let rssMax = 0
  let rssMaxWindow = 0
  let inWindow = false
  const rssTimer = setInterval(() => {
    const rss = rssMb(pid)
    rssMax = Math.max(rssMax, rss)
    if (inWindow) rssMaxWindow = Math.max(rssMaxWindow, rss)
    pg.sample()
  }, 1_000)

  // 1. creation
  const base = `${service.url}/v1/projects/${service.projectId}/track/monitors`
  const headers = { authorization: `Bearer ${service.apiKey}`, "content-type": "application/json" }
  const createLatencies: Array<number> = []
  const failures: Array<string> = []
  const cpu0 = cpuSeconds(pid)
  const pgCpu0 = pg.sample()
  const machine0 = machineCpu()
  const creationStarted = performance.now()
  let next = 0
  const worker = async () => {
    while (true) {
      const i = next++
      if (i >= N) return
      const targets = Array.from({ length: PAGES_PER_MONITOR }, (_, k) => `${site.url}/p/${i * PAGES_PER_MONITOR + k}`)
      const body = JSON.stringify({
        intent: `Tell me when item ${i} changes`,
        notify_channel: { kind: "console_inbox" },
        schedule: { kind: "interval", interval_seconds: INTERVAL_S },
        target_urls: targets
      })
      const sent = performance.now()
      try {
        const response = await fetch(base, { method: "POST", headers, body })
        const text = await response.text()
        if (response.status !== 201) failures.push(`${response.status} ${text.slice(0, 200)}`)
        else createLatencies.push(performance.now() - sent)
      } catch (error) {
        failures.push(String(error))
      }
    }
  }
  const progress = setInterval(() => process.stdout.write(`  created ${Math.min(next, N)}/${N}\r`), 5_000)
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  clearInterval(progress)
  const creationSeconds = (performance.now() - creationStarted) / 1000
  const creationCpu = cpuSeconds(pid) - cpu0
  const creationPgCpu = pg.sample() - pgCpu0
  const machine1 = machineCpu()
  const created = stats(createLatencies)
  console.log(`creation: ${createLatencies.length} monitors in ${round1(creationSeconds)} s (${Math.round(createLatencies.length / creationSeconds)}/s, ` +
    `${CONCURRENCY} in flight), POST latency ${showStats(created)}; ${failures.length} failed${failures.length > 0 ? `, first: ${failures[0]}` : ""}`)
  console.log(`  during creation (first ticks run at once too): service CPU ${round2(creationCpu / creationSeconds)} s/s, PostgreSQL ${round2(creationPgCpu / creationSeconds)} s/s, ` +
    `machine busy ${round1((100 * (machine1.busy - machine0.busy)) / (machine1.total - machine0.total))} %, RSS ${round1(rssMb(pid))} MB`)
  if (createLatencies.length === 0) throw new Error("no monitor was created")

  // Changes: a fraction of pages gets a new revision once per interval, spread over it.
  let changer: NodeJS.Timeout | undefined
  if (CHANGING > 0) {
    const perInterval = Math.round(N * PAGES_PER_MONITOR * CHANGING)
    changer = setInterval(() => {
      const i = Math.floor(Math.random() * N * PAGES_PER_MONITOR)
      pageVersion.set(i, (pageVersion.get(i) ?? 0) + 1)
    }, (INTERVAL_S * 1000) / Math.max(1, perInterval))
  }

  // 2. warm-up
  console.log(`warm-up: ${WARMUP_S} s (load average ${loadAverage()})`)
  await sleep(WARMUP_S * 1000)

  // 3. the window
  const statsQuery = async () => {
    const [database] = (await db.query(`SELECT xact_commit::bigint AS commits, tup_inserted::bigint AS inserted, tup_updated::bigint AS updated,
      tup_deleted::bigint AS deleted, tup_fetched::bigint AS fetched, blks_read::bigint AS blks_read FROM pg_stat_database WHERE datname = current_database()`)).rows
    const tables = (await db.query(`SELECT relname, n_tup_ins::bigint AS ins, n_tup_upd::bigint AS upd, n_tup_del::bigint AS del,
      coalesce(seq_scan, 0)::bigint AS seq, coalesce(idx_scan, 0)::bigint AS idx FROM pg_stat_user_tables`)).rows
    return { database, tables: new Map(tables.map((t: any) => [t.relname as string, t])) }
  }
  const windowStart = new Date()
  inWindow = true
  service.logs.length = 0
  countLogs = true
  const fixture0 = fixtureRequests
  const cpuW0 = cpuSeconds(pid)
  const pgW0 = pg.sample()
  const machineW0 = machineCpu()
  const rssStart = rssMb(pid)
  const load0 = loadAverage()
  const pgStats0 = await statsQuery()
  let profiler: Awaited<ReturnType<typeof inspectorSession>> | undefined
  if (PROFILE && inspectorUrl !== undefined) {
    profiler = await inspectorSession(inspectorUrl)
    await profiler.call("Profiler.enable")
    await profiler.call("Profiler.setSamplingInterval", { interval: 1000 })
    await profiler.call("Profiler.start")
    await profiler.call("HeapProfiler.enable")
    await profiler.call("HeapProfiler.startSampling", { samplingInterval: 32768 })
    const started = await profiler.call("Runtime.evaluate", {
      expression: `(() => { const h = process.getBuiltinModule("node:perf_hooks").monitorEventLoopDelay({ resolution: 10 }); h.enable(); globalThis.__benchLoopDelay = h; return "ok" })()`,
      returnByValue: true
    })
    if (started?.result?.value !== "ok") console.log(`profile: event-loop delay monitor not started: ${JSON.stringify(started)}`)
  } else if (PROFILE) console.log("profile: no inspector URL found; not profiling")
  const pgLogFile = path.join((() => {
    try {
      return readFileSync(path.join(service.dataDir, "postgres.location"), "utf8").trim()
    } catch {
      return path.join(service.dataDir, "postgres")
    }
  })(), "server.log")
  let pgLogOffset = 0
  if (SQL_LOG) {
    await db.query("ALTER SYSTEM SET log_statement = 'all'")
    await db.query("ALTER SYSTEM SET log_line_prefix = '%m [%p] %a '")
    await db.query("SELECT pg_reload_conf()")
    await sleep(200)
    pgLogOffset = statSync(pgLogFile).size
  }
  const activityClient = SQL_ACTIVITY ? await embeddedDatabaseClient(service.dataDir) : undefined
  const activity = activityClient === undefined ? undefined : activitySampler(activityClient)
  console.log(`window: ${WINDOW_S} s from ${windowStart.toISOString()} (load average ${load0})`)
  await sleep(WINDOW_S * 1000)
  const windowEnd = new Date()
  inWindow = false
  countLogs = false
  const cpuW1 = cpuSeconds(pid)
  const pgW1 = pg.sample()
  const machineW1 = machineCpu()
  const rssEnd = rssMb(pid)
  const load1 = loadAverage()
  const fixture1 = fixtureRequests
  const pgStats1 = await statsQuery()
  let profileSummary: ReturnType<typeof summariseProfile> | undefined
  let profileFile: string | undefined
  let loopDelay: { p50: number; p99: number; max: number; mean: number } | undefined
  let heapSummary: ReturnType<typeof summariseHeap> | undefined
  const activityLines = activity === undefined ? undefined : await activity.stop()
  await activityClient?.end()
  let statementLines: Array<string> | undefined
  if (SQL_LOG) {
    await db.query("ALTER SYSTEM RESET log_statement")
    await db.query("SELECT pg_reload_conf()")
    const text = readFileSync(pgLogFile, "utf8").slice(pgLogOffset)
    // One entry per "<time> [pid] app LOG:  statement: …" / "execute <name>: …", continued on lines without a prefix.
    const counts = new Map<string, number>()
    let current: string | undefined
    const flush = () => {
      if (current !== undefined) counts.set(normaliseSql(current), (counts.get(normaliseSql(current)) ?? 0) + 1)
      current = undefined
    }
    for (const line of text.split("\n")) {
      const entry = /^\d{4}-\d\d-\d\d [\d:.]+ \w+ \[\d+\] (\S*) (\w+):\s+(.*)$/.exec(line)
      if (entry !== null) {
        flush()
        const [, app, level, message] = entry
        if (app !== "web-agent-service" || level !== "LOG") continue
        const statement = /^(?:statement|execute [^:]*): (.*)$/.exec(message!)
        if (statement !== null) current = statement[1]!
      } else if (current !== undefined) current += " " + line
    }
    flush()
    const total = [...counts.values()].reduce((a, b) => a + b, 0)
    const ticksDone = Math.max(1, Number((await db.query(`SELECT count(*)::bigint AS n FROM monitor_runs WHERE finished_at >= $1 AND finished_at < $2`, [windowStart, windowEnd])).rows[0].n))
    statementLines = [
      `  SQL statements in the window: ${total} (${round1(total / ticksDone)} per finished tick, ${ticksDone} ticks); by text, per tick:`,
      ...[...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 30).map(([k, v]) => `    ${round2(v / ticksDone).toString().padStart(6)}  ${k}`)
    ]
  }
  if (profiler !== undefined) {
    const delay = await profiler.call("Runtime.evaluate", {
      expression: `(() => { const h = globalThis.__benchLoopDelay; h.disable(); return { p50: h.percentile(50) / 1e6, p99: h.percentile(99) / 1e6, max: h.max / 1e6, mean: h.mean / 1e6 } })()`,
      returnByValue: true
    })
    loopDelay = delay?.result?.value
    const heap = await profiler.call("HeapProfiler.stopSampling") as { profile: { head: HeapNode } }
    if (heap?.profile?.head !== undefined) heapSummary = summariseHeap(heap.profile.head)
    const { profile } = await profiler.call("Profiler.stop") as { profile: CpuProfile }
    profiler.close()
    profileFile = path.join(profileDir!, "service-window.cpuprofile")
    writeFileSync(profileFile, JSON.stringify(profile))
    profileSummary = summariseProfile(profile)
  }
  const windowSeconds = (windowEnd.getTime() - windowStart.getTime()) / 1000

  // Let ticks of the window's last slots start and end.
  await sleep(SETTLE_S * 1000)
  const queriedAt = new Date()

  const ticks = (await db.query(`
    SELECT r.status, r.started_at IS NOT NULL AS started,
      extract(epoch FROM (r.started_at - r.slot_at)) * 1000 AS late_ms,
      extract(epoch FROM (f.fired_at - r.slot_at)) * 1000 AS claim_ms,
      extract(epoch FROM (r.created_at - f.fired_at)) * 1000 AS handler_ms,
      extract(epoch FROM (r.started_at - r.created_at)) * 1000 AS delivery_ms,
      extract(epoch FROM (r.finished_at - r.started_at)) * 1000 AS run_ms,
      extract(epoch FROM ($3::timestamptz - r.slot_at)) * 1000 AS waiting_ms,
      r.error_code
    FROM monitor_runs r
    LEFT JOIN schedule_firings f ON f.owner_kind = 'monitor' AND f.owner_id = r.monitor_id AND f.slot_at = r.slot_at
    WHERE r.trigger = 'schedule' AND r.slot_at >= $1 AND r.slot_at < $2`, [windowStart, windowEnd, queriedAt])).rows as Array<Record<string, any>>
  // Slots due in the window, from each schedule's anchor (slots are anchor + k × interval).
  const [{ expected }] = (await db.query(`
    SELECT coalesce(sum(greatest(0,
      ceil(extract(epoch FROM ($2::timestamptz - anchor_at)) / $3) - ceil(extract(epoch FROM ($1::timestamptz - anchor_at)) / $3)
    )), 0)::bigint AS expected
    FROM schedules WHERE owner_kind = 'monitor' AND NOT paused`, [windowStart, windowEnd, INTERVAL_S])).rows
  const finishedInWindow = (await db.query(`
    SELECT count(*)::bigint AS n, count(*) FILTER (WHERE status = 'failed')::bigint AS failed
    FROM monitor_runs WHERE finished_at >= $1 AND finished_at < $2`, [windowStart, windowEnd])).rows[0]
  const firstTicks = (await db.query(`
    SELECT extract(epoch FROM (started_at - slot_at)) * 1000 AS late_ms, extract(epoch FROM (finished_at - slot_at)) * 1000 AS done_ms, status
    FROM monitor_runs WHERE trigger = 'schedule' AND n = 1`)).rows as Array<Record<string, any>>
  const errors = (await db.query(`
    SELECT error_code, count(*)::int AS n, min(error_detail) AS example FROM monitor_runs
    WHERE status = 'failed' GROUP BY error_code ORDER BY n DESC LIMIT 5`)).rows

  const started = ticks.filter((t) => t.started)
  const notStarted = ticks.filter((t) => !t.started)
  const lateness = stats(started.map((t) => Number(t.late_ms)))
  // A tick not started by the time of the query is at least that late.
  const latenessWithWaiting = stats([...started.map((t) => Number(t.late_ms)), ...notStarted.map((t) => Number(t.waiting_ms))])
  const numbers = (key: string) => ticks.map((t) => t[key]).filter((v) => v !== null && v !== undefined).map(Number)
  const failedInWindow = ticks.filter((t) => t.status === "failed").length
  const cpuPerSecond = (cpuW1 - cpuW0) / windowSeconds
  const pgPerSecond = (pgW1 - pgW0) / windowSeconds
  const machineBusy = (machineW1.busy - machineW0.busy) / (machineW1.total - machineW0.total)
  const ticksPerSecond = Number(finishedInWindow.n) / windowSeconds
  const first = stats(firstTicks.filter((t) => t.late_ms !== null).map((t) => Number(t.late_ms)))
  const firstDone = stats(firstTicks.filter((t) => t.done_ms !== null).map((t) => Number(t.done_ms)))

  const perTick = (a: any, b: any, key: string) => round1((Number(b[key]) - Number(a[key])) / Math.max(1, Number(finishedInWindow.n)))
  const tableDeltas = [...pgStats1.tables.entries()]
    .map(([name, after]: [string, any]) => {
      const before: any = pgStats0.tables.get(name) ?? { ins: 0, upd: 0, del: 0, seq: 0, idx: 0 }
      return { name, ins: after.ins - before.ins, upd: after.upd - before.upd, del: after.del - before.del, seq: after.seq - before.seq, idx: after.idx - before.idx }
    })
    .filter((t) => t.ins + t.upd + t.del + t.seq > 0)
    .sort((a, b) => b.ins + b.upd + b.del - (a.ins + a.upd + a.del))

  console.log("")
  console.log(`== track-scale: ${createLatencies.length} monitors × ${PAGES_PER_MONITOR} page(s), interval ${INTERVAL_S} s (needs ${round1(createLatencies.length / INTERVAL_S)} ticks/s) ==`)
  console.log(`creation: ${round1(creationSeconds)} s (${Math.round(createLatencies.length / creationSeconds)} monitors/s), POST p50 ${ms(created.p50)}, p99 ${ms(created.p99)}`)
  console.log(`first ticks (the baseline of each monitor, at creation): start lateness ${showStats(first)}; slot→finished p50 ${ms(firstDone.p50)}, max ${ms(firstDone.max)}`)
  console.log(`window ${round1(windowSeconds)} s, ${WARMUP_S} s after the last creation (+${SETTLE_S} s settle before reading):`)
  console.log(`  slots due ${expected}, tick runs recorded ${ticks.length}, started ${started.length}, not started by ${SETTLE_S} s after the window ${notStarted.length}, failed ${failedInWindow}`)
  console.log(`  tick lateness (started_at − slot_at): ${showStats(lateness)}`)
  if (notStarted.length > 0) console.log(`  …counting the unstarted ticks as late as they were at the query: ${showStats(latenessWithWaiting)}`)
  console.log(`    stages: slot→firing recorded ${showStats(stats(numbers("claim_ms")))}`)
  console.log(`            firing→tick row created ${showStats(stats(numbers("handler_ms")))}`)
  console.log(`            tick row→started by the entity ${showStats(stats(numbers("delivery_ms")))}`)
  console.log(`  tick duration (finished_at − started_at): ${showStats(stats(numbers("run_ms")))}`)
  console.log(`  ticks/s sustained: ${round1(ticksPerSecond)} finished (${finishedInWindow.failed} failed) vs ${round1(Number(expected) / windowSeconds)} slots due per s in the window ` +
    `(${round1(createLatencies.length / INTERVAL_S)} on average over an interval); ` +
    `fixture page requests ${round1((fixture1 - fixture0) / windowSeconds)}/s`)
  console.log(`  CPU: service ${round2(cpuPerSecond)} s/s (${round1((1000 * cpuPerSecond) / Math.max(1e-9, ticksPerSecond))} ms per tick), ` +
    `PostgreSQL ${round2(pgPerSecond)} s/s (${round1((1000 * pgPerSecond) / Math.max(1e-9, ticksPerSecond))} ms per tick); ` +
    `machine busy ${round1(100 * machineBusy)} % of 2 cores (others ${round2(Math.max(0, machineBusy * 2 - cpuPerSecond - pgPerSecond))} s/s); load average ${load0} → ${load1}`)
  console.log(`  RSS (service): window start ${round1(rssStart)} MB, end ${round1(rssEnd)} MB, max in window ${round1(rssMaxWindow)} MB, max overall ${round1(rssMax)} MB`)
  const dbA = pgStats0.database
  const dbB = pgStats1.database
  console.log(`  PostgreSQL per finished tick: ${perTick(dbA, dbB, "commits")} commits, ${perTick(dbA, dbB, "inserted")} rows inserted, ` +
    `${perTick(dbA, dbB, "updated")} updated, ${perTick(dbA, dbB, "deleted")} deleted, ${perTick(dbA, dbB, "fetched")} fetched`)
  console.log(`    by table (ins/upd/del per tick; seq scans in window): ${tableDeltas.slice(0, 10).map((t) =>
    `${t.name} ${round1(t.ins / Math.max(1, Number(finishedInWindow.n)))}/${round1(t.upd / Math.max(1, Number(finishedInWindow.n)))}/${round1(t.del / Math.max(1, Number(finishedInWindow.n)))}${t.seq > 0 ? ` seq ${t.seq}` : ""}`).join("; ")}`)
  const logLines = [...logCounts.entries()].sort((a, b) => b[1] - a[1])
  console.log(`  service log lines in the window: ${logLines.reduce((a, [, n]) => a + n, 0)}; by level and message: ${logLines.slice(0, 8).map(([k, n]) => `${n} × ${k}`).join("; ")}`)
  if (errors.length > 0) console.log(`  failed ticks by code: ${errors.map((e: any) => `${e.error_code} × ${e.n} (${String(e.example).slice(0, 160)})`).join("; ")}`)
  const verdict = lateness.p99 <= GOAL_P99_MS && notStarted.length === 0 && ticks.length >= Number(expected)
  console.log(`  goal p99 lateness <= ${GOAL_P99_MS / 1000} s: ${verdict ? "met" : "NOT met"}`)
  if (profileSummary !== undefined) {
    console.log(`\nCPU profile of the service over the window (${round1(profileSummary.totalMs / 1000)} s; kept at ${profileFile}):`)
    console.log("  by package / file (self time):")
    for (const line of profileSummary.files) console.log(line)
    console.log("  by function (self time):")
    for (const line of profileSummary.functions) console.log(line)
  }
  if (loopDelay !== undefined) {
    console.log(`event-loop delay of the service over the window: mean ${round1(loopDelay.mean)} ms, p50 ${round1(loopDelay.p50)} ms, p99 ${round1(loopDelay.p99)} ms, max ${round1(loopDelay.max)} ms`)
  }
  if (heapSummary !== undefined) {
    console.log(`live heap allocated during the window and still held at its end (sampling): ${round1(heapSummary.totalMb)} MB; top sites:`)
    for (const line of heapSummary.top) console.log(line)
  }
  if (activityLines !== undefined) for (const line of activityLines) console.log(line)
  if (statementLines !== undefined) for (const line of statementLines) console.log(line)

  clearInterval(rssTimer)
  clearInterval(trimLogs)
  if (changer !== undefined) clearInterval(changer)
  await db.end()
  await stopAndClean(service)
  site.server.closeAllConnections()
  await new Promise((resolve) => site.server.close(resolve))
  process.exit(0)
}

/** Stops the service (and removes its data dir) when the bench fails half-way. */
let cleanup: (() => Promise<void>) | undefined
await main().catch(async (error) => {
  console.error(error)
  await cleanup?.().catch(() => undefined)
  process.exit(1)
})
