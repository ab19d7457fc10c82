/**
 * A CPU weight for the local browser (WA_BROWSER_CPU_WEIGHT): Chromium's whole process tree runs in
 * a cgroup of its own with a lower CPU weight than the service, so that when twenty renderers load
 * pages at once on a small machine the service's event loop (the control plane: HTTP, database,
 * model calls, the runs' next steps) is not descheduled for hundreds of milliseconds at a time.
 * A weight only matters when CPU is contended: an idle service leaves the browser every core.
 *
 * Nice values cannot do this: Chromium sets absolute nice values on its own threads (as root even
 * negative ones), while a cgroup's weight covers every thread of every process in it, and children
 * inherit the cgroup at fork. The browser joins the cgroup before it runs: it is started through a
 * two-line launcher script that writes its own pid into the cgroup and `exec`s Chromium (same pid,
 * same file descriptors, so Playwright sees no difference).
 *
 * Best effort, never fatal:
 * - cgroup v2 where the `cpu` controller is available in the service's own cgroup and that cgroup
 *   is writable (delegated). A non-root cgroup may not both hold processes and enable controllers
 *   for its children (the no-internal-processes rule), so the service moves itself into a leaf
 *   sibling `wa-service-<pid>` first, when it is the only process there; the browser's cgroup
 *   `wa-browser-<pid>-<id>` gets `cpu.weight` = the setting (the service's leaf keeps 100).
 * - cgroup v1 where the `cpu` hierarchy is writable: `wa-browser-<pid>-<id>` beside the service's
 *   cgroup with `cpu.shares` = setting × 1024 / 100 (the service's threads keep 1024 each).
 * - else nothing (one log line says which, see pool.ts).
 *
 * Nothing outlives the service: the pool removes its cgroup (and the launcher) when it stops, and a
 * cgroup or launcher left by a service that was killed (its pid is gone) is removed at the next
 * start, after killing what is still in it (the dead service's orphaned browser).
 *
 * Where the machine's cgroups are read from (CgroupSources) can be given: the real files by
 * default; test/browser/cpu-weight-v2.test.ts passes a fixture's, since the test machine has no
 * cgroup v2 cpu controller.
 */
