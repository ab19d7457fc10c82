/**
 * A Track tick's writes under the run kernel's superseded rule (src/track/monitor-store.ts), in-process
 * on a database of this file with the real RunStore and MonitorStore: a tick's start claims the tick
 * for its execution (the kernel has a record's start be the claim), and its success and failure carry
 * that token; once another execution claimed it (by starting it, or RunStore.claimExecution), the
 * older one's write dies with SupersededExecution and writes nothing (neither the monitor row nor its
 * events), while the newer one's goes through. A tick is read by the kernel (getRun with its kind) as
 * a `TrackTick` run, and a slot's tick run is made once and read as one (createSlotRun). A tick
 * made for a monitor deleted since it was read (run_now racing a DELETE) is MonitorNotFound, a
 * slot's run undefined: nothing is made.
 */
import { assert, expect, layer } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, References } from "effect"
import { Projects } from "../../src/auth/projects.ts"
import { AppConfig } from "../../src/config/config.ts"
import type { Monitor } from "../../src/domain/monitor.ts"
import { type ProjectId, RunId } from "../../src/domain/run.ts"
import { MonitorNotFound } from "../../src/domain/errors.ts"
import { ExecutionToken } from "../../src/domain/id-schemas.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { RunStore, SupersededExecution } from "../../src/store/runs.ts"
import { MonitorStore } from "../../src/track/monitor-store.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"

const ConfigLive = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabase("tick_executions")
  const dataDir = yield* freshDataDir("wa-tick-executions")
  return AppConfig.layerFrom({ DATABASE_URL: url, WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Warn" })
}))

const TestLayer = Layer.mergeAll(RunStore.layer, MonitorStore.layer, Projects.layer).pipe(
  Layer.provideMerge(databaseLayer("own")),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
  Layer.provideMerge(ConfigLive)
)

const newMonitor = Effect.gen(function*() {
  const projectId = (yield* Projects.use((projects) => projects.create("tick-executions"))).id as ProjectId
  return yield* MonitorStore.use((monitors) =>
    monitors.create({
      projectId,
      createdByKeyId: null,
      status: "active",
      intent: "watch the kernel",
      channel: { kind: "console_inbox", url: null, webhook_id: null, schedule_id: null },
      notifySecret: "secret",
      schedule: { kind: "interval", interval_seconds: 3600 },
      targetUrls: ["http://127.0.0.1:9/"],
      extractionSchema: null,
      triggerDsl: null,
      stopConditionDsl: null,
      profileId: null
    } as never)
  )
})

const superseded = <A, E>(exit: Exit.Exit<A, E>) => Exit.isFailure(exit) && Cause.squash(exit.cause) instanceof SupersededExecution

const success = (monitor: Monitor) => ({
  contentHash: "h1",
  extracted: null,
  text: "the page",
  pages: [],
  diff: null,
  changed: false,
  fired: false,
  fetchedAt: new Date(),
  llmCostMicros: 0,
  status: monitor.status,
  statusReason: null,
  events: []
})

