/**
 * HTTP overhead of our stack: requests/second of
 *   (a) a bare Effect HTTP server (effect/http HttpRouter + @effect/platform-node NodeHttpServer)
 *       answering a constant JSON on GET, and
 *   (b) the real service answering an authenticated GET of one record
 *       (GET /v1/projects/{pid}/api_keys/{key_id} of the bootstrap key) through authentication,
 *       rate limiting (budget set very high), request id, error envelope and the default Info
 *       access log, on its embedded PostgreSQL,
 * and the ratio b/a (target >= 0.40). Each server is its own child process; runs alternate between
 * them over several rounds (the median ratio is reported); the load comes from another child process (node:http, keep-alive agent, fixed
 * concurrency, warm-up then a fixed measured duration, loopback only, stops by itself).
 *
 *   node bench/http-overhead.ts [--concurrency=32] [--warmup=2] [--duration=10] [--rounds=3] [--no-breakdown]
 *                               [--only=service] [--cpu-prof=DIR] [--alloc] [--source]
 *
 * The service runs as `npm start` runs it (the bundle, bin/serve.js); --source runs the sources
 * (use it with --cpu-prof: the bundle's profile names its chunks, not our modules).
 * --only=service loads the service alone (no ratio); --cpu-prof=DIR writes the service's V8 CPU
 * profile into DIR when it stops (open it in Chrome DevTools) and prints its busy samples by
 * module, to see where a request's time goes; --alloc prints the bytes the service allocated per
 * request during round 1's load, and the largest allocation sites (bench/support/allocation-sampler.ts).
 * On a shared machine both are steadier than req/s: a change's effect on a module's share of the
 * samples, or on bytes per request, shows in one run where req/s needs many rounds. (--alloc costs
 * the service some CPU of its own: take req/s and CPU figures without it.)
 *
 * As a breakdown it also measures the service's /healthz (same stack, no auth and no database).
 *
 * Internal modes (spawned by the script itself): --bare-server, --load=<json>.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { Agent, request } from "node:http"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { onJsonLines } from "../test/support/json-lines.ts"
import { SERVICE_NODE_FLAGS } from "../src/config/node-flags.ts"
import { buildServer, isStale } from "../build/server.ts"

const root = path.resolve(import.meta.dirname, "..")
const self = import.meta.filename
const args = process.argv.slice(2)
const option = (name: string, fallback: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const TARGET_RATIO = 0.4

// ---------------------------------------------------------------------------------------------
// (a) the bare Effect server
// ---------------------------------------------------------------------------------------------

const bareServer = async () => {
  const { NodeHttpServer, NodeRuntime } = await import("@effect/platform-node")
  const { Effect, Layer } = await import("effect")
  const { HttpRouter, HttpServer, HttpServerResponse } = await import("effect/http")
  const { createServer } = await import("node:http")
  const body = { id: "key_bench", name: "constant", created_at: "2025-01-01T00:00:00.000Z" }
  const Routes = HttpRouter.use(Effect.fn(function*(router) {
    yield* router.add("GET", "/constant", Effect.succeed(HttpServerResponse.jsonUnsafe(body)))
  }))
  const announce = Layer.effectDiscard(Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const address = server.address
    if (address._tag !== "UnixPathAddress") console.log(JSON.stringify({ message: "listening", url: `http://127.0.0.1:${address.port}` }))
  }))
  const Live = announce.pipe(
    Layer.provideMerge(HttpRouter.serve(Routes, { disableLogger: true, disableListenLog: true })),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
  )
  NodeRuntime.runMain(Layer.launch(Live))
}

// ---------------------------------------------------------------------------------------------
// the load generator (a child process)
// ---------------------------------------------------------------------------------------------

interface LoadSpec {
  readonly url: string
  readonly headers: Record<string, string>
  readonly concurrency: number
  readonly warmupSeconds: number
  readonly durationSeconds: number
}

interface LoadResult {
  readonly requests: number
  readonly errors: number
  readonly statuses: Record<string, number>
  readonly seconds: number
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
}

const load = async (spec: LoadSpec) => {
  const target = new URL(spec.url)
  if (!["127.0.0.1", "localhost", "[::1]"].includes(target.hostname)) throw new Error(`refusing to load a non-loopback address: ${spec.url}`)
  // Bounded: whatever happens, this process ends shortly after the planned time.
  setTimeout(() => {
    console.error("load generator: hard time limit reached")
    process.exit(3)
  }, (spec.warmupSeconds + spec.durationSeconds + 30) * 1000).unref()

  const agent = new Agent({ keepAlive: true, maxSockets: spec.concurrency })
  const start = performance.now()
  const measureFrom = start + spec.warmupSeconds * 1000
  const measureTo = measureFrom + spec.durationSeconds * 1000
  let requests = 0
  let errors = 0
  const statuses: Record<string, number> = {}
  const latencies: Array<number> = []

  const once = () =>
    new Promise<number>((resolve) => {
      const req = request({ host: target.hostname, port: target.port, path: target.pathname + target.search, agent, headers: spec.headers }, (res) => {
        res.resume()
        res.once("end", () => resolve(res.statusCode ?? 0))
        res.once("error", () => resolve(0))
      })
      req.once("error", () => resolve(0))
      req.end()
    })

  const worker = async () => {
    for (;;) {
      const sent = performance.now()
      if (sent >= measureTo) return
      const status = await once()
      const done = performance.now()
      if (sent >= measureFrom && done <= measureTo) {
        requests++
        statuses[status] = (statuses[status] ?? 0) + 1
        if (status !== 200) errors++
        latencies.push(done - sent)
      }
    }
  }
  await Promise.all(Array.from({ length: spec.concurrency }, worker))
  agent.destroy()
  latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies.length === 0 ? 0 : latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!
  const result: LoadResult = {
    requests,
    errors,
    statuses,
    seconds: spec.durationSeconds,
    rps: (requests - errors) / spec.durationSeconds,
    p50Ms: at(0.5),
    p99Ms: at(0.99)
  }
  process.stdout.write(JSON.stringify(result) + "\n")
}

// ---------------------------------------------------------------------------------------------
// the driver
// ---------------------------------------------------------------------------------------------

/** Spawns a server and resolves once its stdout shows the listening line (with url and, maybe, the bootstrap key). */
const spawnServer = (argv: Array<string>, env: Record<string, string>) =>
  new Promise<{ child: ChildProcess; url: string; bootstrap?: { project_id: string; key_id: string; secret_token: string } }>((resolve, reject) => {
    const child = spawn(process.execPath, argv, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] })
    let stderr = ""
    let url: string | undefined
    let bootstrap: { project_id: string; key_id: string; secret_token: string } | undefined
    let settled = false
    const done = () => {
      if (settled || url === undefined) return
      settled = true
      resolve({ child, url, ...(bootstrap !== undefined ? { bootstrap } : {}) })
    }
    child.stderr!.on("data", (chunk) => (stderr += chunk))
    onJsonLines(child.stdout!, (parsed) => {
      if (settled) return
      if (parsed.message === "listening") url = parsed.url ?? parsed.annotations?.url
      if (parsed.annotations?.bootstrap !== undefined) bootstrap = parsed.annotations.bootstrap
      // The service prints its bootstrap key right after "listening"; the bare server has none.
      if (url !== undefined && (bootstrap !== undefined || !argv.includes("serve"))) {
        done()
        // From here on the access log is drained unread: parsing it would take CPU from the
        // machine the servers are measured on, during (b) only.
        child.stdout!.removeAllListeners("data")
        child.stdout!.on("data", () => {})
      }
    })
    child.once("exit", (code) => {
      if (!settled) reject(new Error(`server exited with ${code} before it was ready:\n${stderr}`))
    })
    setTimeout(() => {
      if (!settled) {
        child.kill("SIGKILL")
        reject(new Error(`server not ready within 60 s:\n${stderr}`))
      }
    }, 60_000).unref()
  })

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); NaN elsewhere. */
const cpuSeconds = (pid: number | undefined) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return (Number(fields[11]) + Number(fields[12])) / 100 // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return Number.NaN
  }
}