import { randomBytes } from "node:crypto"
import { existsSync } from "node:fs"
import { access, constants, mkdir, readdir, readFile, rmdir, unlink, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"

export interface BrowserCgroup {
  readonly version: 1 | 2
  /** The cgroup's directory. */
  readonly path: string
  /** The configured weight (cgroup v2 units). */
  readonly weight: number
  /** What was written: `cpu.weight=25` or `cpu.shares=256`. */
  readonly setting: string
  /** Launch this instead of Chromium: it joins the cgroup, then `exec`s `executablePath`. */
  readonly launcher: (executablePath: string) => Promise<string>
  /** Pids in the cgroup now. */
  readonly pids: () => Promise<ReadonlyArray<number>>
  /** Removes the cgroup (killing what is left in it after a grace period) and the launcher. */
  readonly remove: () => Promise<void>
}

export type BrowserCpuPlacement =
  | { readonly _tag: "Cgroup"; readonly cgroup: BrowserCgroup }
  | { readonly _tag: "None"; readonly reason: string }

/** Where this module learns about the machine's cgroups, and where it puts launchers. */
export interface CgroupSources {
  /** The service's memberships, one `id:controllers:path` line per hierarchy: /proc/self/cgroup. */
  readonly cgroupFile: string
  /** The mount table (mountinfo format: where each hierarchy is mounted, from which root): /proc/self/mountinfo. */
  readonly mountinfo: string
  /** Where launchers are written (and stale ones looked for): the temporary directory. */
  readonly launcherDir: string
}

const sourcesWith = (given: Partial<CgroupSources>): CgroupSources => ({
  cgroupFile: given.cgroupFile ?? "/proc/self/cgroup",
  mountinfo: given.mountinfo ?? "/proc/self/mountinfo",
  launcherDir: given.launcherDir ?? tmpdir()
})

interface Hierarchy {
  readonly version: 1 | 2
  /** The service's own cgroup directory in this hierarchy. */
  readonly own: string
}

const readText = (path: string): Promise<string | undefined> => readFile(path, "utf8").catch(() => undefined)

const pidAlive = (pid: number): boolean => existsSync(`/proc/${pid}`)

const namePattern = /^wa-(browser|service)-(\d+)(?:-[0-9a-f]+)?(?:\.sh)?$/

/** The service's cpu cgroup: v2 when its cpu controller is there, else v1's cpu hierarchy. */
const findHierarchies = async (sources: CgroupSources): Promise<ReadonlyArray<Hierarchy>> => {
  const [cgroupFile, mountinfo] = await Promise.all([readText(sources.cgroupFile), readText(sources.mountinfo)])
  if (cgroupFile === undefined || mountinfo === undefined) return []
  const memberships = cgroupFile.trim().split("\n").map((line) => {
    const [, , controllers = "", path = "/"] = /^(\d+):([^:]*):(.*)$/.exec(line) ?? []
    return { controllers: controllers.split(","), path }
  })
  const mounts = mountinfo.trim().split("\n").map((line) => {
    const [left = "", right = ""] = line.split(" - ")
    const fields = left.split(" ")
    const [fstype = "", , superOptions = ""] = right.split(" ")
    return { root: fields[3] ?? "/", mountPoint: (fields[4] ?? "").replace(/\\040/g, " "), fstype, options: superOptions.split(",") }
  })
  const dirOf = (mount: { readonly root: string; readonly mountPoint: string }, path: string) => {
    const relative = mount.root === "/" ? path : path.startsWith(mount.root) ? path.slice(mount.root.length) : undefined
    return relative === undefined ? undefined : join(mount.mountPoint, relative)
  }
  const found: Array<Hierarchy> = []
  const v2 = mounts.find((m) => m.fstype === "cgroup2")
  const v2Path = memberships.find((m) => m.controllers.length === 1 && m.controllers[0] === "")?.path
  if (v2 !== undefined && v2Path !== undefined) {
    const own = dirOf(v2, v2Path)
    const controllers = own === undefined ? undefined : await readText(join(own, "cgroup.controllers"))
    if (own !== undefined && controllers?.split(/\s+/).includes("cpu")) found.push({ version: 2, own })
  }
  const v1 = mounts.find((m) => m.fstype === "cgroup" && m.options.includes("cpu"))
  const v1Path = memberships.find((m) => m.controllers.includes("cpu"))?.path
  if (v1 !== undefined && v1Path !== undefined) {
    const own = dirOf(v1, v1Path)
    if (own !== undefined) found.push({ version: 1, own })
  }
  return found
}

const listPids = async (dir: string): Promise<Array<number>> =>
  ((await readText(join(dir, "cgroup.procs"))) ?? "").split("\n").filter((l) => l.trim() !== "").map(Number)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** How long killed processes get to exit (and so leave their cgroup): long enough on a loaded machine. */
const killedExitMs = 5_000

/**
 * rmdir, waiting up to `graceMs` for the processes in it to exit, then (`kill`) killing what is
 * left, again every round (a process forked meanwhile too) until the cgroup is empty or
 * `killedExitMs` have passed.
 */
const removeCgroupDir = async (dir: string, graceMs: number, kill = true): Promise<void> => {
  const deadline = Date.now() + graceMs
  for (;;) {
    try {
      await rmdir(dir)
      return
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === "ENOENT") return
      if (code !== "EBUSY" && code !== "ENOTEMPTY") throw error
    }
    if (Date.now() >= deadline) {
      if (!kill || Date.now() >= deadline + killedExitMs) throw new Error(`${dir} still holds processes`)
      for (const pid of await listPids(dir)) {
        try {
          process.kill(pid, "SIGKILL")
        } catch {
          // gone already
        }
      }
    }
    await sleep(50)
  }
}

/**
 * Removes what services that are gone left: `wa-browser-<pid>-*` cgroups (and, for v2,
 * `wa-service-<pid>` leaves) and launchers of pids that no longer run.
 */
