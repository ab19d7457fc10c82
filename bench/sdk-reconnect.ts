/**
 * SDK stream reconnect: what a dropped connection costs a consumer of a run's events.
 *
 * The real service (`node src/main.ts serve`, embedded PostgreSQL) runs DoAnything runs driven by
 * the scripted model (each step a wait_for of 1 ms, so events keep flowing). For each trial two SDK
 * consumers follow the same run: a baseline straight to the service, and a subject through a TCP
 * proxy on loopback. After the subject has seen `--drop-after` events, the proxy resets every
 * connection (as a broken network path would); the SDK reconnects with Last-Event-ID.
 *
 * Per trial: whether the subject got exactly the baseline's ids (in order, none lost, none
 * doubled), and the added delay: for each event, its arrival at the subject minus its arrival at
 * the baseline; the largest of these is what the drop cost. Target: no event lost, added <= 1 s.
 *
 *   node bench/sdk-reconnect.ts [--trials=10] [--steps=30] [--drop-after=8]
 */
import { createClient, type StreamEvent } from "../src/client/index.ts"
import { type ChatRequest, startScriptedModel } from "../test/fixtures/model/scripted-model.ts"
import { startTcpProxy } from "../test/support/loopback-proxy.ts"
import { scriptedAgentEnv, startService, stopAndClean } from "../test/support/service.ts"

const args = process.argv.slice(2)
const option = (name: string, fallback: number) => Number(args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback)
const trials = option("trials", 10)
const steps = option("steps", 30)
const dropAfter = option("drop-after", 8)
const TARGET_ADDED_MS = 1000

const quantile = (values: ReadonlyArray<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}
const round1 = (x: number) => Math.round(x * 10) / 10

const stepsTaken = (request: ChatRequest) => request.messages.filter((m) => m.role === "tool").length
const model = await startScriptedModel((request) =>
  stepsTaken(request) < steps ? { tool: "wait_for", args: { timeout_ms: 1 } } : { tool: "done", args: { output: "ok" } }
)
const service = await startService({ env: scriptedAgentEnv(model.baseUrl) })
const proxy = await startTcpProxy(service.url)
const options = { token: service.apiKey, projectId: service.projectId }
const direct = createClient({ baseUrl: service.url, ...options })
const viaProxy = createClient({ baseUrl: proxy.url, ...options })

const follow = async (
  events: AsyncIterable<StreamEvent>,
  onEvent?: (event: StreamEvent, count: number) => void
): Promise<Map<number, number>> => {
  const arrivals = new Map<number, number>()
  let count = 0
  for await (const event of events) {
    if (event.id !== undefined) {
      if (arrivals.has(event.id)) arrivals.set(-event.id, performance.now()) // a doubled id: recorded as negative
      else arrivals.set(event.id, performance.now())
    }
    onEvent?.(event, ++count)
  }
  return arrivals
}

interface Trial {
  readonly events: number
  readonly lost: number
  readonly doubled: number
  readonly inOrder: boolean
  readonly reconnects: number
  readonly addedMs: number
  readonly dropToNextEventMs: number
}

const results: Array<Trial> = []
try {
  for (let trial = 0; trial < trials; trial++) {
    const session = await direct.runs.create({ instructions: "Step along", keep_alive: false })
    const rid = session.latest_run_id!
    let reconnects = 0
    let droppedAt: number | undefined
    let firstAfterDrop: number | undefined
    const baseline = follow(direct.runs.events(session.id, rid))
    const subject = follow(
      viaProxy.runs.events(session.id, rid, { onReconnect: () => void reconnects++ }),
      (_event, count) => {
        if (droppedAt !== undefined && firstAfterDrop === undefined) firstAfterDrop = performance.now()
        if (count === dropAfter) {
          proxy.dropAll()
          droppedAt = performance.now()
        }
      }
    )
    const [base, sub] = await Promise.all([baseline, subject])
    const baseIds = [...base.keys()]
    const subIds = [...sub.keys()].filter((id) => id > 0)
    const added = subIds.filter((id) => base.has(id)).map((id) => sub.get(id)! - base.get(id)!)
    results.push({
      events: baseIds.length,
      lost: baseIds.filter((id) => !sub.has(id)).length,
      doubled: [...sub.keys()].filter((id) => id < 0).length,
      inOrder: subIds.every((id, i) => i === 0 || id > subIds[i - 1]!),
      reconnects,
      addedMs: Math.max(0, ...added),
      dropToNextEventMs: firstAfterDrop !== undefined && droppedAt !== undefined ? firstAfterDrop - droppedAt : Number.NaN
    })
    const r = results.at(-1)!
    console.log(`trial ${trial + 1}: ${r.events} events, lost ${r.lost}, doubled ${r.doubled}, in order ${r.inOrder}, reconnects ${r.reconnects}, added ${round1(r.addedMs)} ms, drop→next event ${round1(r.dropToNextEventMs)} ms`)
  }
} finally {
  await proxy.close()
  await stopAndClean(service)
  await model.close()
}

const added = results.map((r) => r.addedMs)
const lost = results.reduce((n, r) => n + r.lost + r.doubled, 0)
const allReconnected = results.every((r) => r.reconnects >= 1)
console.log("")
console.log(`SDK reconnect after a dropped stream (${results.length} trials, ${steps} steps per run, drop after ${dropAfter} events; measured under load)`)
console.log(`  events lost or doubled:          ${lost} (target 0)`)
console.log(`  every trial reconnected:         ${allReconnected}`)
console.log(`  added delay p50 / p95 / max:     ${round1(quantile(added, 0.5))} / ${round1(quantile(added, 0.95))} / ${round1(Math.max(...added))} ms (target <= ${TARGET_ADDED_MS} ms)`)
console.log(`  drop → next event p50 / max:     ${round1(quantile(results.map((r) => r.dropToNextEventMs), 0.5))} / ${round1(Math.max(...results.map((r) => r.dropToNextEventMs)))} ms`)
console.log(`  verdict: ${lost === 0 && allReconnected && Math.max(...added) <= TARGET_ADDED_MS ? "PASS" : "FAIL"}`)
process.exit(0)