layer(TestLayer, { excludeTestServices: true, timeout: 60_000 })("a tick's writes under the superseded rule", (it) => {
  it.effect("the kernel reads a tick as a TrackTick run; the run APIs' getRun does not", () =>
    Effect.gen(function*() {
      const runs = yield* RunStore
      const monitors = yield* MonitorStore
      const monitor = yield* newMonitor
      const tick = yield* monitors.createTick(monitor, "schedule", new Date("2026-01-01T00:00:00.000Z"))
      const runId = RunId.make(tick.id)
      expect(yield* runs.getRun(runId)).toBeUndefined()
      const run = yield* runs.getRun(runId, "track_tick")
      expect(run).toMatchObject({ kind: "track_tick", status: "running", started_at: null })
      expect(run!.request).toEqual({ _tag: "TrackTick", monitor_id: monitor.id, trigger: "schedule", slot_at: "2026-01-01T00:00:00.000Z" })
      expect(yield* runs.getRun(runId, "web_search")).toBeUndefined()
      // The slot's tick run read as the kernel reads it, made once: a second Fire finds the first.
      expect(yield* monitors.createSlotRun(monitor, new Date("2026-01-01T00:00:00.000Z"))).toEqual(run)
      const next = yield* monitors.createSlotRun(monitor, new Date("2026-01-01T01:00:00.000Z"))
      assert(next !== undefined)
      expect(next).toMatchObject({ kind: "track_tick", status: "running", request: { _tag: "TrackTick", monitor_id: monitor.id, trigger: "schedule" } })
      expect(yield* runs.getRun(next.id, "track_tick")).toEqual(next)
    }))

  it.effect("a tick's start claims it; success and failure of an execution another has claimed the tick from write nothing; the newer one's do", () =>
    Effect.gen(function*() {
      const runs = yield* RunStore
      const monitors = yield* MonitorStore
      const monitor = yield* newMonitor
      const queued = yield* monitors.createTick(monitor, "run_now", null)
      const runId = RunId.make(queued.id)

      // An older execution starts the tick (its start is its claim): numbered, `monitor.tick.started`.
      const older = ExecutionToken.make("evt_older")
      const { tick: first } = yield* monitors.startTick(queued, older)
      expect(first.n).toBe(1)
      expect((yield* monitors.eventsAfter(monitor.id, 0, 100)).at(-1)).toMatchObject({ type: "monitor.tick.started", data: { run_id: queued.id, n: 1, resumed: false } })
      expect(yield* runs.holdsClaim(runId, older)).toBe(true)

      // A newer execution starts it again (the older one's runner froze): it keeps its number,
      // says it resumed, and the claim is the newer one's.
      const newer = ExecutionToken.make("evt_newer")
      const { tick } = yield* monitors.startTick(first, newer)
      expect(tick.n).toBe(1)
      expect((yield* monitors.get(monitor.id))!.last_tick_n).toBe(1)
      const started = yield* monitors.eventsAfter(monitor.id, 0, 100)
      expect(started.at(-1)).toMatchObject({ type: "monitor.tick.started", data: { run_id: tick.id, n: 1, resumed: true } })
      expect(yield* runs.holdsClaim(runId, older)).toBe(false)
      expect(superseded(yield* Effect.exit(monitors.completeTick(first, monitor, success(monitor), older)))).toBe(true)
      expect(yield* monitors.eventsAfter(monitor.id, 0, 100)).toEqual(started)

      // Taken over again: the execution that started it can neither complete nor fail it.
      const newest = yield* runs.claimExecution(runId)
      expect(superseded(yield* Effect.exit(monitors.completeTick(tick, monitor, success(monitor), newer)))).toBe(true)
      expect(superseded(yield* Effect.exit(monitors.failTick(tick, { code: "fetch_failed", detail: "stale", pages: [], llmCostMicros: 0 }, 3, newer)))).toBe(true)
      expect(yield* monitors.eventsAfter(monitor.id, 0, 100)).toEqual(started)
      expect(yield* monitors.getTick(tick.id)).toMatchObject({ status: "running", snapshot_id: null })
      expect((yield* monitors.get(monitor.id))!).toMatchObject({ last_snapshot_id: null, consecutive_failures: 0 })

      // The newest execution completes it.
      const { status, snapshot } = yield* monitors.completeTick(tick, monitor, success(monitor), newest)
      expect(status).toBe("active")
      expect(yield* monitors.getTick(tick.id)).toMatchObject({ status: "done", snapshot_id: snapshot.id })
      expect((yield* monitors.eventsAfter(monitor.id, 0, 100)).at(-1)).toMatchObject({ type: "monitor.tick.completed", data: { run_id: tick.id } })
    }))

  it.effect("a tick of a monitor deleted since it was read: run_now is MonitorNotFound, a slot's run undefined, nothing made", () =>
    Effect.gen(function*() {
      const monitors = yield* MonitorStore
      const monitor = yield* newMonitor
      const slot = new Date("2026-01-01T00:00:00.000Z")
      // The monitor as the caller read it, then deleted (DELETE /monitors/{mid}) before its tick is made.
      yield* monitors.remove(monitor.id)
      const refused = yield* Effect.flip(monitors.createTick(monitor, "run_now", null))
      expect(refused).toBeInstanceOf(MonitorNotFound)
      expect(refused).toMatchObject({ monitorId: monitor.id, httpStatus: 404, code: "monitor_not_found" })
      expect(yield* monitors.createSlotRun(monitor, slot)).toBeUndefined()
      expect(yield* Effect.flip(monitors.createTick(monitor, "schedule", slot))).toBeInstanceOf(MonitorNotFound)
      expect(yield* monitors.listTicks(monitor.id, 10, undefined)).toEqual([])
    }))
})
