/**
 * Starts the real service (`node src/main.ts serve`) as a child process on port 0 with its own
 * data dir (embedded PostgreSQL) or an external database, and talks to it over HTTP. Tests use the
 * default project and key the first start prints.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import pg from "pg"
import { onJsonLines } from "./json-lines.ts"
import { checkExchange, contractFetch } from "./contract-hook.ts"
import { promisify } from "node:util"
import { SERVICE_NODE_FLAGS } from "../../src/config/node-flags.ts"
import { waEntry } from "./entry.ts"

const root = path.resolve(import.meta.dirname, "../..")
const mainScript = waEntry

export interface LogLine {
  readonly message: string
  readonly level: string
  readonly annotations: Record<string, unknown>
}

export interface Service {
  readonly url: string
  readonly dataDir: string
  readonly projectId: string
  readonly apiKey: string
  readonly logs: Array<LogLine>
  readonly process: ChildProcess
  /** JSON request helper; `key` defaults to the bootstrap key, `null` sends no Authorization. */
  readonly request: (method: string, pathname: string, options?: RequestOptions) => Promise<ApiResponse>
  /**
   * `fetch` bound to the service: a path (`/v1/...`) is resolved against `url`; every response of
   * the service is checked by the contract hook (contract-hook.ts `contractFetch`) before it is
   * returned. For what `request` does not do: no bearer key added, redirects, binary bodies,
   * cookies, streams.
   */
  readonly fetch: typeof globalThis.fetch
  /** Graceful stop (SIGTERM); resolves when the process exited. */
  readonly stop: () => Promise<void>
  readonly kill: () => Promise<void>
  /** Runs `wa` with the same environment (CLI commands against the same data dir). */
  readonly cli: (...args: Array<string>) => Promise<{ stdout: string; stderr: string; code: number }>
}

export interface RequestOptions {
  readonly body?: unknown
  readonly rawBody?: string
  readonly key?: string | null
  readonly headers?: Record<string, string>
}

export interface ApiResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: any
}

export interface StartOptions {
  readonly env?: Record<string, string>
  /** Reuse a data dir (restart tests); a fresh one (`seededDataDir`) otherwise. */
  readonly dataDir?: string
  /** Key and project to use when the database was bootstrapped by an earlier start. */
  readonly credentials?: { readonly projectId: string; readonly apiKey: string }
  /** Extra flags for the service's node (a bench's `--cpu-prof`). */
  readonly nodeFlags?: ReadonlyArray<string>
}

const baseEnv = (dataDir: string, extra: Record<string, string> | undefined) => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    // The test decides the service's configuration; nothing leaks in from the developer's shell.
    if (value !== undefined && !name.startsWith("WA_") && name !== "DATABASE_URL" && name !== "REDIS_URL") env[name] = value
  }
  return { ...env, WA_PORT: "0", WA_HOST: "127.0.0.1", WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Info", ...testCpuWeight, ...extra }
}

/**
 * Under vitest the service's browser gets no CPU weight (WA_BROWSER_CPU_WEIGHT=off; a test may set
 * it): on a machine running many suites at once, a cgroup v1 weight ranks each suite's browser
 * below every other suite's processes (each counts 1024 at the root), which no deployment has, and
 * starved browsers miss the timings the widget and live-view tests rely on. The weight's own tests
 * (test/browser/cpu-weight*.test.ts) and the benches (not under vitest) run with it.
 */
const testCpuWeight: Record<string, string> = process.env["VITEST"] === undefined ? {} : { WA_BROWSER_CPU_WEIGHT: "off" }

export const newDataDir = () => mkdtempSync(path.join(tmpdir(), "wa-test-"))

/**
 * Names the dir of the run's seed data dir, chosen by test/support/seed-data-dir.ts (the process
 * project's globalSetup); unset outside vitest (bench scripts), where services start empty. The
 * first `startService` of the run takes its `lock` (mkdir is atomic across the workers), makes the
 * seed in `seed` with the real `wa migrate` (initdb and every migration, no project or key), and
 * writes `ready`, or `failed` with the reason; the others wait for one of the two.
 */
export const SEED_DATA_DIR_VARIABLE = "WA_TEST_SEED_DATA_DIR"
export const SEED_LOCK = "lock"
export const SEED_READY = "ready"
export const SEED_FAILED = "failed"

