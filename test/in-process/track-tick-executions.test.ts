/**
 * A Track tick's writes under the run kernel's superseded rule (src/track/monitor-store.ts), in-process
 * on a database of this file with the real RunStore and MonitorStore: a tick's start, its success and
 * its failure carry the token of the execution that claimed the tick (RunStore.claimExecution, as the
 * kernel's `begin` does); once another execution claimed it, the older one's write dies with
 * SupersededExecution and writes nothing (neither the monitor row nor its events), while the newer
 * one's goes through. A tick is read by the kernel (getRun with its kind) as a `TrackTick` run.
 */
import { expect, layer } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, References } from "effect"
import { Projects } from "../../src/auth/projects.ts"
import { AppConfig } from "../../src/config/config.ts"
import type { Monitor } from "../../src/domain/monitor.ts"
import { type ProjectId, RunId } from "../../src/domain/run.ts"
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
    }))

  it.effect("start, success and failure of an execution another has claimed the tick from write nothing; the newer one's do", () =>
    Effect.gen(function*() {
      const runs = yield* RunStore
      const monitors = yield* MonitorStore
      const monitor = yield* newMonitor
      const queued = yield* monitors.createTick(monitor, "run_now", null)
      const runId = RunId.make(queued.id)

      // The older execution claims the tick, then another claims it before the older one starts it.
      const older = yield* runs.claimExecution(runId)
      const newer = yield* runs.claimExecution(runId)
      const eventsBefore = yield* monitors.eventsAfter(monitor.id, 0, 100)
      expect(superseded(yield* Effect.exit(monitors.startTick(queued, older)))).toBe(true)
      expect(yield* monitors.eventsAfter(monitor.id, 0, 100)).toEqual(eventsBefore)
      expect((yield* monitors.get(monitor.id))!.last_tick_n).toBe(0)

      // The newer one starts it: numbered once, `monitor.tick.started`.
      const { tick } = yield* monitors.startTick(queued, newer)
      expect(tick.n).toBe(1)
      const started = yield* monitors.eventsAfter(monitor.id, 0, 100)
      expect(started.at(-1)).toMatchObject({ type: "monitor.tick.started", data: { run_id: tick.id, n: 1, resumed: false } })

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
})
