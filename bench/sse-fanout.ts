/**
 * SSE fan-out: many consumers of one run's event stream.
 *
 *   (a) anchor: a plain node:http server that broadcasts an SSE frame to every client at 10 Hz
 *       (res.write to each, nothing else), and
 *   (b) the real service (`node src/main.ts serve`, embedded PostgreSQL): one web_search run with no
 *       executor, created with the RunStore, to which this script appends an event every 100 ms
 *       with `RunStore.appendEvent` (the service's own code: row lock, INSERT into run_events,
 *       pg_notify at commit), so delivery goes through the real event log table and LISTEN/NOTIFY.
 *
 * For each, a child process opens N raw SSE connections (node:http, no agent); P of them pause at
 * once and never read. Each reading consumer parses the frames and records, per event, the lag from
 * its `created_at` (in the SSE data) to its arrival, and whether ids arrive complete and in order.
 * Meanwhile this process sends a steady stream of other requests (GET of the run, authenticated; GET
 * of a constant for the anchor) and records their latency. The server's RSS (/proc/PID/status) is
 * sampled before, during and after.
 *
 * Targets (b): every reading consumer gets every event in order; p99 delivery lag <= 250 ms; RSS
 * growth <= 100 MB; other requests' p99 <= 50 ms.
 *
 *   node bench/sse-fanout.ts [--consumers=1000] [--paused=100] [--seconds=30] [--rate=10] [--payload=1024]
 *                            [--probe-rate=50] [--only=anchor|service]
 *
 * Loopback only; bounded in time (every child has a hard deadline). Internal modes: --consumers-child=<json>,
 * --anchor-server=<json>.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { Agent, createServer, request, type IncomingMessage, type ServerResponse } from "node:http"
import type { RunId } from "../src/domain/run.ts"

const self = import.meta.filename
const args = process.argv.slice(2)
const option = (name: string, fallback: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback

const TARGET_LAG_P99_MS = 250
const TARGET_RSS_GROWTH_MB = 100
const TARGET_OTHER_P99_MS = 50

const quantile = (sorted: ArrayLike<number>, q: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
const round1 = (x: number) => Math.round(x * 10) / 10
const rssMb = (pid: number) => {
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))
    return line === undefined ? Number.NaN : Number(line.split(/\s+/)[1]) / 1024
  } catch {
    return Number.NaN
  }
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const assertLoopback = (url: string) => {
  const host = new URL(url).hostname
  if (!["127.0.0.1", "localhost", "[::1]"].includes(host)) throw new Error(`refusing a non-loopback address: ${url}`)
}

// ---------------------------------------------------------------------------------------------
// the consumers (a child process)
// ---------------------------------------------------------------------------------------------

interface ConsumerSpec {
  readonly url: string
  readonly headers: Record<string, string>
  readonly consumers: number
  readonly paused: number
  readonly hardLimitSeconds: number
}

interface ConsumerReport {
  readonly connected: number
  readonly connectErrors: number
  readonly readers: number
  /** Readers that saw every event from the first live one to the last, each once, in order. */
  readonly readersComplete: number
  readonly readersCompleted: number
  readonly outOfOrder: number
  readonly duplicates: number
  readonly gaps: number
  readonly events: number
  readonly lagP50Ms: number
  readonly lagP99Ms: number
  readonly lagMaxMs: number
  readonly heartbeats: number
}

