/**
 * A service stand-in for test/browser/cpu-weight.test.ts: a pool with a CPU weight starts its
 * browser, prints the browser's cgroup directory, and waits to be killed (SIGKILL: nothing of it
 * runs its finalizers).
 */
import { Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import { BrowserPool } from "../../src/browser/pool.ts"
import { chromiumPath, launchedChromiumPids } from "./support.ts"

const program = Effect.gen(function*() {
  const pool = yield* BrowserPool
  yield* pool.acquireContext()
  const [pid] = launchedChromiumPids()
  const line = readFileSync(`/proc/${pid}/cgroup`, "utf8").split("\n").find((l) => /^\d+:([^:]*,)?cpu(,[^:]*)?:/.test(l)) ?? ""
  process.stdout.write(`${JSON.stringify({ browserPid: pid, cgroup: line.slice(line.lastIndexOf(":") + 1) })}\n`)
  return yield* Effect.never
})

Effect.runFork(Effect.scoped(Layer.build(BrowserPool.layerWith({ executablePath: chromiumPath, allowPrivateNetworks: true, cpuWeight: 25 })).pipe(
  Effect.flatMap((context) => Effect.provide(program, context))
)))
