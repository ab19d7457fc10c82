/**
 * The browser's CPU weight under cgroup v2 (src/browser/cpu-weight.ts), and v1's arithmetic.
 *
 * The test machine has cgroup v1 only (its cpu controller is bound to the v1 hierarchy, so no v2
 * cgroup can offer it); test/browser/cpu-weight.test.ts covers v1 with a real Chromium on the real
 * /sys/fs/cgroup. Here the module reads a delegated v2 hierarchy built in a temporary directory
 * (its mount table and the service's /proc/self/cgroup point there), and what the kernel does on
 * cgroupfs is played by `cgroupfs` below, for paths inside that directory only (everything else
 * goes to the real file system): mkdir creates a cgroup's control files, rmdir removes them and
 * refuses (EBUSY) while the cgroup has processes or children, a file cannot be created (EACCES),
 * writing a pid to cgroup.procs moves that process (and the service's /proc/self/cgroup follows),
 * the no-internal-processes rule, `+cpu`/`-cpu` in cgroup.subtree_control creating and removing the
 * children's cpu.weight, cpu.weight's range, v1's cpu.shares, a read-only mount (EROFS).
 * Processes are real: the test process is the service, the launcher and what it `exec`s run with sh.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn, spawnSync } from "node:child_process"
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join } from "node:path"
import { vi } from "vitest"
import { makeBrowserCgroup, removeStaleBrowserCgroups } from "../../src/browser/cpu-weight.ts"

/** The kernel's side of a cgroup file system, for the fixtures' directories (see the header). */
const cgroupfs = await vi.hoisted(async () => {
  const fs = await import("node:fs")
  const { basename, dirname, join, relative } = await import("node:path")

  interface Mount {
    readonly root: string
    readonly version: 1 | 2
    readonly readOnly: boolean
    /** The fixture's /proc/self/cgroup, rewritten when the service (this process) is moved. */
    readonly cgroupFile: string
    readonly membership: (path: string) => string
  }
  const mounts: Array<Mount> = []
  const mountOf = (path: string) => mounts.find((m) => path === m.root || path.startsWith(`${m.root}/`))

  const failure = (code: string, syscall: string, path: string) =>
    Object.assign(new Error(`${code}: ${syscall} '${path}'`), { code, syscall, path })
  const words = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "").split(/\s+/).filter((w) => w !== "")
  /** A running process (a zombie has left its cgroup). */
  const alive = (pid: number) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
      return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
    } catch {
      return false
    }
  }
  const pidsIn = (dir: string) => words(join(dir, "cgroup.procs")).map(Number).filter(alive)
  const childDirs = (dir: string) =>
    fs.readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => join(dir, e.name))
  const allDirs = (dir: string): Array<string> => [dir, ...childDirs(dir).flatMap(allDirs)]
  const v2Files = ["cgroup.procs", "cgroup.controllers", "cgroup.subtree_control", "cgroup.events", "cpu.weight"]
  const v1Files = ["cgroup.procs", "tasks", "cpu.shares", "notify_on_release"]

  /** What mkdir on cgroupfs does: the directory and its control files. */
  const makeCgroup = (mount: Mount, dir: string) => {
    fs.mkdirSync(dir)
    if (mount.version === 1) {
      for (const [name, text] of [["cgroup.procs", ""], ["tasks", ""], ["cpu.shares", "1024\n"], ["notify_on_release", "0\n"]]) {
        fs.writeFileSync(join(dir, name!), text!)
      }
      return
    }
    const controllers = words(join(dirname(dir), "cgroup.subtree_control"))
    fs.writeFileSync(join(dir, "cgroup.procs"), "")
    fs.writeFileSync(join(dir, "cgroup.controllers"), `${controllers.join(" ")}\n`)
    fs.writeFileSync(join(dir, "cgroup.subtree_control"), "\n")
    fs.writeFileSync(join(dir, "cgroup.events"), "populated 0\nfrozen 0\n")
    if (controllers.includes("cpu")) fs.writeFileSync(join(dir, "cpu.weight"), "100\n")
  }

  /** What writing a pid to cgroup.procs does: the process leaves its cgroup for this one. */
  const moveProcess = (mount: Mount, dir: string, pid: number) => {
    for (const other of allDirs(mount.root)) {
      const procs = join(other, "cgroup.procs")
      const kept = pidsIn(other).filter((p) => p !== pid)
      fs.writeFileSync(procs, other === dir ? [...kept, pid].map((p) => `${p}\n`).join("") : kept.map((p) => `${p}\n`).join(""))
    }
    if (pid === process.pid) fs.writeFileSync(mount.cgroupFile, mount.membership(`/${relative(mount.root, dir)}`))
  }

  const write = (mount: Mount, file: string, text: string) => {
    const dir = dirname(file)
    const name = basename(file)
    if (mount.readOnly) throw failure("EROFS", "open", file)
    if (!fs.existsSync(dir)) throw failure("ENOENT", "open", file)
    // cgroupfs has no files but the kernel's.
    if (!fs.existsSync(file)) throw failure("EACCES", "open", file)
    const value = text.trim()
    if (name === "cgroup.procs" || (mount.version === 1 && name === "tasks")) {
      const pid = Number(value)
      if (!Number.isInteger(pid) || pid <= 0) throw failure("EINVAL", "write", file)
      if (!alive(pid)) throw failure("ESRCH", "write", file)
      // No internal processes: a non-root cgroup that enables controllers for its children holds none.
      if (mount.version === 2 && dir !== mount.root && words(join(dir, "cgroup.subtree_control")).length > 0) throw failure("EBUSY", "write", file)
      moveProcess(mount, dir, pid)
      return
    }
    if (mount.version === 2 && name === "cgroup.subtree_control") {
      const enabled = new Set(words(file))
      const available = words(join(dir, "cgroup.controllers"))
      for (const token of value.split(/\s+/)) {
        const controller = token.slice(1)
        if (token.startsWith("+")) {
          if (!available.includes(controller)) throw failure("ENOENT", "write", file)
          if (dir !== mount.root && pidsIn(dir).length > 0) throw failure("EBUSY", "write", file)
          enabled.add(controller)
        } else if (token.startsWith("-")) {
          if (childDirs(dir).some((child) => words(join(child, "cgroup.subtree_control")).includes(controller))) throw failure("EBUSY", "write", file)
          enabled.delete(controller)
        } else {
          throw failure("EINVAL", "write", file)
        }
      }
      fs.writeFileSync(file, `${[...enabled].join(" ")}\n`)
      for (const child of childDirs(dir)) {
        fs.writeFileSync(join(child, "cgroup.controllers"), `${[...enabled].join(" ")}\n`)
        const weight = join(child, "cpu.weight")
        if (enabled.has("cpu") && !fs.existsSync(weight)) fs.writeFileSync(weight, "100\n")
        if (!enabled.has("cpu")) fs.rmSync(weight, { force: true })
      }
      return
    }
    if (name === "cpu.weight") {
      if (!/^\d+$/.test(value)) throw failure("EINVAL", "write", file)
      if (Number(value) < 1 || Number(value) > 10_000) throw failure("ERANGE", "write", file)
      fs.writeFileSync(file, `${Number(value)}\n`)
      return
    }
    if (name === "cpu.shares") {
      if (!/^\d+$/.test(value)) throw failure("EINVAL", "write", file)
      fs.writeFileSync(file, `${Math.min(262_144, Math.max(2, Number(value)))}\n`)
      return
    }
    throw failure("EINVAL", "write", file)
  }

  const remove = (mount: Mount, dir: string) => {
    if (mount.readOnly) throw failure("EROFS", "rmdir", dir)
    if (!fs.existsSync(dir)) throw failure("ENOENT", "rmdir", dir)
    if (childDirs(dir).length > 0 || pidsIn(dir).length > 0) throw failure("EBUSY", "rmdir", dir)
    for (const name of mount.version === 2 ? v2Files : v1Files) fs.rmSync(join(dir, name), { force: true })
    fs.rmdirSync(dir)
  }

  type Promises = typeof import("node:fs/promises")
  /** node:fs/promises with the fixtures' directories behaving as cgroupfs. */
  const wrap = (real: Promises): Partial<Promises> => {
    const mkdir = (async (path: string, options?: unknown) => {
      const mount = mountOf(String(path))
      if (mount === undefined) return real.mkdir(path, options as Parameters<Promises["mkdir"]>[1])
      if (mount.readOnly) throw failure("EROFS", "mkdir", path)
      if (fs.existsSync(path)) throw failure("EEXIST", "mkdir", path)
      makeCgroup(mount, String(path))
      return undefined
    }) as Promises["mkdir"]
    const rmdir = (async (path: string, options?: unknown) => {
      const mount = mountOf(String(path))
      if (mount === undefined) return real.rmdir(path, options as Parameters<Promises["rmdir"]>[1])
      remove(mount, String(path))
    }) as Promises["rmdir"]
    const writeFile = (async (path: string, data: unknown, options?: unknown) => {
      const mount = typeof path === "string" ? mountOf(path) : undefined
      if (mount === undefined) return real.writeFile(path, data as string, options as Parameters<Promises["writeFile"]>[2])
      write(mount, path, String(data))
    }) as Promises["writeFile"]
    const readFile = (async (path: string, options?: unknown) => {
      const mount = typeof path === "string" ? mountOf(path) : undefined
      if (mount === undefined || basename(path) !== "cgroup.procs") return real.readFile(path, options as Parameters<Promises["readFile"]>[1])
      // The kernel lists the processes in it now: one that has exited is gone.
      const text = pidsIn(dirname(path)).map((p) => `${p}\n`).join("")
      return options === undefined ? Buffer.from(text) : text
    }) as Promises["readFile"]
    return { mkdir, rmdir, writeFile, readFile }
  }

  return {
    wrap,
    mount: (mount: Mount) => mounts.push(mount),
    unmount: (root: string) => mounts.splice(mounts.findIndex((m) => m.root === root), 1),
    makeCgroup: (dir: string) => makeCgroup(mountOf(dir)!, dir),
    moveProcess: (dir: string, pid: number) => moveProcess(mountOf(dir)!, dir, pid),
    pidsIn
  }
})

vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>()
  const cgroupfsCalls = cgroupfs.wrap(real)
  return { ...real, ...cgroupfsCalls, default: { ...real, ...cgroupfsCalls } }
})

interface Fixture {
  /** What the module is given instead of the real files. */
  readonly sources: { readonly cgroupFile: string; readonly mountinfo: string; readonly launcherDir: string }
  /** The service's cgroup, where the test process starts. */
  readonly service: string
  readonly base: string
  readonly close: () => void
}

/**
 * A cgroup v2 hierarchy delegated to the service at `/user.slice/svc` (its ancestors enable
 * `controllers` for their children), the test process alone in it; or v1's cpu hierarchy.
 */
const makeFixture = (options: { readonly version?: 1 | 2; readonly controllers?: string; readonly readOnly?: boolean } = {}): Fixture => {
  const version = options.version ?? 2
  const controllers = options.controllers ?? "cpuset cpu io memory pids"
  const base = mkdtempSync(join(tmpdir(), "wa-cgroupfs-"))
  const root = join(base, "cgroup")
  const cgroupFile = join(base, "proc-self-cgroup")
  const launcherDir = join(base, "tmp")
  mkdirSync(launcherDir)
  // v1: the cpu hierarchy; a v2 line for the (controller-less) unified one, as on a hybrid machine.
  const membership = version === 2 ? (path: string) => `0::${path}\n` : (path: string) => `4:memory:/\n2:cpu,cpuacct:${path}\n0::/\n`
  const mountLine = version === 2
    ? `41 31 0:38 / ${root} ${options.readOnly === true ? "ro" : "rw"},nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate\n`
    : `32 31 0:29 / ${root} rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,cpu,cpuacct\n`
  writeFileSync(join(base, "mountinfo"), `25 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n${mountLine}`)
  // The mount's root, as the kernel makes it; then the service's ancestors, as the system did.
  mkdirSync(root)
  cgroupfs.mount({ root, version, readOnly: options.readOnly === true, cgroupFile, membership })
  if (version === 2) {
    writeFileSync(join(root, "cgroup.controllers"), `${controllers}\n`)
    writeFileSync(join(root, "cgroup.subtree_control"), `${controllers}\n`)
    writeFileSync(join(root, "cgroup.procs"), "")
    cgroupfs.makeCgroup(join(root, "user.slice"))
    writeFileSync(join(root, "user.slice", "cgroup.subtree_control"), `${controllers}\n`)
  } else {
    for (const [name, text] of [["cgroup.procs", ""], ["tasks", ""], ["cpu.shares", "1024\n"], ["notify_on_release", "0\n"]]) writeFileSync(join(root, name!), text!)
  }
  const service = version === 2 ? join(root, "user.slice", "svc") : join(root, "svc")
  cgroupfs.makeCgroup(service)
  cgroupfs.moveProcess(service, process.pid)
  return {
    sources: { cgroupFile, mountinfo: join(base, "mountinfo"), launcherDir },
    service,
    base,
    close: () => {
      cgroupfs.unmount(root)
      rmSync(base, { recursive: true, force: true })
    }
  }
}

