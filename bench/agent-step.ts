/**
 * Browser overhead of one agent step without model time: observe the page, then act on a ref
 * from that observation, on the local fixture site. Two step kinds, 50 iterations each:
 * - click: click the "Next page"/"Previous page" link (a real navigation, settled afterwards);
 * - type: type into the form's Name field (no navigation).
 * Prints median and p95 milliseconds of observe, act and the whole step. The click step is
 * measured twice: with private networks allowed (no guard) and guarded (route check + egress
 * proxy, the fixture origin exempted), which is the production default.
 *
 *   node bench/agent-step.ts [iterations]
 */
import { Effect, Layer } from "effect"
import { click, navigate, type } from "../src/browser/actions.ts"
import { observe } from "../src/browser/observe.ts"
import { BrowserPool } from "../src/browser/pool.ts"
import { AppConfig } from "../src/config/config.ts"
import { startFixtureSites } from "../test/fixtures/sites/server.ts"
import { quantile } from "./stats.ts"

const iterations = Number(process.argv[2] ?? 50)

const refOf = (snapshot: string, pattern: RegExp): string => {
  const line = snapshot.split("\n").find((l) => pattern.test(l)) ?? ""
  const ref = new RegExp(`${pattern.source}.*?\\[((?:f\\d+)*e\\d+)\\]`).exec(line)?.[1]
  if (ref === undefined) throw new Error(`no ${pattern} in\n${snapshot}`)
  return ref
}

interface Timing {
  observe: Array<number>
  act: Array<number>
  step: Array<number>
}

const site = await startFixtureSites()

const program = Effect.scoped(Effect.gen(function*() {
  const pool = yield* BrowserPool
  const open = yield* pool.acquireContext({ allowPrivateNetworks: true })
  const guarded = yield* pool.acquireContext({ allowPrivateNetworks: false, allowedOrigins: [site.url] })
  const time = <A, E>(effect: Effect.Effect<A, E>) =>
    Effect.gen(function*() {
      const start = performance.now()
      const value = yield* effect
      return [value, performance.now() - start] as const
    })

  const run = Effect.fnUntraced(function*(kind: "click" | "type", lease: typeof open) {
    const timing: Timing = { observe: [], act: [], step: [] }
    yield* navigate(lease, `${site.url}${kind === "click" ? "/page/1" : "/form"}`)
    for (let i = 0; i < iterations + 3; i++) {
      const [observation, observeMs] = yield* time(observe(lease))
      const [, actMs] = yield* time(
        kind === "click"
          ? click(lease, refOf(observation.snapshot, /link "(?:Next|Previous) page"/))
          : type(lease, refOf(observation.snapshot, /textbox "Name"/), `name ${i}`)
      )
      if (i < 3) continue // warm-up
      timing.observe.push(observeMs)
      timing.act.push(actMs)
      timing.step.push(observeMs + actMs)
    }
    return timing
  })

  const cases = [
    ["observe + click a link (navigates)", "click", open],
    ["observe + click a link (navigates), guarded", "click", guarded],
    ["observe + type into a field", "type", open]
  ] as const
  for (const [label, kind, lease] of cases) {
    const timing = yield* run(kind, lease)
    const fmt = (label: string, values: Array<number>) =>
      `${label.padEnd(8)} median ${quantile(values, 0.5).toFixed(1).padStart(6)} ms   p95 ${quantile(values, 0.95).toFixed(1).padStart(6)} ms`
    console.log(`${label}, ${iterations} iterations`)
    console.log(`  ${fmt("observe", timing.observe)}`)
    console.log(`  ${fmt("act", timing.act)}`)
    console.log(`  ${fmt("step", timing.step)}`)
  }
}))

await Effect.runPromise(program.pipe(Effect.provide(BrowserPool.layerFromAppConfig.pipe(Layer.provide(AppConfig.layer)))))
await site.close()