const consumersChild = async (spec: ConsumerSpec) => {
  assertLoopback(spec.url)
  setTimeout(() => {
    console.error("consumers: hard time limit reached")
    process.exit(3)
  }, spec.hardLimitSeconds * 1000).unref()
  const target = new URL(spec.url)
  const lags: Array<number> = []
  let measureAfterId = Number.POSITIVE_INFINITY // events with a higher id count for lag and completeness
  let lastId = 0 // the id of the last event the writer reported
  let connectErrors = 0
  let heartbeats = 0
  interface Reader { ids: Array<number>; completed: boolean }
  const readers: Array<Reader> = []
  const responses: Array<IncomingMessage> = []
  const requests: Array<ReturnType<typeof request>> = []

  const open = (index: number) =>
    new Promise<void>((resolve) => {
      const paused = index < spec.paused
      const req = request({ host: target.hostname, port: target.port, path: target.pathname, headers: { accept: "text/event-stream", ...spec.headers }, agent: false }, (res) => {
        responses.push(res)
        if (res.statusCode !== 200) {
          connectErrors++
          res.resume()
          return resolve()
        }
        if (paused) {
          // Never read: the bytes pile up in the socket buffers (and, if it does not wait, the server's).
          res.pause()
          return resolve()
        }
        const reader: Reader = { ids: [], completed: false }
        readers.push(reader)
        let buffer = ""
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => {
          const now = Date.now()
          buffer += chunk
          let end: number
          while ((end = buffer.indexOf("\n\n")) !== -1) {
            const block = buffer.slice(0, end)
            buffer = buffer.slice(end + 2)
            let id: number | undefined
            let data: string | undefined
            let type: string | undefined
            for (const line of block.split("\n")) {
              if (line.startsWith("id: ")) id = Number(line.slice(4))
              else if (line.startsWith("data: ")) data = line.slice(6)
              else if (line.startsWith("event: ")) type = line.slice(7)
            }
            if (type === "stream.heartbeat") {
              heartbeats++
              continue
            }
            if (id === undefined || data === undefined) continue
            reader.ids.push(id)
            if (type === "run.completed") reader.completed = true
            if (id > measureAfterId && type !== "run.completed") {
              const createdAt = Date.parse((JSON.parse(data) as { created_at: string }).created_at)
              lags.push(now - createdAt)
            }
          }
        })
        res.once("end", () => {})
        res.once("error", () => {})
        resolve()
      })
      requests.push(req)
      req.once("error", () => {
        connectErrors++
        resolve()
      })
      req.end()
    })

  // Connect in batches so the listen backlog never overflows.
  for (let i = 0; i < spec.consumers; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, spec.consumers - i) }, (_, k) => open(i + k)))
  }
  process.send!({ type: "connected", connected: spec.consumers - connectErrors, connectErrors })

  process.on("message", (message: { type: string; afterId?: number; lastId?: number }) => {
    if (message.type === "measure") measureAfterId = message.afterId!
    if (message.type === "finish") {
      lastId = message.lastId!
      let complete = 0
      let completed = 0
      let outOfOrder = 0
      let duplicates = 0
      let gaps = 0
      for (const reader of readers) {
        if (reader.completed) completed++
        const seen = new Set<number>()
        let ok = true
        let previous = 0
        for (const id of reader.ids) {
          if (seen.has(id)) duplicates++, ok = false
          else if (id < previous) outOfOrder++, ok = false
          else if (previous !== 0 && id > previous + 1) gaps++, ok = false
          seen.add(id)
          previous = Math.max(previous, id)
        }
        for (let id = Math.min(measureAfterId + 1, lastId); id <= lastId; id++) if (!seen.has(id)) ok = false
        if (ok) complete++
      }
      const sorted = Float64Array.from(lags).sort()
      const report: ConsumerReport = {
        connected: spec.consumers - connectErrors,
        connectErrors,
        readers: readers.length,
        readersComplete: complete,
        readersCompleted: completed,
        outOfOrder,
        duplicates,
        gaps,
        events: lags.length,
        lagP50Ms: quantile(sorted, 0.5),
        lagP99Ms: quantile(sorted, 0.99),
        lagMaxMs: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1]!,
        heartbeats
      }
      process.send!({ type: "report", report }, () => {
        for (const req of requests) req.destroy()
        process.exit(0)
      })
    }
  })
}

// ---------------------------------------------------------------------------------------------
// (a) the anchor: plain node:http broadcasting at a fixed rate
// ---------------------------------------------------------------------------------------------