const read = (file: string) => readFileSync(file, "utf8").trim()
const words = (file: string) => read(file).split(/\s+/).filter((w) => w !== "")
const children = (dir: string) => readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort()
const leafName = `wa-service-${process.pid}`

/** A fixture for the test, removed at its end. */
const fixture = (options?: Parameters<typeof makeFixture>[0]) =>
  Effect.acquireRelease(Effect.sync(() => makeFixture(options)), (f) => Effect.sync(f.close))

const placed = async (weight: number, f: Fixture) => {
  const placement = await makeBrowserCgroup(weight, f.sources)
  if (placement._tag === "None") throw new Error(`no cgroup: ${placement.reason}`)
  return placement.cgroup
}

/** A stand-in for Chromium: prints its pid (the launcher's, kept by `exec`) and its arguments. */
const stub = (f: Fixture) => {
  const path = join(f.base, "browser-stub.sh")
  writeFileSync(path, "#!/bin/sh\necho \"$$ $*\"\n", { mode: 0o755 })
  return path
}

const exitOf = (child: ReturnType<typeof spawn>) =>
  new Promise<NodeJS.Signals | number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.signalCode ?? child.exitCode)
    else child.once("exit", (code, signal) => resolve(signal ?? code))
  })

describe("browser CPU weight, cgroup v2 (a delegated hierarchy in a temporary directory)", () => {
  it.live("the browser's cgroup gets cpu.weight = the setting, beside the leaf the service moved into; the launcher joins it; remove undoes it all", () =>
    Effect.gen(function*() {
      const f = yield* fixture()
      const cgroup = yield* Effect.promise(() => placed(25, f))
      assert.strictEqual(cgroup.version, 2)
      assert.strictEqual(cgroup.setting, "cpu.weight=25")
      assert.strictEqual(cgroup.weight, 25)
      assert.strictEqual(read(join(cgroup.path, "cpu.weight")), "25")
      assert.match(basename(cgroup.path), new RegExp(`^wa-browser-${process.pid}-[0-9a-f]{8}$`))

      // The service left its cgroup for a leaf beside the browser's (no internal processes), keeping weight 100.
      const leaf = join(f.service, leafName)
      assert.strictEqual(dirname(cgroup.path), f.service)
      assert.deepStrictEqual(children(f.service), [basename(cgroup.path), leafName].sort())
      assert.deepStrictEqual(cgroupfs.pidsIn(leaf), [process.pid])
      assert.deepStrictEqual(cgroupfs.pidsIn(f.service), [])
      assert.strictEqual(read(f.sources.cgroupFile), `0::/user.slice/svc/${leafName}`)
      assert.include(words(join(f.service, "cgroup.subtree_control")), "cpu")
      assert.strictEqual(read(join(leaf, "cpu.weight")), "100")

      // The launcher (run with sh, as a stand-in shows) writes its pid into the browser's cgroup and execs the browser with its arguments.
      const launcher = yield* Effect.promise(() => cgroup.launcher(stub(f)))
      assert.strictEqual(dirname(launcher), f.sources.launcherDir)
      accessSync(launcher, constants.X_OK)
      const run = spawnSync("sh", [launcher, "--remote-debugging-pipe", "--user-data-dir=/tmp/a b"], { encoding: "utf8" })
      assert.strictEqual(run.status, 0, run.stderr)
      assert.strictEqual(run.stdout, `${run.pid} --remote-debugging-pipe --user-data-dir=/tmp/a b\n`)
      assert.strictEqual(read(join(cgroup.path, "cgroup.procs")), String(run.pid))

      // As the pool runs it (executable, no shell named), with a browser that keeps running.
      const sleeper = yield* Effect.promise(() => cgroup.launcher("/bin/sleep"))
      assert.strictEqual(sleeper, launcher)
      const browser = spawn(launcher, ["30"], { stdio: "ignore" })
      const exited = exitOf(browser)
      for (let i = 0; i < 100 && !cgroupfs.pidsIn(cgroup.path).includes(browser.pid!); i++) yield* Effect.sleep("20 millis")
      assert.deepStrictEqual(yield* Effect.promise(() => cgroup.pids()), [browser.pid!])
      assert.deepStrictEqual(cgroupfs.pidsIn(leaf), [process.pid], "the browser is not in the service's leaf")

      // remove: what still runs in the browser's cgroup is ended, the cgroup and the launcher are
      // gone, and the service is back in its cgroup as it was started (cpu off for its children).
      yield* Effect.promise(() => cgroup.remove())
      assert.strictEqual(yield* Effect.promise(() => exited), "SIGKILL")
      assert.isFalse(existsSync(cgroup.path))
      assert.isFalse(existsSync(launcher))
      assert.isFalse(existsSync(leaf))
      assert.deepStrictEqual(children(f.service), [])
      assert.deepStrictEqual(cgroupfs.pidsIn(f.service), [process.pid])
      assert.strictEqual(read(f.sources.cgroupFile), "0::/user.slice/svc")
      assert.notInclude(words(join(f.service, "cgroup.subtree_control")), "cpu")
    }).pipe(Effect.scoped))

  it.live("two browser cgroups at once (two pools in one process) share the service's leaf", () =>
    Effect.gen(function*() {
      const f = yield* fixture()
      const first = yield* Effect.promise(() => placed(25, f))
      const second = yield* Effect.promise(() => placed(50, f))
      const leaf = join(f.service, leafName)
      assert.strictEqual(dirname(second.path), f.service)
      assert.strictEqual(read(join(second.path, "cpu.weight")), "50")
      assert.deepStrictEqual(children(f.service), [basename(first.path), basename(second.path), leafName].sort())
      assert.deepStrictEqual(children(leaf), [])
      assert.deepStrictEqual(cgroupfs.pidsIn(leaf), [process.pid])
      // The first removed: the other browser's cgroup still needs the service out of its cgroup.
      yield* Effect.promise(() => first.remove())
      assert.deepStrictEqual(children(f.service), [basename(second.path), leafName].sort())
      assert.deepStrictEqual(cgroupfs.pidsIn(leaf), [process.pid])
      yield* Effect.promise(() => second.remove())
      assert.deepStrictEqual(children(f.service), [])
      assert.deepStrictEqual(cgroupfs.pidsIn(f.service), [process.pid])
      assert.notInclude(words(join(f.service, "cgroup.subtree_control")), "cpu")
    }).pipe(Effect.scoped))

  it.live("what a killed service left (its browser's cgroup with the browser still in it, its leaf, its launcher) is removed at the next placement", () =>
    Effect.gen(function*() {
      const f = yield* fixture()
      // A service that is gone (its pid no longer runs).
      const dead = spawnSync("true").pid
      assert.isFalse(existsSync(`/proc/${dead}`))
      const staleBrowser = join(f.service, `wa-browser-${dead}-0a1b2c3d`)
      const staleLeaf = join(f.service, `wa-service-${dead}`)
      const staleLauncher = join(f.sources.launcherDir, `wa-browser-${dead}-0a1b2c3d.sh`)
      cgroupfs.makeCgroup(staleBrowser)
      cgroupfs.makeCgroup(staleLeaf)
      writeFileSync(staleLauncher, "#!/bin/sh\n", { mode: 0o700 })
      const orphan = spawn("sleep", ["30"], { stdio: "ignore" })
      const orphanExited = exitOf(orphan)
      cgroupfs.moveProcess(staleBrowser, orphan.pid!)
      // A service that still runs (pid 1) keeps its own.
      const living = join(f.service, "wa-browser-1-0f0f0f0f")
      cgroupfs.makeCgroup(living)
      writeFileSync(join(f.sources.launcherDir, "wa-browser-1-0f0f0f0f.sh"), "#!/bin/sh\n")

      // The pool's start: the stale ones first, then its own placement.
      const removed = yield* Effect.promise(() => removeStaleBrowserCgroups(f.sources))
      assert.deepStrictEqual([...removed].sort(), [staleBrowser, staleLauncher, staleLeaf].sort())
      assert.strictEqual(yield* Effect.promise(() => orphanExited), "SIGKILL")
      assert.deepStrictEqual(children(f.service), [basename(living)])
      assert.deepStrictEqual(readdirSync(f.sources.launcherDir), ["wa-browser-1-0f0f0f0f.sh"])
      const cgroup = yield* Effect.promise(() => placed(25, f))
      assert.deepStrictEqual(children(f.service), [basename(cgroup.path), basename(living), leafName].sort())
      // Run again while the service is in its leaf (another pool starting): nothing of ours goes.
      assert.deepStrictEqual(yield* Effect.promise(() => removeStaleBrowserCgroups(f.sources)), [])
      assert.deepStrictEqual(children(f.service), [basename(cgroup.path), basename(living), leafName].sort())
      yield* Effect.promise(() => cgroup.remove())
      assert.isFalse(existsSync(cgroup.path))
    }).pipe(Effect.scoped))

  it.live("no cgroup, and the reason, without the cpu controller, on a read-only hierarchy, with another program in the service's cgroup, or with the weight off", () =>
    Effect.gen(function*() {
      const noCpu = yield* fixture({ controllers: "io memory pids" })
      assert.deepStrictEqual(yield* Effect.promise(() => makeBrowserCgroup(25, noCpu.sources)), {
        _tag: "None",
        reason: "no cgroup hierarchy with the cpu controller"
      })
      assert.deepStrictEqual(children(noCpu.service), [])

      const readOnly = yield* fixture({ readOnly: true })
      const notWritable = yield* Effect.promise(() => makeBrowserCgroup(25, readOnly.sources))
      assert.strictEqual(notWritable._tag, "None")
      assert.match(notWritable._tag === "None" ? notWritable.reason : "", new RegExp(`^cgroup v2 at ${readOnly.service}: EROFS`))
      assert.deepStrictEqual(children(readOnly.service), [])
      assert.deepStrictEqual(cgroupfs.pidsIn(readOnly.service), [process.pid])

      // Another program (not a descendant of the service) shares the service's cgroup: the service does not move it.
      const shared = yield* fixture()
      const other = yield* Effect.acquireRelease(
        Effect.sync(() => Number(spawnSync("sh", ["-c", "sleep 30 >/dev/null 2>&1 & echo $!"], { encoding: "utf8" }).stdout.trim())),
        (pid) => Effect.sync(() => process.kill(pid, "SIGKILL"))
      )
      cgroupfs.moveProcess(shared.service, other)
      assert.deepStrictEqual(cgroupfs.pidsIn(shared.service), [process.pid, other])
      assert.deepStrictEqual(yield* Effect.promise(() => makeBrowserCgroup(25, shared.sources)), {
        _tag: "None",
        reason: `cgroup v2 at ${shared.service}: the service's cgroup ${shared.service} holds processes that are not the service's (${other}), so it cannot enable the cpu controller for a browser cgroup`
      })
      assert.deepStrictEqual(cgroupfs.pidsIn(shared.service), [process.pid, other])
      assert.deepStrictEqual(children(shared.service), [])
      assert.deepStrictEqual(words(join(shared.service, "cgroup.subtree_control")), [])

      const off = yield* fixture()
      assert.deepStrictEqual(yield* Effect.promise(() => makeBrowserCgroup(0, off.sources)), { _tag: "None", reason: "off (WA_BROWSER_CPU_WEIGHT=0)" })
      assert.deepStrictEqual(children(off.service), [])
    }).pipe(Effect.scoped))
})

