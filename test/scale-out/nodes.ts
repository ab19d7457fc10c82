/**
 * Helpers for multi-process cluster tests: `wa runner` processes (no API: /healthz, /readyz,
 * /metrics), Prometheus text parsing, and waiting on conditions (cluster defaults for the shared `eventually`). `wa serve` nodes come from
 * test/support/service.ts (startService with DATABASE_URL and the first node's credentials).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { rmSync } from "node:fs"
import * as path from "node:path"
import { cleanEnv } from "../support/processes.ts"
import { type LogLine, newDataDir } from "../support/service.ts"
import { contractFetch } from "../support/contract-hook.ts"
import { onJsonLines } from "../support/json-lines.ts"
import { eventually as shared, type PollOptions } from "../support/runs.ts"
import { waEntry } from "../support/entry.ts"

const root = path.resolve(import.meta.dirname, "../..")

const mainScript = waEntry

export interface RunnerNode {
  readonly url: string
  readonly dataDir: string
  readonly logs: Array<LogLine>
  readonly process: ChildProcess
  readonly stop: () => Promise<void>
  readonly kill: () => Promise<void>
}

/**
 * The environment of a cluster node on the test's database and Redis (without Redis: the socket
 * cluster on the database alone), driven by the scripted model at `modelUrl`, allowed to reach
 * loopback fixture sites, without step screenshots, with one shared state key.
 */
export const clusterNodeEnv = (databaseUrl: string, redisUrl: string | undefined, modelUrl: string, extra: Record<string, string> = {}): Record<string, string> => ({
  DATABASE_URL: databaseUrl,
  ...(redisUrl === undefined ? { WA_CLUSTER: "socket" } : { REDIS_URL: redisUrl }),
  WA_MODEL_BASE_URL: modelUrl,
  WA_MODEL: "scripted",
  WA_ALLOW_PRIVATE_NETWORKS: "true",
  WA_STEP_SCREENSHOTS: "false",
  // Nodes on one database share the key of saved browser state (profiles, run checkpoints), so a
  // run resumed on another node opens its checkpoint's cookies (README "Scale out").
  WA_SECRET_KEY: "7f3c9a1e5b2d4c6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f",
  ...extra
})

/** Starts `wa runner` with `env` and resolves once its probe server listens. */
export const startRunner = async (env: Record<string, string>): Promise<RunnerNode> => {
  const dataDir = newDataDir()
  // Stops itself when this process dies without stopping it (WA_EXIT_WITH_PARENT, src/main.ts).
  const child = spawn(process.execPath, [mainScript, "runner"], { cwd: root, env: { ...cleanEnv(dataDir, env), WA_EXIT_WITH_PARENT: "1" }, stdio: ["pipe", "pipe", "pipe"] })
  const logs: Array<LogLine> = []
  let stderr = ""
  child.stderr.on("data", (chunk) => (stderr += chunk))
  const url = await new Promise<string>((resolve, reject) => {
    onJsonLines<LogLine>(child.stdout, (parsed) => {
      logs.push(parsed)
      if (parsed.message === "listening") resolve(parsed.annotations["url"] as string)
    })
    child.once("exit", (code) => reject(new Error(`runner exited with ${code} before listening:\n${stderr}`)))
    setTimeout(() => reject(new Error(`runner did not start within 60 s:\n${stderr}`)), 60_000)
  })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const signal = async (name: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name)
    await exited
    rmSync(dataDir, { recursive: true, force: true })
  }
  return { url, dataDir, logs, process: child, stop: () => signal("SIGTERM"), kill: () => signal("SIGKILL") }
}

/** Samples of a Prometheus text exposition: `name{labels}` -> value. */
export const parseMetrics = (text: string): Map<string, number> => {
  const samples = new Map<string, number>()
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue
    const split = line.lastIndexOf(" ")
    samples.set(line.slice(0, split), Number(line.slice(split + 1)))
  }
  return samples
}

export const scrape = async (baseUrl: string): Promise<Map<string, number>> => {
  const response = await contractFetch(baseUrl)(`${baseUrl}/metrics`)
  if (response.status !== 200) throw new Error(`/metrics of ${baseUrl} answered ${response.status}`)
  return parseMetrics(await response.text())
}

/** The one poll-until helper (test/support/runs.ts); cluster checks scrape several nodes, so they poll less often. */
export const eventually = <A>(what: string, check: () => Promise<A | undefined>, options: PollOptions = {}): Promise<A> =>
  shared(what, check, { timeoutMs: 120_000, everyMs: 200, ...options })

/**
 * Waits until the runners at `urls` hold all 300 shards, split as evenly as the cluster's hash ring
 * splits them (counts differ by at most one) and none is being released. "Every runner holds some"
 * is not enough: while runners join, the shards pass through uneven splits (75/48/150/27 on the way
 * to 75 each was seen), and a session placed then loses its entity when its shard moves on.
 */
export const shardsSettled = (what: string, urls: ReadonlyArray<string>, options: PollOptions = {}) =>
  eventually(what, async () => {
    const metrics = await Promise.all(urls.map(scrape))
    const held = metrics.map((m) => m.get("effect_cluster_shards") ?? 0)
    const releasing = metrics.reduce((sum, m) => sum + (m.get("effect_cluster_shards_releasing") ?? 0), 0)
    const even = Math.max(...held) - Math.min(...held) <= 1
    return held.reduce((x, y) => x + y, 0) === 300 && even && releasing === 0 ? held : undefined
  }, options)
