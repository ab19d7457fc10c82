/**
 * The browser's CPU weight (WA_BROWSER_CPU_WEIGHT, src/browser/cpu-weight.ts) on this machine: a
 * real Chromium through the pool, its processes read from /proc. Needs a writable cpu cgroup
 * hierarchy (v1 `cpu` or v2 with the cpu controller delegated), as on the CI machine where the
 * tests run as root; the test fails, rather than skips, without one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger } from "effect"
import { spawn } from "node:child_process"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { navigate } from "../../src/browser/actions.ts"
import { BrowserPool } from "../../src/browser/pool.ts"
import { AppConfig } from "../../src/config/config.ts"
import { chromiumPath, launchedChromiumPids, remoteChromium } from "./support.ts"
import { startFixtureSites } from "../fixtures/sites/server.ts"

/** Pids of `pid` and all its living descendants (zombies, which have left their cgroup, aside), from /proc. */
const processTree = (pid: number): Array<number> => {
  const children = new Map<number, Array<number>>()
  for (const entry of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      const [state, ppidText] = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      if (state === "Z") continue
      const ppid = Number(ppidText)
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)])
    } catch {
      // exited meanwhile
    }
  }
  const out: Array<number> = []
  for (const queue = [pid]; queue.length > 0;) {
    const next = queue.shift()!
    out.push(next)
    queue.push(...(children.get(next) ?? []))
  }
  return out
}

/** Whether a process is still running: an exiting one has an empty command line (and has left its cgroup). */
const stillLiving = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8") !== ""
  } catch {
    return false
  }
}

/** Where a process's cpu cgroup is: its directory and its weight there (v1 shares or v2 weight). */
const cpuCgroupOf = (pid: number): { readonly dir: string; readonly setting: string } => {
  const lines = readFileSync(`/proc/${pid}/cgroup`, "utf8").trim().split("\n")
  const v1 = lines.find((l) => /^\d+:([^:]*,)?cpu(,[^:]*)?:/.test(l))
  if (v1 !== undefined) {
    const dir = join(existsSync("/sys/fs/cgroup/cpu") ? "/sys/fs/cgroup/cpu" : "/sys/fs/cgroup/cpu,cpuacct", v1.slice(v1.lastIndexOf(":") + 1))
    return { dir, setting: `cpu.shares=${readFileSync(join(dir, "cpu.shares"), "utf8").trim()}` }
  }
  const v2 = lines.find((l) => l.startsWith("0::"))!
  const dir = join("/sys/fs/cgroup", v2.slice(3))
  return { dir, setting: `cpu.weight=${readFileSync(join(dir, "cpu.weight"), "utf8").trim()}` }
}

const ourBrowserCgroups = () =>
  readdirSync(cpuCgroupOf(process.pid).dir).filter((name) => name.startsWith(`wa-browser-${process.pid}-`))

const capturingLogger = () => {
  const lines: Array<{ message: unknown; annotations: Record<string, unknown> }> = []
  const logger = Logger.make((options) => {
    const record = Logger.formatStructured.log(options)
    lines.push({ message: record.message, annotations: record.annotations })
  })
  const cpuWeight = () => lines.filter((l) => String(l.message).startsWith("browser CPU weight"))
  return { layer: Logger.layer([logger]), cpuWeight }
}

const sleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