interface AnchorSpec {
  readonly rate: number
  readonly payload: number
  readonly hardLimitSeconds: number
}

const anchorServer = (spec: AnchorSpec) => {
  setTimeout(() => process.exit(3), spec.hardLimitSeconds * 1000).unref()
  const clients = new Set<ServerResponse>()
  let nextId = 1
  let timer: NodeJS.Timeout | undefined
  const pad = "x".repeat(spec.payload)
  const frame = (type: string, data: Record<string, unknown>) => {
    const id = nextId++
    return `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify({ type, data, created_at: new Date().toISOString() })}\n\n`
  }
  const server = createServer((req, res) => {
    if (req.url === "/events") {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" })
      res.flushHeaders()
      clients.add(res)
      res.once("close", () => clients.delete(res))
      return
    }
    if (req.url === "/constant") {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ id: "run_bench", status: "running", last_event_id: nextId - 1 }))
      return
    }
    res.writeHead(404).end()
  })
  process.on("message", (message: { type: string; seconds?: number }) => {
    if (message.type === "start") {
      const started = Date.now()
      let ticks = 0
      const total = message.seconds! * spec.rate
      const tick = () => {
        const text = frame("bench.tick", { seq: ticks, pad })
        for (const client of clients) client.write(text)
        ticks++
        if (ticks >= total) {
          const last = frame("run.completed", { status: "done" })
          for (const client of clients) client.end(last)
          process.send!({ type: "done", lastId: nextId - 2 })
          return
        }
        timer = setTimeout(tick, Math.max(0, started + (ticks * 1000) / spec.rate - Date.now()))
      }
      process.send!({ type: "started", afterId: nextId - 1 })
      tick()
    }
    if (message.type === "stop") {
      clearTimeout(timer)
      process.exit(0)
    }
  })
  server.listen(0, "127.0.0.1", () => {
    const address = server.address() as { port: number }
    process.send!({ type: "listening", url: `http://127.0.0.1:${address.port}` })
  })
}

// ---------------------------------------------------------------------------------------------
// the driver
// ---------------------------------------------------------------------------------------------

const spawnChild = (argv: Array<string>) =>
  spawn(process.execPath, argv, { stdio: ["ignore", "inherit", "inherit", "ipc"] })

const nextMessage = <T>(child: ChildProcess, type: string, timeoutMs: number) =>
  new Promise<T>((resolve, reject) => {
    const onMessage = (message: { type: string }) => {
      if (message.type !== type) return
      child.off("message", onMessage)
      clearTimeout(timer)
      resolve(message as T)
    }
    const timer = setTimeout(() => {
      child.off("message", onMessage)
      reject(new Error(`no ${type} message within ${timeoutMs} ms`))
    }, timeoutMs)
    child.on("message", onMessage)
    child.once("exit", (code) => reject(new Error(`child exited with ${code} while waiting for ${type}`)))
  })

/** Open-loop requests at a fixed rate; latencies of those that answered 200. */
const probe = (url: string, headers: Record<string, string>, perSecond: number) => {
  assertLoopback(url)
  const target = new URL(url)
  const agent = new Agent({ keepAlive: true, maxSockets: 16 })
  const latencies: Array<number> = []
  let failures = 0
  const timer = setInterval(() => {
    const sent = performance.now()
    const req = request({ host: target.hostname, port: target.port, path: target.pathname, headers, agent }, (res) => {
      res.resume()
      res.once("end", () => {
        if (res.statusCode === 200) latencies.push(performance.now() - sent)
        else failures++
      })
    })
    req.once("error", () => failures++)
    req.end()
  }, 1000 / perSecond)
  return {
    stop: async () => {
      clearInterval(timer)
      await sleep(500)
      agent.destroy()
      const sorted = Float64Array.from(latencies).sort()
      return { requests: latencies.length, failures, p50Ms: quantile(sorted, 0.5), p99Ms: quantile(sorted, 0.99), maxMs: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1]! }
    }
  }
}