/** The run's seed data dir (made by the first caller), or undefined without one. */
const seed = async (): Promise<string | undefined> => {
  const base = process.env[SEED_DATA_DIR_VARIABLE]
  if (base === undefined || base === "" || !existsSync(base)) return undefined
  const dir = path.join(base, "seed")
  let mine = false
  try {
    mkdirSync(path.join(base, SEED_LOCK))
    mine = true
  } catch {
    // Another worker makes it.
  }
  if (mine) {
    mkdirSync(dir)
    const made = await promisify(execFile)(process.execPath, [mainScript, "migrate"], { cwd: root, env: baseEnv(dir, {}), timeout: 120_000 }).then(
      () => undefined,
      (error: { stderr?: string; stdout?: string; message: string }) => `wa migrate on the seed data dir failed: ${error.message}\n${error.stderr ?? ""}${error.stdout ?? ""}`
    )
    // A cluster kept outside the data dir (postgres.location) would be shared by every copy.
    const failure = made ?? (existsSync(path.join(dir, "postgres.location")) ? `the seed's cluster is not inside ${dir}` : undefined)
    writeFileSync(path.join(base, failure === undefined ? SEED_READY : SEED_FAILED), failure ?? "")
  }
  for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
    if (existsSync(path.join(base, SEED_READY))) return dir
    if (existsSync(path.join(base, SEED_FAILED))) throw new Error(readFileSync(path.join(base, SEED_FAILED), "utf8"))
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`the seed data dir under ${base} was not ready within 120 s`)
}

/**
 * A fresh data dir for a first start: a copy of the run's seed (its embedded PostgreSQL already
 * initialised and migrated, no project or key yet), or an empty dir when there is no seed. The
 * service's first start on it is a first start all the same (bootstrap key, state key, lock); it
 * only skips initdb and the migrations. `cp -a` keeps the cluster's owner (the `postgres` user
 * when the tests run as root). A service on an external database (`DATABASE_URL` in `env`) gets
 * an empty dir: it would not use the copy.
 */
export const seededDataDir = async (env: Record<string, string> = {}): Promise<string> => {
  const dir = newDataDir()
  const from = env["DATABASE_URL"] === undefined ? await seed() : undefined
  if (from !== undefined) await promisify(execFile)("cp", ["-a", `${from}/.`, dir])
  return dir
}

export const startService = async (options: StartOptions = {}): Promise<Service> => {
  const dataDir = options.dataDir ?? await seededDataDir(options.env)
  const env = baseEnv(dataDir, options.env)
  // Its stdin is a pipe from this process: if the test process dies without stopping it, the pipe
  // closes and the service stops itself (WA_EXIT_WITH_PARENT, src/main.ts).
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, ...(options.nodeFlags ?? []), mainScript, "serve"], {
    cwd: root,
    env: { ...env, WA_EXIT_WITH_PARENT: "1" },
    stdio: ["pipe", "pipe", "pipe"]
  })
  const logs: Array<LogLine> = []
  let stderr = ""
  child.stderr.on("data", (chunk) => (stderr += chunk))

  let startTimer: NodeJS.Timeout | undefined
  const ready = new Promise<{ url: string; bootstrap?: { project_id: string; secret_token: string } }>((resolve, reject) => {
    let bootstrap: { project_id: string; secret_token: string } | undefined
    onJsonLines<LogLine>(child.stdout, (parsed) => {
      logs.push(parsed)
      if (parsed.annotations?.["bootstrap"] !== undefined) bootstrap = parsed.annotations["bootstrap"] as typeof bootstrap
      if (parsed.message === "listening") {
        // The bootstrap line follows the listening line on a first start; give it a moment.
        setTimeout(() => resolve({ url: parsed.annotations["url"] as string, ...(bootstrap ? { bootstrap } : {}) }), 50)
      }
    })
    child.once("exit", (code) => reject(new Error(`service exited with ${code} before listening:\n${stderr}`)))
    startTimer = setTimeout(() => reject(new Error(`service did not start within 60 s:\n${stderr}`)), 60_000)
  })
  const started = await ready.finally(() => clearTimeout(startTimer))
  // A first start prints its bootstrap line right after listening; wait for it if it is coming.
  let credentials = options.credentials
  for (let i = 0; credentials === undefined && i < 100; i++) {
    const line = logs.find((l) => l.annotations?.["bootstrap"] !== undefined)
    if (line !== undefined) {
      const b = line.annotations["bootstrap"] as { project_id: string; secret_token: string }
      credentials = { projectId: b.project_id, apiKey: b.secret_token }
    } else {
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  if (credentials === undefined) throw new Error("no bootstrap key printed and no credentials given")
  const { projectId, apiKey } = credentials

  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const request = async (method: string, pathname: string, req: RequestOptions = {}): Promise<ApiResponse> => {
    const headers: Record<string, string> = { ...req.headers }
    const key = req.key === undefined ? apiKey : req.key
    if (key !== null) headers["authorization"] = `Bearer ${key}`
    let body: string | undefined
    if (req.rawBody !== undefined) body = req.rawBody
    else if (req.body !== undefined) body = JSON.stringify(req.body)
    if (body !== undefined) headers["content-type"] ??= "application/json"
    const response = await fetch(started.url + pathname, { method, headers, ...(body !== undefined ? { body } : {}) })
    const text = await response.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    // Every response is held to the service's OpenAPI document (contract-hook.ts); a followed
    // redirect is checked at the URL it ended on (fetch follows 301/302/303 with a GET), when that
    // is this service.
    const final = response.redirected ? new URL(response.url) : undefined
    if (final === undefined || final.origin === new URL(started.url).origin) {
      await checkExchange(started.url, {
        method: final === undefined || method === "HEAD" ? method : "GET",
        pathname: final === undefined ? pathname : final.pathname + final.search,
        status: response.status,
        headers: response.headers,
        text
      })
    }
    return { status: response.status, headers: response.headers, text, json }
  }
  const signal = async (name: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name)
    await exited
  }
  const cli = (...args: Array<string>) =>
    promisify(execFile)(process.execPath, [mainScript, ...args], { cwd: root, env }).then(
      ({ stdout, stderr }) => ({ stdout, stderr, code: 0 }),
      (error: { stdout: string; stderr: string; code: number }) => ({ stdout: error.stdout, stderr: error.stderr, code: error.code })
    )
  return {
    url: started.url,
    dataDir,
    projectId,
    apiKey,
    logs,
    process: child,
    request,
    fetch: contractFetch(started.url),
    stop: () => signal("SIGTERM"),
    kill: () => signal("SIGKILL"),
    cli
  }
}