describe("browser CPU weight", () => {
  it.live("the browser's whole process tree runs in a cgroup with the lower weight, removed when the pool stops", () =>
    Effect.gen(function*() {
      const site = yield* Effect.acquireRelease(Effect.promise(startFixtureSites), (s) => Effect.promise(() => s.close()))
      const logs = capturingLogger()
      const service = cpuCgroupOf(process.pid)
      const seen = yield* Effect.scoped(Effect.gen(function*() {
        const pool = yield* BrowserPool
        const lease = yield* pool.acquireContext()
        // Renderers are forked after the launch (by the zygote): they are in the cgroup too.
        yield* navigate(lease, `${site.url}/page/1`)
        const second = yield* pool.acquireContext()
        yield* navigate(second, `${site.url}/page/2`)
        const [browserPid, ...others] = launchedChromiumPids()
        assert.strictEqual(others.length, 0)
        const tree = processTree(browserPid!)
        assert.isAtLeast(tree.length, 4, "browser, zygote and renderers")
        // A process that is exiting (a renderer Chromium let go) has already left its cgroup for
        // the root one before it turns zombie; its command line is empty by then, so leave it out.
        const living = tree.flatMap((pid) => {
          try {
            const dir = cpuCgroupOf(pid).dir
            return stillLiving(pid) ? [{ pid, dir }] : []
          } catch {
            return []
          }
        })
        assert.isAtLeast(living.length, 4, "browser, zygote and renderers")
        const cgroups = new Set(living.map((p) => p.dir))
        assert.strictEqual(cgroups.size, 1, living.map((p) => `${p.pid} ${p.dir}`).join("\n"))
        const browser = cpuCgroupOf(browserPid!)
        assert.notStrictEqual(browser.dir, service.dir)
        assert.match(browser.dir, new RegExp(`/wa-browser-${process.pid}-[0-9a-f]+$`))
        // 25 against the service's 100: v1 shares 256 against 1024, v2 weight 25 against 100.
        assert.oneOf(browser.setting, ["cpu.shares=256", "cpu.weight=25"])
        const procs = readFileSync(join(browser.dir, "cgroup.procs"), "utf8").trim().split("\n").map(Number)
        assert.deepStrictEqual(living.filter((p) => !procs.includes(p.pid) && stillLiving(p.pid)), [])
        // The service is not in it.
        assert.notInclude(procs, process.pid)
        return browser.dir
      }).pipe(Effect.provide(Layer.mergeAll(
        BrowserPool.layerWith({ executablePath: chromiumPath, allowPrivateNetworks: true, cpuWeight: 25 }),
        logs.layer
      ))))
      // Stopped: the browser is gone and so is its cgroup (and the launcher beside it).
      assert.isFalse(existsSync(seen), `${seen} is still there`)
      assert.deepStrictEqual(ourBrowserCgroups(), [])
      assert.deepStrictEqual(readdirSync("/tmp").filter((n) => n.startsWith(`wa-browser-${process.pid}-`)), [])
      const [line, ...more] = logs.cpuWeight()
      assert.strictEqual(more.length, 0)
      assert.strictEqual(line?.message, "browser CPU weight applied")
      assert.strictEqual(line?.annotations["cgroup"], seen)
    }), 60_000)

  it.live("a cgroup left by a killed service (its browser still in it) is removed at the next start", () =>
    Effect.gen(function*() {
      const child = spawn(process.execPath, [join(import.meta.dirname, "cpu-weight-child.ts")], { stdio: ["ignore", "pipe", "inherit"] })
      const first = yield* Effect.promise(() => new Promise<string>((resolve, reject) => {
        // Its log lines come first.
        createInterface({ input: child.stdout! }).on("line", (line) => line.startsWith("{\"browserPid\"") && resolve(line))
        child.once("exit", (code) => reject(new Error(`child exited ${code}`)))
      }))
      const { browserPid, cgroup } = JSON.parse(first) as { browserPid: number; cgroup: string }
      const dir = join(cpuCgroupOf(process.pid).dir, cgroup.slice(cgroup.lastIndexOf("/") + 1))
      assert.match(cgroup, new RegExp(`/wa-browser-${child.pid}-[0-9a-f]+$`))
      child.kill("SIGKILL")
      yield* Effect.promise(() => new Promise((resolve) => child.once("exit", resolve)))
      // The dead service's pid is gone; its cgroup is not.
      assert.isTrue(existsSync(dir))
      assert.isTrue(readdirSync("/tmp").some((n) => n.startsWith(`wa-browser-${child.pid}-`)))
      // A new pool (the next start) removes it and ends what still ran in it.
      const logs = capturingLogger()
      yield* Effect.scoped(Effect.gen(function*() {
        yield* BrowserPool
      }).pipe(Effect.provide(Layer.mergeAll(BrowserPool.layerWith({ executablePath: chromiumPath, allowPrivateNetworks: true, cpuWeight: 25 }), logs.layer))))
      assert.isFalse(existsSync(dir), `${dir} is still there`)
      assert.isFalse(readdirSync("/tmp").some((n) => n.startsWith(`wa-browser-${child.pid}-`)))
      for (let i = 0; i < 20 && existsSync(`/proc/${browserPid}`); i++) yield* sleep(50)
      const state = existsSync(`/proc/${browserPid}/stat`) ? readFileSync(`/proc/${browserPid}/stat`, "utf8").split(") ")[1]?.[0] : undefined
      assert.oneOf(state, [undefined, "Z"], "the orphaned browser was ended")
    }), 60_000)

  it.live("no cgroup with WA_BROWSER_CPU_WEIGHT=off or with a remote (CDP) browser, and a line says so", () =>
    Effect.gen(function*() {
      for (const setting of ["off", "0"]) {
        const logs = capturingLogger()
        const config = AppConfig.layerFrom({ WA_BROWSER_CPU_WEIGHT: setting, CHROMIUM_PATH: chromiumPath, WA_DATA_DIR: "/tmp/wa-cpu-weight-test" })
        yield* Effect.scoped(Effect.gen(function*() {
          const pool = yield* BrowserPool
          yield* pool.acquireContext()
          assert.deepStrictEqual(ourBrowserCgroups(), [])
          const [browserPid] = launchedChromiumPids()
          assert.strictEqual(cpuCgroupOf(browserPid!).dir, cpuCgroupOf(process.pid).dir)
        }).pipe(Effect.provide(Layer.mergeAll(BrowserPool.layerFromAppConfig.pipe(Layer.provide(config)), logs.layer))))
        assert.deepStrictEqual(logs.cpuWeight().map((l) => [l.message, l.annotations["reason"]]), [["browser CPU weight not applied", "off (WA_BROWSER_CPU_WEIGHT=0)"]])
      }
      const remote = yield* remoteChromium
      const logs = capturingLogger()
      yield* Effect.scoped(Effect.gen(function*() {
        const pool = yield* BrowserPool
        yield* pool.acquireContext()
        assert.deepStrictEqual(ourBrowserCgroups(), [])
      }).pipe(Effect.provide(Layer.mergeAll(
        BrowserPool.layerWith({ executablePath: chromiumPath, cdpUrl: remote.endpoint, allowPrivateNetworks: true, cpuWeight: 25 }),
        logs.layer
      ))))
      assert.deepStrictEqual(logs.cpuWeight().map((l) => [l.message, l.annotations["reason"]]), [["browser CPU weight not applied", "a remote browser (WA_BROWSER_CDP_URL)"]])
    }), 60_000)

  it.live("WA_BROWSER_CPU_WEIGHT: 1..10000, 0 or off; anything else stops start-up naming the variable", () =>
    Effect.gen(function*() {
      const read = (value: string | undefined) =>
        Effect.exit(Effect.gen(function*() {
          return (yield* AppConfig).browserCpuWeight
        }).pipe(Effect.provide(AppConfig.layerFrom({ WA_BROWSER_CPU_WEIGHT: value }))))
      for (const [value, expected] of [[undefined, 25], ["off", 0], ["0", 0], ["100", 100], ["10000", 10000]] as const) {
        const exit = yield* read(value)
        assert.deepStrictEqual(exit._tag === "Success" ? exit.value : exit.cause, expected, String(value))
      }
      for (const value of ["-1", "10001", "half", "2.5"]) {
        const exit = yield* read(value)
        assert.strictEqual(exit._tag, "Failure", value)
        assert.include(String(exit._tag === "Failure" ? exit.cause : ""), "WA_BROWSER_CPU_WEIGHT")
      }
    }))
})
