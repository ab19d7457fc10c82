/**
 * Cold start: time from spawning the server as `npm start` does (`node bin/serve.js serve`: the
 * bundle in dist/server, built first when stale) on an existing data dir (initialised by a first
 * start beforehand, then stopped) to the first 200 from /readyz. Each run starts the embedded
 * PostgreSQL too (the previous run's SIGTERM stopped it). Prints every run and the median, with the
 * moments PostgreSQL was ready and the server listened. Target (issue 26): median <= 1.5 s.
 * For comparison it then does the same from the sources (`node src/main.ts serve`, what
 * `npx wa serve` runs), and times `node src/main.ts --help` (the CLI's module graph, no database).
 *
 *   node bench/cold-start.ts [runs=5]
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { request } from "node:http"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { buildServer, isStale } from "../build/server.ts"
import { freePort } from "../src/net/free-port.ts"

const root = path.resolve(import.meta.dirname, "..")
const mainScript = path.join(root, "src/main.ts")
const startScript = path.join(root, "bin/serve.js")
const runs = Number(process.argv[2] ?? 5)
const TARGET_MS = 1500

const envFor = (dataDir: string, port: number): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith("WA_") && name !== "DATABASE_URL" && name !== "REDIS_URL") env[name] = value
  }
  return { ...env, WA_PORT: String(port), WA_HOST: "127.0.0.1", WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Info" }
}

/** One GET /readyz; resolves with the status, or 0 when nothing answers yet. */
const readyz = (port: number) =>
  new Promise<number>((resolve) => {
    const req = request({ host: "127.0.0.1", port, path: "/readyz", agent: false, timeout: 1000 }, (res) => {
      res.resume()
      res.once("end", () => resolve(res.statusCode ?? 0))
    })
    req.once("error", () => resolve(0))
    req.once("timeout", () => {
      req.destroy()
      resolve(0)
    })
    req.end()
  })

interface Run {
  readonly readyMs: number
  readonly postgresMs: number | undefined
  readonly listeningMs: number | undefined
}

/** Spawns serve, polls /readyz every 5 ms until 200; records when the log said PostgreSQL/listening. */
const startOnce = async (dataDir: string, entry: string): Promise<{ child: ChildProcess; run: Run }> => {
  const port = await freePort()
  const t0 = performance.now()
  const child = spawn(process.execPath, [entry, "serve"], { cwd: root, env: envFor(dataDir, port), stdio: ["ignore", "pipe", "pipe"] })
  let postgresMs: number | undefined
  let listeningMs: number | undefined
  let stderr = ""
  let buffer = ""
  child.stderr!.on("data", (chunk) => (stderr += chunk))
  child.stdout!.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8")
    let newline: number
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      if (postgresMs === undefined && line.includes("embedded PostgreSQL ready")) postgresMs = performance.now() - t0
      if (listeningMs === undefined && line.includes("\"listening\"")) listeningMs = performance.now() - t0
    }
  })
  let exited = false
  child.once("exit", () => (exited = true))
  const deadline = t0 + 60_000
  for (;;) {
    if (exited) throw new Error(`serve exited before it was ready:\n${stderr}`)
    if (performance.now() > deadline) {
      child.kill("SIGKILL")
      throw new Error(`serve was not ready within 60 s:\n${stderr}`)
    }
    if (await readyz(port) === 200) break
    await new Promise((r) => setTimeout(r, 5))
  }
  return { child, run: { readyMs: performance.now() - t0, postgresMs, listeningMs } }
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** Spawn to exit of `wa --help`: what loading the code costs before anything starts. */
const moduleLoad = () =>
  new Promise<number>((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(process.execPath, [mainScript, "--help"], { cwd: root, env: envFor(tmpdir(), 0), stdio: "ignore" })
    child.once("error", reject)
    child.once("exit", (code) => code === 0 ? resolve(performance.now() - t0) : reject(new Error(`wa --help exited with ${code}`)))
  })

const fmt = (ms: number | undefined) => ms === undefined ? "    -" : `${(ms / 1000).toFixed(2)} s`

/** `runs` starts of one entry on the data dir; prints each and gives the median. */
const measure = async (label: string, entry: string, dataDir: string): Promise<number> => {
  console.log(`${label}:`)
  const results: Array<Run> = []
  for (let i = 0; i < runs; i++) {
    const { child, run } = await startOnce(dataDir, entry)
    results.push(run)
    console.log(`  run ${i + 1}: ready ${fmt(run.readyMs)}  (PostgreSQL ready ${fmt(run.postgresMs)}, listening ${fmt(run.listeningMs)})`)
    await stop(child)
  }
  const m = median(results.map((r) => r.readyMs))
  console.log(`  cold start to first 200 from /readyz: median ${fmt(m)} over ${runs} runs (min ${fmt(Math.min(...results.map((r) => r.readyMs)))}, max ${fmt(Math.max(...results.map((r) => r.readyMs)))})`)
  return m
}

if (isStale()) await buildServer()
const dataDir = mkdtempSync(path.join(tmpdir(), "wa-bench-cold-"))
try {
  // The first start initialises the cluster, migrates and bootstraps; it is not measured.
  const first = await startOnce(dataDir, startScript)
  console.log(`first start (initdb + migrations + bootstrap, not counted): ${fmt(first.run.readyMs)}`)
  await stop(first.child)

  const m = await measure("npm start (bin/serve.js: the bundle in dist/server)", startScript, dataDir)
  console.log(`target <= ${fmt(TARGET_MS)}: ${m <= TARGET_MS ? "met" : "NOT met"}`)
  await measure("for comparison, the sources (node src/main.ts serve)", mainScript, dataDir)
  const loads: Array<number> = []
  for (let i = 0; i < runs; i++) loads.push(await moduleLoad())
  console.log(`breakdown: spawn to exit of \`wa --help\` (module graph only): median ${fmt(median(loads))} (${loads.map((l) => fmt(l)).join(", ")})`)
} finally {
  rmSync(dataDir, { recursive: true, force: true })
}