interface Scenario {
  readonly label: string
  readonly pid: number
  readonly eventsUrl: string
  readonly probeUrl: string
  readonly headers: Record<string, string>
  /** Starts the events; resolves with the id after which events are live, and a promise of the last id. */
  readonly start: () => Promise<{ afterId: number; done: Promise<number> }>
}

interface Outcome {
  readonly report: ConsumerReport
  readonly probe: { requests: number; failures: number; p50Ms: number; p99Ms: number; maxMs: number }
  readonly rssBeforeMb: number
  readonly rssPeakMb: number
  readonly rssAfterMb: number
  readonly seconds: number
}

const measure = async (scenario: Scenario, consumers: number, paused: number, seconds: number, probeRate: number): Promise<Outcome> => {
  const rssBeforeMb = rssMb(scenario.pid)
  const child = spawnChild([self, `--consumers-child=${JSON.stringify({
    url: scenario.eventsUrl,
    headers: scenario.headers,
    consumers,
    paused,
    hardLimitSeconds: seconds + 180
  } satisfies ConsumerSpec)}`])
  try {
    const connected = await nextMessage<{ connected: number; connectErrors: number }>(child, "connected", 120_000)
    console.log(`${scenario.label}: ${connected.connected} consumers connected (${connected.connectErrors} errors), RSS ${round1(rssMb(scenario.pid))} MB`)
    let rssPeakMb = rssMb(scenario.pid)
    const sampler = setInterval(() => (rssPeakMb = Math.max(rssPeakMb, rssMb(scenario.pid))), 500)
    const prober = probe(scenario.probeUrl, scenario.headers, probeRate)
    const started = performance.now()
    const { afterId, done } = await scenario.start()
    child.send({ type: "measure", afterId })
    const lastId = await done
    // Let the readers take in the last events (and the run's end).
    await sleep(2000)
    const elapsed = (performance.now() - started) / 1000
    const probed = await prober.stop()
    clearInterval(sampler)
    const rssAfterMb = rssMb(scenario.pid)
    rssPeakMb = Math.max(rssPeakMb, rssAfterMb)
    child.send({ type: "finish", lastId })
    const { report } = await nextMessage<{ report: ConsumerReport }>(child, "report", 60_000)
    return { report, probe: probed, rssBeforeMb, rssPeakMb, rssAfterMb, seconds: elapsed }
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL")
  }
}

const show = (label: string, o: Outcome, readersExpected: number, withTargets: boolean) => {
  const r = o.report
  const growth = o.rssPeakMb - o.rssBeforeMb
  console.log(`\n== ${label}`)
  console.log(`  consumers: ${r.connected} connected (${r.connectErrors} errors), ${r.readers} reading; ` +
    `${r.readersComplete}/${readersExpected} got every live event once and in order, ${r.readersCompleted} saw the end; ` +
    `gaps ${r.gaps}, duplicates ${r.duplicates}, out of order ${r.outOfOrder}; heartbeats ${r.heartbeats}`)
  console.log(`  delivery lag over ${r.events} deliveries: p50 ${round1(r.lagP50Ms)} ms, p99 ${round1(r.lagP99Ms)} ms, max ${round1(r.lagMaxMs)} ms`)
  console.log(`  RSS: before ${round1(o.rssBeforeMb)} MB, peak ${round1(o.rssPeakMb)} MB, after ${round1(o.rssAfterMb)} MB (growth ${round1(growth)} MB)`)
  console.log(`  other requests: ${o.probe.requests} answered 200 (${o.probe.failures} failed), p50 ${round1(o.probe.p50Ms)} ms, ` +
    `p99 ${round1(o.probe.p99Ms)} ms, max ${round1(o.probe.maxMs)} ms`)
  if (!withTargets) return
  const verdict = (ok: boolean) => (ok ? "met" : "NOT met")
  console.log(`  targets: every reader complete and ordered: ${verdict(r.readersComplete === readersExpected)}; ` +
    `lag p99 <= ${TARGET_LAG_P99_MS} ms: ${verdict(r.lagP99Ms <= TARGET_LAG_P99_MS)}; ` +
    `RSS growth <= ${TARGET_RSS_GROWTH_MB} MB: ${verdict(growth <= TARGET_RSS_GROWTH_MB)}; ` +
    `other p99 <= ${TARGET_OTHER_P99_MS} ms: ${verdict(o.probe.p99Ms <= TARGET_OTHER_P99_MS)}`)
}