/**
 * Runs the load and also measures the server's CPU time per answered request: on a machine shared
 * with other work, req/s of both servers swing with what else runs, while CPU per request does not
 * much, so the CPU ratio is the steadier figure. It includes the warm-up requests' CPU, spread
 * over the measured ones; (a) and (b) are treated alike.
 */
const runLoadOn = async (pid: number | undefined, spec: LoadSpec) => {
  const before = cpuSeconds(pid)
  const result = await runLoad(spec)
  const cpuUsPerRequest = ((cpuSeconds(pid) - before) * 1e6) / Math.max(1, result.requests * (spec.warmupSeconds + spec.durationSeconds) / spec.durationSeconds)
  return { ...result, cpuUsPerRequest }
}

const runLoad = (spec: LoadSpec) =>
  new Promise<LoadResult>((resolve, reject) => {
    const child = spawn(process.execPath, [self, `--load=${JSON.stringify(spec)}`], { cwd: root, stdio: ["ignore", "pipe", "inherit"] })
    let out = ""
    child.stdout!.on("data", (chunk) => (out += chunk))
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`load generator exited with ${code}`))
      resolve(JSON.parse(out.trim()) as LoadResult)
    })
  })

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

const cleanEnv = (extra: Record<string, string>): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith("WA_") && name !== "DATABASE_URL" && name !== "REDIS_URL") env[name] = value
  }
  return { ...env, ...extra }
}