export const removeStaleBrowserCgroups = async (given: Partial<CgroupSources> = {}): Promise<ReadonlyArray<string>> => {
  const sources = sourcesWith(given)
  const removed: Array<string> = []
  const stale = (name: string) => {
    const match = namePattern.exec(name)
    return match !== null && Number(match[2]) !== process.pid && !pidAlive(Number(match[2]))
  }
  for (const hierarchy of await findHierarchies(sources).catch(() => [])) {
    const parent = hierarchy.version === 2 && /\/wa-service-\d+$/.test(hierarchy.own) ? join(hierarchy.own, "..") : hierarchy.own
    const names = await readdir(parent).catch(() => [])
    for (const name of names.filter(stale)) {
      // A dead service's browser left behind is killed; a dead service's leaf (v2) is only removed when empty.
      const ok = await removeCgroupDir(join(parent, name), 500, name.startsWith("wa-browser-")).then(() => true, () => false)
      if (ok) removed.push(join(parent, name))
    }
  }
  for (const name of await readdir(sources.launcherDir).catch(() => [])) {
    if (name.endsWith(".sh") && stale(name)) {
      const path = join(sources.launcherDir, name)
      if (await unlink(path).then(() => true, () => false)) removed.push(path)
    }
  }
  return removed
}

/** The parent pid of `pid`, from /proc (undefined once it has exited). */
const parentOf = async (pid: number): Promise<number | undefined> => {
  const stat = await readText(`/proc/${pid}/stat`)
  return stat === undefined ? undefined : Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
}

/** Whether `pid` is this process or one of its descendants (the embedded PostgreSQL, say). */
const isOurs = async (pid: number): Promise<boolean> => {
  for (let at: number | undefined = pid, hops = 0; at !== undefined && at > 1 && hops < 64; hops++) {
    if (at === process.pid) return true
    at = await parentOf(at)
  }
  return false
}

/** The v2 leaf the service moved into (shared by every pool of the process), with its users. */
let serviceLeaf: { readonly own: string; readonly leaf: string; users: number } | undefined

const enableCpu = (dir: string) => writeFile(join(dir, "cgroup.subtree_control"), "+cpu")

/**
 * Makes `own` able to hold a browser cgroup with a cpu weight; returns the parent to make it in.
 * Once the service has moved into its leaf, /proc/self/cgroup names the leaf: a second browser
 * cgroup (another pool of the process) goes beside the first, not into the leaf.
 */
const joinV2 = async (own: string): Promise<string> => {
  if (serviceLeaf !== undefined && (serviceLeaf.own === own || serviceLeaf.leaf === own)) {
    serviceLeaf.users++
    return serviceLeaf.own
  }
  // The root cgroup may hold processes and enable controllers for its children at once.
  const subtree = (await readText(join(own, "cgroup.subtree_control"))) ?? ""
  if (subtree.split(/\s+/).includes("cpu")) return own
  if (await enableCpu(own).then(() => true, () => false)) return own
  // Any other cgroup may not (the no-internal-processes rule): the service (and its own child
  // processes) move into a leaf beside the browser's, when nothing else is in its cgroup.
  const procs = await listPids(own)
  const others: Array<number> = []
  for (const pid of procs) if (!(await isOurs(pid))) others.push(pid)
  if (others.length > 0) {
    throw new Error(`the service's cgroup ${own} holds processes that are not the service's (${others.slice(0, 5).join(", ")}), so it cannot enable the cpu controller for a browser cgroup`)
  }
  const leaf = join(own, `wa-service-${process.pid}`)
  await mkdir(leaf).catch((error) => (error as NodeJS.ErrnoException).code === "EEXIST" ? undefined : Promise.reject(error))
  const moveAll = async (from: string, to: string) => {
    for (const pid of await listPids(from)) await writeFile(join(to, "cgroup.procs"), String(pid)).catch(() => undefined)
  }
  try {
    await moveAll(own, leaf)
    await enableCpu(own)
  } catch (error) {
    await moveAll(leaf, own)
    await rmdir(leaf).catch(() => undefined)
    throw error
  }
  serviceLeaf = { own, leaf, users: 1 }
  return own
}