const anchorScenario = async (rate: number, payload: number, seconds: number) => {
  const server = spawnChild([self, `--anchor-server=${JSON.stringify({ rate, payload, hardLimitSeconds: seconds + 240 } satisfies AnchorSpec)}`])
  const { url } = await nextMessage<{ url: string }>(server, "listening", 30_000)
  const scenario: Scenario = {
    label: "(a) plain node:http",
    pid: server.pid!,
    eventsUrl: `${url}/events`,
    probeUrl: `${url}/constant`,
    headers: {},
    start: async () => {
      const done = nextMessage<{ lastId: number }>(server, "done", (seconds + 60) * 1000).then((m) => m.lastId)
      const started = nextMessage<{ afterId: number }>(server, "started", 10_000)
      server.send({ type: "start", seconds })
      return { afterId: (await started).afterId, done }
    }
  }
  return { scenario, close: () => void server.kill("SIGTERM") }
}

const serviceScenario = async (rate: number, payload: number, seconds: number) => {
  const { startService, stopAndClean } = await import("../test/support/service.ts")
  const { Layer, ManagedRuntime, Logger } = await import("effect")
  const { RunStore } = await import("../src/store/runs.ts")
  const { databaseLayer } = await import("../src/store/database.ts")
  const { AppConfig } = await import("../src/config/config.ts")
  const service = await startService({
    env: {
      WA_RATE_LIMIT_REQUESTS: "1000000000",
      // Nobody is disconnected during the measurement (paused consumers are the point of it).
      WA_SSE_STALL_SECONDS: String(seconds + 120)
    }
  })
  // The writer: the service's RunStore on the same database (attached, like the CLI).
  const runtime = ManagedRuntime.make(RunStore.layer.pipe(
    Layer.provideMerge(databaseLayer("attach")),
    Layer.provide(AppConfig.layerFrom({ WA_DATA_DIR: service.dataDir, WA_LOG_LEVEL: "Warn" })),
    Layer.provide(Logger.layer([]))
  ))
  // A web_search run that nobody executes (created after startup, so startup recovery leaves it).
  // createStandaloneRun took (projectId, kind, request) and takes (projectId, taggedRequest) since
  // the domain refactor; this works with either.
  const webSearch = { queries: ["sse fan-out bench"], max_results_per_query: 10, rerank: false, summarize: false, wait: false }
  const run = await runtime.runPromise(RunStore.use((store) => {
    const create = store.createStandaloneRun as unknown as (...a: Array<unknown>) => ReturnType<typeof store.getRun>
    return (create.length >= 3 ? create(service.projectId, "web_search", webSearch) : create(service.projectId, { _tag: "WebSearch", ...webSearch }))
  })) as { readonly id: RunId }
  await runtime.runPromise(RunStore.use((store) => store.transition(run.id, "running")))
  const base = `${service.url}/v1/projects/${service.projectId}/web_search/runs/${run.id}`
  const pad = "x".repeat(payload)
  const appendMs: Array<number> = []
  const scenario: Scenario = {
    label: "(b) the service",
    pid: service.process.pid!,
    eventsUrl: `${base}/events`,
    probeUrl: base,
    headers: { authorization: `Bearer ${service.apiKey}` },
    start: async () => {
      const events = await runtime.runPromise(RunStore.use((store) => store.eventsAfter(run.id, 0, 1000)))
      const afterId = events.at(-1)?.id ?? 0
      const done = (async () => {
        const started = Date.now()
        const total = seconds * rate
        for (let i = 0; i < total; i++) {
          await sleep(Math.max(0, started + (i * 1000) / rate - Date.now()))
          const t = performance.now()
          await runtime.runPromise(RunStore.use((store) => store.appendEvent(run.id, "run.message", { role: "agent", content: `${i} ${pad}` })))
          appendMs.push(performance.now() - t)
        }
        const last = await runtime.runPromise(RunStore.use((store) => store.eventsAfter(run.id, afterId + total - 1, 10)))
        // The run ends: run.status_changed and run.completed close every reading stream.
        await runtime.runPromise(RunStore.use((store) => store.transition(run.id, "done")))
        return last.at(-1)!.id
      })()
      return { afterId, done }
    }
  }
  return {
    scenario,
    appendMs,
    close: async () => {
      await runtime.dispose()
      await stopAndClean(service)
    }
  }
}

