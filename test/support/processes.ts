/**
 * Helpers for tests that look at the service from the outside: run `wa` with an environment of
 * the test's choosing (no running service needed), find the embedded PostgreSQL cluster of a data
 * dir and tell whether its postmaster lives, check that Redis answers, wait for a condition.
 */
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { createClient } from "redis"
import { eventually } from "./runs.ts"
import { waEntry } from "./entry.ts"

const root = path.resolve(import.meta.dirname, "../..")
const mainScript = waEntry

/** The same clean environment the service harness gives the service (nothing from the shell's WA_*). */
export const cleanEnv = (dataDir: string, extra: Record<string, string> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith("WA_") && name !== "DATABASE_URL" && name !== "REDIS_URL") env[name] = value
  }
  return { ...env, WA_PORT: "0", WA_HOST: "127.0.0.1", WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Info", ...extra }
}

export interface WaResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs `node src/main.ts ...args` to completion. A `serve` that does not exit within `timeoutMs`
 * is killed (and reported with its signal), so a test never hangs on it.
 */
export const runWa = (args: ReadonlyArray<string>, env: Record<string, string>, timeoutMs = 60_000): Promise<WaResult> =>
  new Promise((resolve) => {
    execFile(process.execPath, [mainScript, ...args], { cwd: root, env, timeout: timeoutMs, killSignal: "SIGKILL" }, (error, stdout, stderr) => {
      const failure = error as (Error & { code?: number | string; signal?: NodeJS.Signals }) | null
      resolve({
        code: failure === null ? 0 : typeof failure.code === "number" ? failure.code : null,
        signal: failure?.signal ?? null,
        stdout,
        stderr
      })
    })
  })

/** Where the embedded cluster of a data dir lives (`postgres.location` redirects it when run as root). */
export const clusterDirOf = (dataDir: string): string => {
  try {
    return readFileSync(path.join(dataDir, "postgres.location"), "utf8").trim()
  } catch {
    return path.join(dataDir, "postgres")
  }
}

/** Whether a process runs; a zombie (exited, not yet reaped, e.g. under a PID 1 that does not reap) does not. */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state ..."; comm may contain spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
  } catch {
    return true
  }
}

/** The pid of the live postmaster of a data dir's cluster, or undefined when none runs. */
export const livePostmaster = (dataDir: string): number | undefined => {
  let content: string
  try {
    content = readFileSync(path.join(clusterDirOf(dataDir), "postmaster.pid"), "utf8")
  } catch {
    return undefined
  }
  const pid = Number(content.split("\n")[0])
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return undefined
  // A recycled pid of another program does not count.
  const cmdline = (() => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8")
    } catch {
      return "postgres"
    }
  })()
  return cmdline.includes("postgres") ? pid : undefined
}

/**
 * The pid of the live watchdog that stops a data dir's embedded PostgreSQL when its owner dies
 * (src/store/embedded-postgres.ts), or undefined when none runs.
 */
export const liveWatchdog = (dataDir: string): number | undefined => {
  let pid: number
  try {
    pid = Number(readFileSync(path.join(dataDir, "postgres.watchdog"), "utf8").trim().split(" ")[0])
  } catch {
    return undefined
  }
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return undefined
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("wa-postgres-watchdog") ? pid : undefined
  } catch {
    return undefined
  }
}

/** Direct children of a process (from /proc), to take down a postmaster with its backends. */
export const childPids = (pid: number): Array<number> => {
  const children: Array<number> = []
  try {
    const raw = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim()
    for (const part of raw.split(/\s+/)) if (part !== "") children.push(Number(part))
  } catch {
    // process gone, or no children file
  }
  return children
}

export const isAlive = alive

/** Polls `check` until it returns true; throws with `what` after `timeoutMs`. */
export const waitFor = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> => {
  await eventually(what, async () => (await check()) ? true : undefined, { timeoutMs })
}

/**
 * Fails loudly when the Redis of TEST_REDIS_URL does not answer, instead of letting a service hang
 * on reconnects. Returns the URL.
 */
export const requireRedis = async (url: string): Promise<string> => {
  const client = createClient({ url, socket: { connectTimeout: 5000, reconnectStrategy: false } })
  client.on("error", () => {})
  try {
    await client.connect()
    const pong = await client.ping()
    if (pong !== "PONG") throw new Error(`unexpected PING answer ${pong}`)
  } catch (error) {
    throw new Error(`TEST_REDIS_URL is set (${url}) but Redis does not answer: ${String(error)}`)
  } finally {
    await client.quit().catch(() => client.destroy())
  }
  return url
}