/** Stops the service and, for a data dir the test created, removes it with its database. */
export const stopAndClean = async (service: Service | undefined) => {
  if (service === undefined) return
  await service.stop()
  rmSync(service.dataDir, { recursive: true, force: true })
}

/**
 * A fresh database on the machine's PostgreSQL (`TEST_DATABASE_URL`), dropped afterwards, so the
 * store suite also runs against an external server. Undefined when the variable is not set.
 */
export const externalDatabase = async (): Promise<{ url: string; drop: () => Promise<void> } | undefined> => {
  const base = process.env["TEST_DATABASE_URL"]
  if (base === undefined || base === "") return undefined
  const name = `wa_test_${Date.now()}_${Math.floor(Math.random() * 1e6)}`
  const admin = new pg.Client({ connectionString: base })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(base)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: base })
      await client.connect()
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await client.end()
    }
  }
}

/**
 * A database of a test's own: a fresh one on TEST_DATABASE_URL's server when set, else an
 * embedded PostgreSQL in a temp dir (`name` names the dir). `drop` removes it.
 */
export const freshDatabase = async (name: string): Promise<{ readonly url: string; readonly drop: () => Promise<void> }> => {
  const external = await externalDatabase()
  if (external !== undefined) return external
  const { startEmbeddedPostgres } = await import("../../src/store/embedded-postgres.ts")
  const dir = mkdtempSync(path.join(tmpdir(), `wa-${name}-pg-`))
  const embedded = await startEmbeddedPostgres(dir, { mode: "own" })
  return {
    url: embedded.url,
    drop: async () => {
      await embedded.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** A pg client on the embedded database of a data dir (to look behind the API in tests). */
export const embeddedDatabaseClient = async (dataDir: string) => {
  const { readFileSync } = await import("node:fs")
  const password = readFileSync(path.join(dataDir, "postgres.password"), "utf8").trim()
  const location = (() => {
    try {
      return readFileSync(path.join(dataDir, "postgres.location"), "utf8").trim()
    } catch {
      return path.join(dataDir, "postgres")
    }
  })()
  const port = Number(readFileSync(path.join(location, "postmaster.pid"), "utf8").split("\n")[3])
  const client = new pg.Client({ host: "127.0.0.1", port, user: "wa", password, database: "postgres" })
  await client.connect()
  return client
}

/**
 * The environment of a service driven by the scripted model at `modelUrl`, allowed to reach the
 * loopback fixture sites, with room for many sessions per key; `extra` adds or overrides.
 */
export const scriptedAgentEnv = (modelUrl: string, extra: Record<string, string> = {}): Record<string, string> => ({
  WA_MODEL_BASE_URL: modelUrl,
  WA_MODEL: "scripted",
  WA_ALLOW_PRIVATE_NETWORKS: "true",
  WA_MAX_CONCURRENT_SESSIONS: "100",
  ...extra
})