const show = (label: string, r: LoadResult) =>
  console.log(
    `${label}: ${r.rps.toFixed(0)} req/s  (${r.requests} requests in ${r.seconds} s, non-200: ${r.errors}, ` +
      `statuses ${JSON.stringify(r.statuses)}, latency p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms)`
  )

interface ProfileFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
}

const moduleOf = (frame: ProfileFrame) =>
  frame.url.replace(/^.*\/node_modules\//, "").replace(`file://${root}/`, "") || frame.functionName

/** The CPU profile's samples by module, leaving out idle time and module loading (start-up). */
const printCpuShares = (dir: string) => {
  const newest = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => path.join(dir, f)).sort((x, y) => statSync(y).mtimeMs - statSync(x).mtimeMs)[0]
  if (newest === undefined) return console.log(`no .cpuprofile in ${dir}`)
  const profile = JSON.parse(readFileSync(newest, "utf8")) as {
    nodes: Array<{ id: number; callFrame: ProfileFrame }>
    samples: Array<number>
  }
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]))
  const byModule = new Map<string, number>()
  let busy = 0
  for (const id of profile.samples) {
    const frame = frames.get(id)!
    if (["(idle)", "(program)"].includes(frame.functionName) || /^node:internal\/modules\//.test(frame.url)) continue
    busy++
    const name = moduleOf(frame)
    byModule.set(name, (byModule.get(name) ?? 0) + 1)
  }
  console.log(`CPU profile ${newest}: ${busy} busy samples; the largest modules (share of busy samples):`)
  for (const [name, count] of [...byModule].sort((x, y) => y[1] - x[1]).slice(0, 15)) {
    console.log(`  ${((100 * count) / busy).toFixed(1).padStart(5)} %  ${name}`)
  }
}

interface HeapNode {
  readonly callFrame: ProfileFrame
  readonly selfSize: number
  readonly children: Array<HeapNode>
}