const raiseFileLimit = (needed: number) => {
  const limits = readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith("Max open files"))
  const [soft, hard] = (limits ?? "").split(/\s+/).slice(3, 5).map((v) => (v === "unlimited" ? Number.POSITIVE_INFINITY : Number(v)))
  if (soft === undefined || soft >= needed) return false
  if (process.env["SSE_FANOUT_REEXEC"] === "1" || hard === undefined || hard < needed) {
    console.log(`warning: open files limit ${soft} (hard ${hard}) is below the ${needed} this bench needs`)
    return false
  }
  // A process cannot raise its own limit from JavaScript: start again under a shell that does.
  console.log(`raising the open files limit from ${soft} to ${needed}`)
  const result = spawnSync("/bin/sh", ["-c", `ulimit -n ${needed} && exec "$0" "$@"`, process.execPath, self, ...args], {
    stdio: "inherit",
    env: { ...process.env, SSE_FANOUT_REEXEC: "1" }
  })
  process.exit(result.status ?? 1)
}

const driver = async () => {
  const consumers = Number(option("consumers", "1000"))
  const paused = Number(option("paused", "100"))
  const seconds = Number(option("seconds", "30"))
  const rate = Number(option("rate", "10"))
  const payload = Number(option("payload", "1024"))
  const probeRate = Number(option("probe-rate", "50"))
  const only = option("only", "")
  if (raiseFileLimit(consumers * 2 + 500)) return
  console.log(`${consumers} SSE consumers of one run (${paused} never read), ${rate} events/s for ${seconds} s, ` +
    `~${payload} bytes of payload per event; other requests at ${probeRate}/s; loopback`)
  const hardStop = setTimeout(() => {
    console.error("bench: hard time limit reached")
    process.exit(3)
  }, (seconds * 2 + 600) * 1000)
  hardStop.unref()

  if (only !== "service") {
    const anchor = await anchorScenario(rate, payload, seconds)
    try {
      show("(a) anchor: plain node:http broadcast", await measure(anchor.scenario, consumers, paused, seconds, probeRate), consumers - paused, false)
    } finally {
      anchor.close()
    }
  }
  if (only !== "anchor") {
    const service = await serviceScenario(rate, payload, seconds)
    try {
      const outcome = await measure(service.scenario, consumers, paused, seconds, probeRate)
      show("(b) the service", outcome, consumers - paused, true)
      const sorted = Float64Array.from(service.appendMs).sort()
      console.log(`  writer: ${sorted.length} appendEvent calls, p50 ${round1(quantile(sorted, 0.5))} ms, p99 ${round1(quantile(sorted, 0.99))} ms`)
    } finally {
      await service.close()
    }
  }
  process.exit(0)
}

const consumersArg = args.find((a) => a.startsWith("--consumers-child="))
const anchorArg = args.find((a) => a.startsWith("--anchor-server="))
if (consumersArg !== undefined) await consumersChild(JSON.parse(consumersArg.slice("--consumers-child=".length)) as ConsumerSpec)
else if (anchorArg !== undefined) anchorServer(JSON.parse(anchorArg.slice("--anchor-server=".length)) as AnchorSpec)
else await driver()