/** Undoes joinV2 when the last browser cgroup of the process is removed. */
const leaveV2 = async (own: string): Promise<void> => {
  if (serviceLeaf === undefined || serviceLeaf.own !== own || --serviceLeaf.users > 0) return
  const { leaf } = serviceLeaf
  serviceLeaf = undefined
  // Back where the service was started, as it was: the cpu controller off for the children
  // (while another child cgroup remains, the service stays in its leaf).
  const children = (await readdir(own, { withFileTypes: true }).catch(() => [])).filter((e) => e.isDirectory())
  if (children.some((e) => e.name !== `wa-service-${process.pid}`)) return
  await writeFile(join(own, "cgroup.subtree_control"), "-cpu").catch(() => undefined)
  for (const pid of await listPids(leaf)) await writeFile(join(own, "cgroup.procs"), String(pid)).catch(() => undefined)
  await rmdir(leaf)
}

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`

/**
 * Makes the browser's cgroup with `weight` (1..10000, cgroup v2 units). Never throws: when no
 * cgroup can be made, says why. `given`: where to read the machine's cgroups (the real files by default).
 */
export const makeBrowserCgroup = async (weight: number, given: Partial<CgroupSources> = {}): Promise<BrowserCpuPlacement> => {
  const sources = sourcesWith(given)
  if (!(weight >= 1 && weight <= 10_000)) return { _tag: "None", reason: "off (WA_BROWSER_CPU_WEIGHT=0)" }
  if (process.platform !== "linux") return { _tag: "None", reason: `no cgroups on ${process.platform}` }
  const hierarchies = await findHierarchies(sources).catch(() => [])
  if (hierarchies.length === 0) return { _tag: "None", reason: "no cgroup hierarchy with the cpu controller" }
  const reasons: Array<string> = []
  for (const hierarchy of hierarchies) {
    const id = `${process.pid}-${randomBytes(4).toString("hex")}`
    const name = `wa-browser-${id}`
    let parent: string | undefined
    let dir: string | undefined
    try {
      parent = hierarchy.version === 2 ? await joinV2(hierarchy.own) : hierarchy.own
      const cgroupParent = parent
      dir = join(parent, name)
      await mkdir(dir)
      const setting = hierarchy.version === 2
        ? `cpu.weight=${weight}`
        : `cpu.shares=${Math.max(2, Math.round((weight * 1024) / 100))}`
      const [file, value] = setting.split("=") as [string, string]
      await writeFile(join(dir, file), value)
      const cgroupDir = dir
      const launcherPath = join(sources.launcherDir, `${name}.sh`)
      let launcherWritten = false
      const cgroup: BrowserCgroup = {
        version: hierarchy.version,
        path: cgroupDir,
        weight,
        setting,
        launcher: async (executablePath) => {
          // The shell's own pid is the browser's: `exec` keeps it (and the pipes Playwright talks on).
          await writeFile(
            launcherPath,
            [
              "#!/bin/sh",
              "# web-agent-service: runs the browser in its CPU cgroup (src/browser/cpu-weight.ts); removed when the service stops",
              `{ echo $$ > ${shellQuote(join(cgroupDir, "cgroup.procs"))}; } 2>/dev/null`,
              `exec ${shellQuote(executablePath)} "$@"`,
              ""
            ].join("\n"),
            { mode: 0o700 }
          )
          launcherWritten = true
          // A temporary directory mounted noexec cannot run it: no cgroup then.
          await access(launcherPath, constants.X_OK)
          return launcherPath
        },
        pids: () => listPids(cgroupDir),
        remove: async () => {
          if (launcherWritten) await unlink(launcherPath).catch(() => undefined)
          try {
            await removeCgroupDir(cgroupDir, 3_000)
          } finally {
            if (hierarchy.version === 2) await leaveV2(cgroupParent).catch(() => undefined)
          }
        }
      }
      return { _tag: "Cgroup", cgroup }
    } catch (error) {
      if (dir !== undefined) await rmdir(dir).catch(() => undefined)
      if (hierarchy.version === 2 && parent !== undefined) await leaveV2(parent).catch(() => undefined)
      reasons.push(`cgroup v${hierarchy.version} at ${hierarchy.own}: ${(error as Error).message}`)
    }
  }
  return { _tag: "None", reason: reasons.join("; ") }
}