/** Bytes allocated per request, and the sites that allocated most (self size, per request). */
const printAllocations = (file: string, requests: number) => {
  if (!existsSync(file)) return console.log(`no allocation profile at ${file} (the service did not write it within 10 s)`)
  const bySite = new Map<string, number>()
  let total = 0
  const walk = (node: HeapNode) => {
    total += node.selfSize
    if (node.selfSize > 0) {
      const { functionName, url, lineNumber } = node.callFrame
      const site = url === "" ? `${functionName} (built-in)` : `${functionName || "(anonymous)"} ${moduleOf(node.callFrame)}:${lineNumber + 1}`
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize)
    }
    node.children.forEach(walk)
  }
  walk((JSON.parse(readFileSync(file, "utf8")) as { head: HeapNode }).head)
  console.log(`allocated per request during round 1 of (b): ${(total / requests / 1024).toFixed(1)} KiB (${requests} requests, warm-up included); the largest sites (bytes per request):`)
  for (const [site, bytes] of [...bySite].sort((x, y) => y[1] - x[1]).slice(0, 12)) {
    console.log(`  ${Math.round(bytes / requests).toString().padStart(6)}  ${site}`)
  }
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((x, y) => x - y)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const driver = async () => {
  const concurrency = Number(option("concurrency", "32"))
  const warmupSeconds = Number(option("warmup", "2"))
  const durationSeconds = Number(option("duration", "10"))
  const rounds = Number(option("rounds", "3"))
  const breakdown = !args.includes("--no-breakdown")
  const serviceOnly = option("only", "") === "service"
  const profileDir = args.find((a) => a.startsWith("--cpu-prof="))?.slice("--cpu-prof=".length)
  const allocations = args.includes("--alloc")
  console.log(
    `load: ${concurrency} concurrent keep-alive connections, ${warmupSeconds} s warm-up + ${durationSeconds} s measured per run, ` +
      `${rounds} rounds alternating (a) and (b), loopback`
  )

  const dataDir = mkdtempSync(path.join(tmpdir(), "wa-bench-http-"))
  const allocationFile = path.join(dataDir, "allocations.heapprofile")
  const children: Array<ChildProcess> = []
  const ratios: Array<number> = []
  const cpuRatios: Array<number> = []
  const aRps: Array<number> = []
  const bRps: Array<number> = []
  let non200 = 0
  try {
    // Both servers run for the whole benchmark; only one is under load at a time. Alternating
    // rounds spread whatever else the machine does evenly over (a) and (b).
    const bare = serviceOnly ? undefined : await spawnServer([self, "--bare-server"], cleanEnv({}))
    if (bare !== undefined) children.push(bare.child)
    // Started as `npm start` starts it (bin/serve.js: the bundle, rebuilt first when stale), with
    // the service's Node flags; --source runs src/main.ts instead.
    if (!args.includes("--source") && isStale()) await buildServer()
    const profileFlags = profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${path.resolve(profileDir)}`]
    const samplerFlags = allocations ? ["--import", path.join(root, "bench/support/allocation-sampler.ts")] : []
    const service = await spawnServer([...SERVICE_NODE_FLAGS, ...profileFlags, ...samplerFlags, path.join(root, args.includes("--source") ? "src/main.ts" : "bin/serve.js"), "serve"], cleanEnv({
      ...(allocations ? { WA_BENCH_ALLOC_PROFILE: allocationFile } : {}),
      WA_PORT: "0",
      WA_HOST: "127.0.0.1",
      WA_DATA_DIR: dataDir,
      WA_LOG_LEVEL: "Info",
      WA_RATE_LIMIT_REQUESTS: "1000000000"
    }))
    children.push(service.child)
    const { project_id, key_id, secret_token } = service.bootstrap!
    const spec = { concurrency, warmupSeconds, durationSeconds }

    for (let round = 1; round <= rounds; round++) {
      const sampling = allocations && round === 1
      if (sampling) service.child.kill("SIGUSR2")
      const b = await runLoadOn(service.child.pid, {
        ...spec,
        url: `${service.url}/v1/projects/${project_id}/api_keys/${key_id}`,
        headers: { authorization: `Bearer ${secret_token}` }
      })
      if (sampling) {
        service.child.kill("SIGUSR2")
        for (let waited = 0; !existsSync(allocationFile) && waited < 100; waited++) await new Promise((r) => setTimeout(r, 100))
        printAllocations(allocationFile, Math.round((b.requests * (warmupSeconds + durationSeconds)) / durationSeconds))
      }
      show(`round ${round} (b) the service, authenticated GET of one record`, b)
      bRps.push(b.rps)
      non200 += b.errors
      if (bare === undefined) {
        console.log(`round ${round} server CPU per request: (b) ${b.cpuUsPerRequest.toFixed(0)} µs`)
        continue
      }
      const a = await runLoadOn(bare.child.pid, { ...spec, url: `${bare.url}/constant`, headers: {} })
      show(`round ${round} (a) bare Effect HTTP server, constant JSON`, a)
      if (breakdown) {
        // Not part of the ratio: the same process on /healthz, without auth and database.
        show(`round ${round}     breakdown: the service's /healthz (no auth, no database)`, await runLoad({ ...spec, url: `${service.url}/healthz`, headers: {} }))
      }
      non200 += a.errors
      aRps.push(a.rps)
      ratios.push(b.rps / a.rps)
      cpuRatios.push(a.cpuUsPerRequest / b.cpuUsPerRequest)
      console.log(`round ${round} server CPU per request: (a) ${a.cpuUsPerRequest.toFixed(0)} µs, (b) ${b.cpuUsPerRequest.toFixed(0)} µs; ratio a/b ${(a.cpuUsPerRequest / b.cpuUsPerRequest).toFixed(2)}`)
      console.log(`round ${round} ratio b/a: ${(b.rps / a.rps).toFixed(2)}`)
    }
  } finally {
    for (const child of children.reverse()) await stop(child)
    rmSync(dataDir, { recursive: true, force: true })
  }
  if (profileDir !== undefined) printCpuShares(profileDir)

  if (serviceOnly) {
    console.log(`(b) median ${median(bRps).toFixed(0)} req/s`)
    return
  }
  const ratio = median(ratios)
  console.log(
    `CPU per request ratio (a)/(b): median ${median(cpuRatios).toFixed(2)} (rounds: ${cpuRatios.map((r) => r.toFixed(2)).join(", ")}); ` +
      "what b/a would be if both servers had a core to themselves"
  )
  console.log(`(a) median ${median(aRps).toFixed(0)} req/s, (b) median ${median(bRps).toFixed(0)} req/s`)
  console.log(
    `ratio b/a: median over rounds ${ratio.toFixed(2)} (rounds: ${ratios.map((r) => r.toFixed(2)).join(", ")}); ` +
      `target >= ${TARGET_RATIO.toFixed(2)}: ${ratio >= TARGET_RATIO ? "met" : "NOT met"}`
  )
  if (non200 > 0) console.log("warning: some responses were not 200; the figures above count only 200s")
}

const loadArg = args.find((a) => a.startsWith("--load="))
if (args.includes("--bare-server")) await bareServer()
else if (loadArg !== undefined) await load(JSON.parse(loadArg.slice("--load=".length)) as LoadSpec)
else await driver()