describe("browser CPU weight, cgroup v1 (a cpu hierarchy in a temporary directory)", () => {
  it.live("cpu.shares = weight × 1024 / 100, the browser's cgroup inside the service's; removed with the launcher", () =>
    Effect.gen(function*() {
      const f = yield* fixture({ version: 1 })
      for (const [weight, shares] of [[25, 256], [100, 1024], [1, 10], [33, 338], [10_000, 102_400]] as const) {
        const cgroup = yield* Effect.promise(() => placed(weight, f))
        assert.strictEqual(cgroup.version, 1)
        assert.strictEqual(cgroup.setting, `cpu.shares=${shares}`)
        assert.strictEqual(read(join(cgroup.path, "cpu.shares")), String(shares))
        assert.strictEqual(dirname(cgroup.path), f.service)
        // No leaf in v1: the service stays where it is.
        assert.deepStrictEqual(cgroupfs.pidsIn(f.service), [process.pid])
        const launcher = yield* Effect.promise(() => cgroup.launcher(stub(f)))
        const run = spawnSync(launcher, [], { encoding: "utf8" })
        assert.strictEqual(run.stdout, `${run.pid} \n`)
        assert.strictEqual(read(join(cgroup.path, "cgroup.procs")), String(run.pid))
        yield* Effect.promise(() => cgroup.remove())
        assert.deepStrictEqual(children(f.service), [])
        assert.isFalse(existsSync(launcher))
      }
    }).pipe(Effect.scoped))
})
