/**
 * The run kernel (src/runs/kernel.ts), in-process: an executor of this file's own, plugged into
 * `runEntityHandlers` on an entity of its own, as DeepResearch and WebSearch plug theirs
 * (src/research/executor.ts, src/search/executor.ts); the real RunStore, Callbacks and RunNotifier
 * on a database of this file, the entity on the cluster's TestRunner, the callbacks delivered to a
 * loopback receiver. What each test asserts is stored state: the run row, its events, its
 * callback deliveries (the outbox), and the kernel's log lines.
 *
 * The executor's work for a run is the `plan` the test registers for it before sending Execute;
 * `conducted` counts the kernel's calls of the executor's `conduct`.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Logger, References, Schedule } from "effect"
import { AiError } from "effect/ai"
import { ClusterSchema, Entity, TestRunner } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { SqlClient } from "effect/sql"
import { Projects } from "../../src/auth/projects.ts"
import { RunnerLifecycle } from "../../src/cluster/lifecycle.ts"
import { AppConfig } from "../../src/config/config.ts"
import { cancelRun } from "../../src/runs/cancel.ts"
import type { EventData } from "../../src/domain/events.ts"
import { type DeepResearchRequest, type ProjectId, type Run, RunId, type RunRequest, type WebSearchRunRequest } from "../../src/domain/run.ts"
import type { ExecutionToken } from "../../src/domain/id-schemas.ts"
import { callbackView } from "../../src/http/views/callback-view.ts"
import { type Begin, RunFailure, runEntityHandlers, RunStopped } from "../../src/runs/kernel.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { RunStore, SupersededExecution } from "../../src/store/runs.ts"
import { Callbacks } from "../../src/webhooks/callbacks.ts"
import { RunNotifier } from "../../src/webhooks/run-notifier.ts"
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"

// --- The executor under test ----------------------------------------------------------------

/** What the executor does for one run: the test's script, given the run and the kernel's `begin`. */
type Plan = (run: Run, begin: Begin) => Effect.Effect<void, unknown, RunStore | SqlClient.SqlClient>

const plans = new Map<string, Plan>()
const conducted = new Map<string, number>()
const conductedFor = (runId: RunId) => conducted.get(runId) ?? 0

const INTERNAL_ERROR_DETAIL = "the kernel test's work failed"

const Execute = Rpc.make("Execute", { payload: { runId: RunId } }).annotate(ClusterSchema.Persisted, true)
const Interrupt = Rpc.make("Interrupt", { payload: { runId: RunId } })
const KernelTestEntity = Entity.make("KernelTest", [Execute, Interrupt])

/** A DeepResearch-kind product: its runs are the DeepResearch runs; the work is the run's plan. */
const KernelTestEntityLive = KernelTestEntity.toLayer(
  Effect.map(
    runEntityHandlers({
      kind: "deep_research",
      requestOf: (run) => run.request._tag === "DeepResearch" ? run.request : undefined,
      conduct: (run, _request, begin) =>
        Effect.suspend(() => {
          conducted.set(run.id, conductedFor(run.id) + 1)
          const plan = plans.get(run.id)
          return plan === undefined ? Effect.die(new Error(`no plan for ${run.id}`)) : plan(run, begin)
        }),
      internalErrorDetail: INTERNAL_ERROR_DETAIL
    }),
    (handlers) => KernelTestEntity.of(handlers)
  )
)

// --- An executor with a record of its own (RunRecord) and a `finished` hook ----------------

/**
 * Runs that report to another log, as a Track tick reports to its monitor's: the WebSearch runs,
 * with a record writing their start and the kernel's ends to the log `side_<run id>` (in
 * run_events, as a monitor's log is) and the run row, and a `finished` hook noting the Executes of
 * runs that already ended.
 */
const sideLog = (runId: RunId) => `side_${runId}`
/** What the record's start gives the work: whether the run was under way before. */
interface SideStart {
  readonly resumed: boolean
}
type RecordedPlan = (run: Run, begin: Begin<SideStart>) => Effect.Effect<void, unknown, RunStore | SqlClient.SqlClient>
const recordedPlans = new Map<string, RecordedPlan>()
const finishedCalls = new Map<string, number>()

const appendSide = (sql: SqlClient.SqlClient, runId: RunId, type: string, data: Record<string, unknown>) =>
  sql`INSERT INTO run_events (run_id, id, type, data)
    SELECT ${sideLog(runId)}, coalesce(max(id), 0) + 1, ${type}, ${JSON.stringify(data)}::jsonb FROM run_events WHERE run_id = ${sideLog(runId)}`.pipe(Effect.orDie)

const RecordExecute = Rpc.make("Execute", { payload: { runId: RunId } }).annotate(ClusterSchema.Persisted, true)
const RecordInterrupt = Rpc.make("Interrupt", { payload: { runId: RunId } })
const RecordTestEntity = Entity.make("KernelRecordTest", [RecordExecute, RecordInterrupt])

const RecordTestEntityLive = RecordTestEntity.toLayer(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const handlers = yield* runEntityHandlers<WebSearchRunRequest, RunStore | SqlClient.SqlClient, SideStart>({
      kind: "web_search",
      requestOf: (run) => run.request._tag === "WebSearch" ? run.request : undefined,
      conduct: (run, _request, begin) =>
        Effect.suspend(() => {
          conducted.set(run.id, conductedFor(run.id) + 1)
          const plan = recordedPlans.get(run.id)
          return plan === undefined ? Effect.die(new Error(`no plan for ${run.id}`)) : plan(run, begin)
        }),
      internalErrorDetail: INTERNAL_ERROR_DETAIL,
      record: {
        // The start is the claim (one write): the kernel did not claim the run before it.
        start: (run, token) =>
          Effect.gen(function*() {
            const rows = yield* sql<{ id: string }>`
              UPDATE runs SET status = 'running', started_at = coalesce(started_at, now()), executor = ${token}
              WHERE id = ${run.id} AND status NOT IN ('done', 'failed', 'canceled') RETURNING id`.pipe(Effect.orDie)
            if (rows.length === 0) return yield* new RunStopped()
            yield* appendSide(sql, run.id, "side.started", { token, resumed: run.started_at !== null })
            return { resumed: run.started_at !== null }
          }),
        end: (run, end, token) =>
          Effect.gen(function*() {
            const rows = yield* sql<{ id: string }>`
              UPDATE runs SET status = ${end.status}, terminal_reason = ${end.terminalReason}, error_code = ${end.code},
                error_detail = ${end.detail}, finished_at = now()
              WHERE id = ${run.id} ${token === undefined ? sql`` : sql`AND executor = ${token}`} RETURNING id`.pipe(Effect.orDie)
            if (rows.length === 0) return yield* Effect.die(new SupersededExecution(run.id))
            yield* appendSide(sql, run.id, "side.ended", { ...end, token: token ?? null })
          })
      },
      finished: (run) => Effect.sync(() => void finishedCalls.set(run.id, (finishedCalls.get(run.id) ?? 0) + 1))
    })
    return RecordTestEntity.of(handlers)
  })
)

// --- The layer ------------------------------------------------------------------------------

/** The loopback receiver the runs' callbacks go to. */
class Receiver extends Context.Service<Receiver, WebhookReceiver>()("test/in-process/run-kernel/Receiver") {}

const ReceiverLive = Layer.effect(
  Receiver,
  Effect.acquireRelease(Effect.promise(() => startWebhookReceiver()), (receiver) => Effect.promise(() => receiver.close()))
)

/** The kernel's log lines at Info and above (the level the layer lets through); none is printed. */
const logged: Array<{ readonly message: unknown; readonly cause: string | undefined; readonly annotations: Record<string, unknown> }> = []
const CapturingLogger = Logger.layer([Logger.make((options) => {
  const record = Logger.formatStructured.log(options)
  logged.push({ message: record.message, cause: record.cause, annotations: record.annotations })
})])
const loggedFor = (runId: RunId, message: string) => logged.filter((line) => line.message === message && line.annotations["run_id"] === runId)

const ConfigLive = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabase("kernel")
  const dataDir = yield* freshDataDir("wa-run-kernel")
  return AppConfig.layerFrom({ DATABASE_URL: url, WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Warn", WA_ALLOW_PRIVATE_NETWORKS: "true" })
}))

const TestLayer = Layer.mergeAll(KernelTestEntityLive, RecordTestEntityLive, ReceiverLive).pipe(
  Layer.provideMerge(RunNotifier.layer(callbackView)),
  Layer.provideMerge(Layer.mergeAll(RunStore.layer, Callbacks.layer, Projects.layer)),
  Layer.provideMerge(TestRunner.layer),
  Layer.provideMerge(RunnerLifecycle.layer),
  Layer.provideMerge(databaseLayer("own")),
  Layer.provideMerge(CapturingLogger),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Info")),
  Layer.provideMerge(ConfigLive)
)

// --- Helpers --------------------------------------------------------------------------------

/** A project of its own for each run (its callback deliveries are listed by project). */
const newProject = Projects.use((projects) => projects.create("run-kernel")).pipe(Effect.map((project) => project.id))

/** A pending DeepResearch run whose work is `plan`, its callback to the receiver. */
const newRun = (plan: Plan | undefined, options: { readonly maxDurationMs?: number } = {}) =>
  Effect.gen(function*() {
    const store = yield* RunStore
    const receiver = yield* Receiver
    const projectId = yield* newProject
    const request: DeepResearchRequest = {
      _tag: "DeepResearch",
      topic: "the run kernel",
      depth: "light",
      output_format: "report",
      require_outline_approval: false,
      max_duration_minutes: 60,
      callback_url: `${receiver.url}/callback`
    }
    const run = yield* store.createStandaloneRun(projectId, request, options).pipe(Effect.orDie)
    if (plan !== undefined) plans.set(run.id, plan)
    return run
  })

/** Execute, as the products send it, answered once the kernel is done with the message. */
const execute = (runId: RunId) =>
  Effect.gen(function*() {
    const clientFor = yield* KernelTestEntity.client
    yield* clientFor(runId).Execute({ runId }).pipe(Effect.orDie)
  })

const interrupt = (runId: RunId) =>
  Effect.gen(function*() {
    const clientFor = yield* KernelTestEntity.client
    yield* clientFor(runId).Interrupt({ runId }).pipe(Effect.orDie)
  })

const runOf = (runId: RunId) => RunStore.use((store) => store.getRun(runId)).pipe(Effect.map((run) => run!))
const eventsOf = (runId: RunId) => RunStore.use((store) => store.eventsAfter(runId, 0, 10_000))
const typesOf = (runId: RunId) => Effect.map(eventsOf(runId), (events) => events.map((event) => event.type))
const statusChanges = (runId: RunId) =>
  Effect.map(eventsOf(runId), (events) => events.filter((event) => event.type === "run.status_changed").map((event) => `${event.data["from"]}→${event.data["status"]}`))

/** The run's callback deliveries (the outbox: one per run and event type). */
const deliveriesOf = (projectId: ProjectId, runId: RunId) =>
  Callbacks.use((callbacks) => callbacks.list(projectId, { runId, limit: 100 }))

/**
 * A DeepResearch run's output as the product writes it (a ResearchResult; its callback, the run as
 * GET shows it, is held to the document's webhooks section by the receiver), told apart by `marker`.
 */
const result = (marker: string) => ({
  final_md: marker, final_artifact_id: "art_kernel", citations_count: 0, confidence_summary: { high: 0, medium: 0, low: 0 }, partial_sections: []
})

/** The work a product does at its end: the run `done` with an output, written as this execution. */
const finish = (runId: RunId, token: ExecutionToken, output: ReturnType<typeof result>) =>
  RunStore.use((store) => store.transition(runId, "done", { output, terminalReason: "done", executor: token })).pipe(Effect.orDie)

/** A plan that starts the run, says so, then waits until it is stopped (noting that it was). */
const blocking = (started: Deferred.Deferred<string>, stopped: { interrupted: boolean }): Plan => (_run, begin) =>
  Effect.gen(function*() {
    const [token] = yield* begin(Effect.void, () => ({ from_step: 0 }))
    yield* Deferred.succeed(started, token)
    return yield* Effect.never
  }).pipe(Effect.onInterrupt(() => Effect.sync(() => void (stopped.interrupted = true))))

layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })("run kernel", (it) => {
  it.effect("a pending run: begin moves it to running, the work ends it, one callback says it ended", () =>
    Effect.gen(function*() {
      const tokens: Array<string> = []
      const run = yield* newRun((run, begin) =>
        Effect.gen(function*() {
          const [token, loaded] = yield* begin(Effect.succeed("nothing to resume"), () => ({ from_step: 0 }))
          expect(loaded).toBe("nothing to resume")
          tokens.push(token)
          // Started by `begin`: the run is running under this execution's token.
          expect((yield* runOf(run.id)).status).toBe("running")
          yield* finish(run.id, token, result("report ok"))
        })
      )
      expect(run.status).toBe("pending")
      yield* execute(run.id)

      const ended = yield* runOf(run.id)
      expect(ended).toMatchObject({ status: "done", terminal_reason: "done", output: result("report ok"), error_code: null })
      expect(ended.started_at).not.toBeNull()
      expect(conductedFor(run.id)).toBe(1)
      expect(yield* statusChanges(run.id)).toEqual(["null→pending", "pending→running", "running→done"])
      expect(yield* typesOf(run.id)).not.toContain("run.resumed")
      expect((yield* typesOf(run.id)).at(-1)).toBe("run.completed")
      const [executor] = yield* SqlClient.SqlClient.use((sql) => sql<{ executor: string }>`SELECT executor FROM runs WHERE id = ${run.id}`)
      expect(executor?.executor).toBe(tokens[0])

      // "run ended": the run's callback, recorded once, carrying the run as it ended.
      const deliveries = yield* deliveriesOf(run.project_id, run.id)
      expect(deliveries.map((delivery) => delivery.event_type)).toEqual(["run.completed"])
      expect(JSON.stringify(deliveries[0]!.payload)).toContain(run.id)

      // The same Execute delivered again (at least once): acknowledged, no work, nothing written.
      const events = yield* eventsOf(run.id)
      yield* execute(run.id)
      expect(conductedFor(run.id)).toBe(1)
      expect(yield* eventsOf(run.id)).toEqual(events)
      expect((yield* runOf(run.id)).status).toBe("done")
      expect(yield* deliveriesOf(run.project_id, run.id)).toHaveLength(1)
    }))

  it.effect("an ended run, a run of another kind, a run that does not exist: acknowledged without work", () =>
    Effect.gen(function*() {
      const store = yield* RunStore
      // Canceled before its Execute came.
      const canceled = yield* newRun(() => Effect.die(new Error("must not run")))
      yield* store.transition(canceled.id, "canceled", { terminalReason: "canceled" }).pipe(Effect.orDie)
      const canceledEvents = yield* eventsOf(canceled.id)
      yield* execute(canceled.id)
      expect(conductedFor(canceled.id)).toBe(0)
      expect(yield* eventsOf(canceled.id)).toEqual(canceledEvents)
      expect((yield* runOf(canceled.id)).status).toBe("canceled")

      // A WebSearch run sent to this DeepResearch-kind entity: not its run, left alone (still pending).
      const projectId = yield* newProject
      const search: RunRequest = { _tag: "WebSearch", queries: ["kernel"], max_results_per_query: 5, rerank: false, summarize: false, wait: false }
      const other = yield* store.createStandaloneRun(projectId, search).pipe(Effect.orDie)
      const otherEvents = yield* eventsOf(other.id)
      yield* execute(other.id)
      expect(conductedFor(other.id)).toBe(0)
      expect(yield* eventsOf(other.id)).toEqual(otherEvents)
      expect((yield* runOf(other.id)).status).toBe("pending")

      // A run id no row has.
      const missing = RunId.make("run_kerneltestmissing00000000")
      yield* execute(missing)
      expect(conductedFor(missing)).toBe(0)
      expect(yield* store.getRun(missing)).toBeUndefined()
      expect(logged.filter((line) => line.message === "run execution failed")).toEqual([])
    }))

  it.effect("a run under way on another runner: begin claims it, load reads after the claim, run.resumed says where from", () =>
    Effect.gen(function*() {
      const store = yield* RunStore
      const sql = yield* SqlClient.SqlClient
      const seen: Array<{ token: string; loaded: unknown; executorAtLoad: string | null }> = []
      const run = yield* newRun((run, begin) =>
        Effect.gen(function*() {
          const load = Effect.gen(function*() {
            const [row] = yield* sql<{ executor: string | null }>`SELECT executor FROM runs WHERE id = ${run.id}`.pipe(Effect.orDie)
            return { checkpoint: (yield* store.loadCheckpoint(run.id))!, executorAtLoad: row!.executor }
          })
          const [token, loaded] = yield* begin(load, ({ checkpoint }): Omit<EventData<"run.resumed">, "run_id"> => ({ from_step: checkpoint.step, url: checkpoint.url }))
          seen.push({ token, loaded: loaded.checkpoint.history, executorAtLoad: loaded.executorAtLoad })
          yield* finish(run.id, token, result("resumed"))
        })
      )
      // The first execution (a runner that died since): started it and checkpointed step 3.
      const first = yield* store.claimExecution(run.id)
      yield* store.transition(run.id, "running", { executor: first }).pipe(Effect.orDie)
      yield* store.completeStep(run.id, 0, { step: 3, history: { sections: ["a", "b"] }, url: "https://example.com/3", tabs: [], dirtyForm: false, storageState: undefined }, first)
      const before = (yield* eventsOf(run.id)).length

      yield* execute(run.id)

      expect(seen).toHaveLength(1)
      expect(seen[0]!.loaded).toEqual({ sections: ["a", "b"] })
      expect(seen[0]!.token).not.toBe(first)
      // `load` ran after the claim: the row already named the new execution.
      expect(seen[0]!.executorAtLoad).toBe(seen[0]!.token)
      const added = (yield* eventsOf(run.id)).slice(before)
      expect(added.map((event) => event.type)).toEqual(["run.resumed", "run.status_changed", "run.completed"])
      expect(added[0]!.data).toEqual({ run_id: run.id, from_step: 3, url: "https://example.com/3" })
      expect(added[1]!.data).toMatchObject({ from: "running", status: "done" })
      // No second start: pending→running was written once, by the first execution.
      expect(yield* statusChanges(run.id)).toEqual(["null→pending", "pending→running", "running→done"])
      expect((yield* runOf(run.id)).output).toEqual(result("resumed"))
      expect(yield* deliveriesOf(run.project_id, run.id)).toHaveLength(1)
    }))

  it.effect("RunFailure: the run fails with the executor's code and detail, not logged as a crash", () =>
    Effect.gen(function*() {
      const run = yield* newRun((_run, begin) =>
        begin(Effect.void, () => ({ from_step: 0 })).pipe(
          Effect.andThen(Effect.fail(new RunFailure({ code: "validation_error", detail: "the topic names no subject" })))
        )
      )
      yield* execute(run.id)
      const ended = yield* runOf(run.id)
      expect(ended).toMatchObject({ status: "failed", terminal_reason: "failed", error_code: "validation_error", error_detail: "the topic names no subject" })
      const completed = (yield* eventsOf(run.id)).filter((event) => event.type === "run.completed")
      expect(completed).toHaveLength(1)
      expect(completed[0]!.data).toMatchObject({ status: "failed", error: { code: "validation_error", detail: "the topic names no subject" } })
      expect(yield* statusChanges(run.id)).toEqual(["null→pending", "pending→running", "running→failed"])
      expect(yield* deliveriesOf(run.project_id, run.id)).toHaveLength(1)
      expect(loggedFor(run.id, "run failed")).toEqual([])
    }))

  it.effect("a defect (or a failure the executor did not name): internal_error with the executor's detail, the cause logged", () =>
    Effect.gen(function*() {
      const crashed = yield* newRun((_run, begin) =>
        begin(Effect.void, () => ({ from_step: 0 })).pipe(Effect.andThen(Effect.die(new Error("disk on fire"))))
      )
      yield* execute(crashed.id)
      expect(yield* runOf(crashed.id)).toMatchObject({ status: "failed", error_code: "internal_error", error_detail: INTERNAL_ERROR_DETAIL })
      const lines = loggedFor(crashed.id, "run failed")
      expect(lines).toHaveLength(1)
      expect(lines[0]!.cause).toContain("disk on fire")
      expect(lines[0]!.annotations["kind"]).toBe("deep_research")
      expect(yield* deliveriesOf(crashed.project_id, crashed.id)).toHaveLength(1)

      // A typed failure that is not a RunFailure (nor the model's): the same.
      const unnamed = yield* newRun((_run, begin) =>
        begin(Effect.void, () => ({ from_step: 0 })).pipe(Effect.andThen(Effect.fail(new Error("unexpected answer"))))
      )
      yield* execute(unnamed.id)
      expect(yield* runOf(unnamed.id)).toMatchObject({ status: "failed", error_code: "internal_error", error_detail: INTERNAL_ERROR_DETAIL })
      expect(loggedFor(unnamed.id, "run failed")[0]?.cause).toContain("unexpected answer")

      // The model's failure: model_error, its message in the detail.
      const model = yield* newRun((_run, begin) =>
        begin(Effect.void, () => ({ from_step: 0 })).pipe(Effect.andThen(Effect.fail(
          new AiError.AiError({ module: "KernelTest", method: "generateText", reason: new AiError.UnknownError({ description: "the provider went away" }) })
        )))
      )
      yield* execute(model.id)
      const failed = yield* runOf(model.id)
      expect(failed).toMatchObject({ status: "failed", error_code: "model_error" })
      expect(failed.error_detail).toMatch(/^the model failed: .*the provider went away/)
    }))

  it.effect("cancel: the run ends canceled, Interrupt stops the work, the kernel writes nothing over it", () =>
    Effect.gen(function*() {
      const store = yield* RunStore
      const notifier = yield* RunNotifier
      const started = yield* Deferred.make<string>()
      const stopped = { interrupted: false }
      const run = yield* newRun(blocking(started, stopped))
      const executing = yield* Effect.forkChild(execute(run.id))
      yield* Deferred.await(started)
      expect((yield* runOf(run.id)).status).toBe("running")

      // As the products cancel (src/runs/cancel.ts): the state change, then Interrupt, then the callback.
      const clientFor = yield* KernelTestEntity.client
      const cancel = cancelRun(store, notifier, (run) => clientFor(run.id).Interrupt({ runId: run.id }))
      yield* cancel(yield* runOf(run.id), "changed my mind").pipe(Effect.orDie)
      // The Execute is answered only once its work has stopped (the work never ends on its own).
      yield* Fiber.join(executing)

      expect(stopped.interrupted).toBe(true)
      const ended = yield* runOf(run.id)
      expect(ended).toMatchObject({ status: "canceled", terminal_reason: "canceled", error_code: null, error_detail: null })
      expect(yield* statusChanges(run.id)).toEqual(["null→pending", "pending→running", "running→canceled"])
      expect((yield* typesOf(run.id)).filter((type) => type === "run.completed")).toHaveLength(1)
      expect(yield* deliveriesOf(run.project_id, run.id)).toHaveLength(1)
      expect(loggedFor(run.id, "run failed")).toEqual([])
    }))

  it.effect("Interrupt alone stops the work and leaves the run as it was (no failure, no callback)", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<string>()
      const stopped = { interrupted: false }
      const run = yield* newRun(blocking(started, stopped))
      const executing = yield* Effect.forkChild(execute(run.id))
      yield* Deferred.await(started)
      const events = yield* eventsOf(run.id)

      yield* interrupt(run.id)
      yield* Fiber.join(executing)

      expect(stopped.interrupted).toBe(true)
      expect(yield* runOf(run.id)).toMatchObject({ status: "running", error_code: null })
      expect(yield* eventsOf(run.id)).toEqual(events)
      expect(yield* deliveriesOf(run.project_id, run.id)).toEqual([])
    }))

  it.effect("superseded: once another execution claimed the run, this one writes nothing more and does not announce an end", () =>
    Effect.gen(function*() {
      const store = yield* RunStore
      const started = yield* Deferred.make<string>()
      const proceed = yield* Deferred.make<void>()
      let wroteAfterTakeOver = false
      const run = yield* newRun((run, begin) =>
        Effect.gen(function*() {
          const [token] = yield* begin(Effect.void, () => ({ from_step: 0 }))
          yield* Deferred.succeed(started, token)
          yield* Deferred.await(proceed)
          yield* store.appendEvent(run.id, "run.phase_changed", { run_id: run.id, phase: "synthesize" }, token)
          wroteAfterTakeOver = true
          yield* finish(run.id, token, result("stale"))
        })
      )
      const executing = yield* Effect.forkChild(execute(run.id))
      yield* Deferred.await(started)

      // Another runner took the run over.
      const newer = yield* store.claimExecution(run.id)
      const events = yield* eventsOf(run.id)
      yield* Deferred.succeed(proceed, undefined)
      yield* Fiber.join(executing)

      expect(wroteAfterTakeOver).toBe(false)
      expect(yield* runOf(run.id)).toMatchObject({ status: "running", error_code: null, output: null })
      expect(yield* eventsOf(run.id)).toEqual(events)
      expect(yield* deliveriesOf(run.project_id, run.id)).toEqual([])
      expect(loggedFor(run.id, "run taken over by another runner; this execution stopped")).toHaveLength(1)
      expect(loggedFor(run.id, "run failed")).toEqual([])

      // The newer execution still owns the run and ends it.
      yield* finish(run.id, newer, result("newer"))
      expect((yield* runOf(run.id)).output).toEqual(result("newer"))
    }))

  it.effect("superseded, then failing: the older execution's failure is not written over the run the newer one executes", () =>
    Effect.gen(function*() {
      const store = yield* RunStore
      const started = yield* Deferred.make<string>()
      const proceed = yield* Deferred.make<void>()
      const run = yield* newRun((_run, begin) =>
        Effect.gen(function*() {
          const [token] = yield* begin(Effect.void, () => ({ from_step: 0 }))
          yield* Deferred.succeed(started, token)
          yield* Deferred.await(proceed)
          // Its work fails before it writes again (a model call that timed out while its runner was frozen).
          return yield* new RunFailure({ code: "validation_error", detail: "stale" })
        })
      )
      const executing = yield* Effect.forkChild(execute(run.id))
      yield* Deferred.await(started)
      const newer = yield* store.claimExecution(run.id)
      const events = yield* eventsOf(run.id)
      yield* Deferred.succeed(proceed, undefined)
      yield* Fiber.join(executing)

      expect(yield* runOf(run.id)).toMatchObject({ status: "running", error_code: null, error_detail: null })
      expect(yield* eventsOf(run.id)).toEqual(events)
      expect(yield* deliveriesOf(run.project_id, run.id)).toEqual([])
      expect(loggedFor(run.id, "run taken over by another runner; this execution stopped")).toHaveLength(1)
      yield* finish(run.id, newer, result("newer"))
      expect((yield* runOf(run.id)).status).toBe("done")
    }))

  it.effect("superseded, then the run ended by the newer execution: the older one, returning as a run that ended, announces nothing", () =>
    Effect.gen(function*() {
      const store = yield* RunStore
      const started = yield* Deferred.make<string>()
      const proceed = yield* Deferred.make<void>()
      const run = yield* newRun((_run, begin) =>
        Effect.gen(function*() {
          const [token] = yield* begin(Effect.void, () => ({ from_step: 0 }))
          yield* Deferred.succeed(started, token)
          yield* Deferred.await(proceed)
          // Thawed, it sees the run has ended and returns without writing (as the agent's loop does).
        })
      )
      const executing = yield* Effect.forkChild(execute(run.id))
      yield* Deferred.await(started)
      const newer = yield* store.claimExecution(run.id)
      yield* finish(run.id, newer, result("newer"))
      yield* Deferred.succeed(proceed, undefined)
      yield* Fiber.join(executing)

      expect(yield* runOf(run.id)).toMatchObject({ status: "done", output: result("newer") })
      // "run ended" is the newer execution's to send: the older one sent none.
      expect(yield* deliveriesOf(run.project_id, run.id)).toEqual([])
      expect(loggedFor(run.id, "run taken over by another runner; this execution stopped")).toHaveLength(1)
    }))

  it.effect("superseded, then past the deadline: the older execution does not end the run the newer one executes", () =>
    Effect.gen(function*() {
      const store = yield* RunStore
      const started = yield* Deferred.make<string>()
      const stopped = { interrupted: false }
      // Long enough for the work to start first on a loaded machine.
      const run = yield* newRun(blocking(started, stopped), { maxDurationMs: 3_000 })
      const executing = yield* Effect.forkChild(execute(run.id))
      yield* Deferred.await(started)
      const newer = yield* store.claimExecution(run.id)
      const events = yield* eventsOf(run.id)
      // The older execution's deadline stops its work; the run is the newer execution's to end.
      yield* Fiber.join(executing)

      expect(stopped.interrupted).toBe(true)
      expect(yield* runOf(run.id)).toMatchObject({ status: "running", terminal_reason: null, error_code: null })
      expect(yield* eventsOf(run.id)).toEqual(events)
      expect(yield* deliveriesOf(run.project_id, run.id)).toEqual([])
      expect(loggedFor(run.id, "run taken over by another runner; this execution stopped")).toHaveLength(1)
      yield* finish(run.id, newer, result("newer"))
      expect((yield* runOf(run.id)).status).toBe("done")
    }))

  it.effect("the deadline: a run that overruns max_duration ends canceled with duration_exceeded, its work stopped", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<string>()
      const stopped = { interrupted: false }
      const run = yield* newRun(blocking(started, stopped), { maxDurationMs: 1_500 })
      expect(run.deadline_at).not.toBeNull()
      // The work never ends on its own: the Execute is answered because the deadline stopped it.
      yield* execute(run.id)

      const ended = yield* runOf(run.id)
      expect(ended).toMatchObject({
        status: "canceled",
        terminal_reason: "duration_exceeded",
        error_code: "duration_exceeded",
        error_detail: "the run reached max_duration_minutes"
      })
      expect((yield* statusChanges(run.id)).at(-1)).toMatch(/→canceled$/)
      expect((yield* typesOf(run.id)).filter((type) => type === "run.completed")).toHaveLength(1)
      expect(yield* deliveriesOf(run.project_id, run.id)).toHaveLength(1)
      expect(loggedFor(run.id, "run failed")).toEqual([])
    }))

  it.effect("a record of its own: the start and the kernel's ends are the record's writes, not the run log's; an ended run's Execute calls finished", () =>
    Effect.gen(function*() {
      const store = yield* RunStore
      const sql = yield* SqlClient.SqlClient
      const projectId = yield* newProject
      const search: RunRequest = { _tag: "WebSearch", queries: ["kernel record"], max_results_per_query: 5, rerank: false, summarize: false, wait: false }
      const clientFor = yield* RecordTestEntity.client
      const executeRecorded = (runId: RunId) => clientFor(runId).Execute({ runId }).pipe(Effect.orDie)
      const sideOf = (runId: RunId) => store.eventsAfter(RunId.make(sideLog(runId)), 0, 100)

      // A fresh run: the record starts it and gives the work what it said; the work ends it itself.
      const fresh = yield* store.createStandaloneRun(projectId, search).pipe(Effect.orDie)
      const ownEvents = yield* eventsOf(fresh.id)
      const seen: Array<{ token: string; loaded: unknown; started: SideStart }> = []
      recordedPlans.set(fresh.id, (run, begin) =>
        Effect.gen(function*() {
          const [token, loaded, started] = yield* begin(Effect.succeed("loaded"))
          seen.push({ token, loaded, started })
          yield* sql`UPDATE runs SET status = 'done', finished_at = now() WHERE id = ${run.id} AND executor = ${token}`.pipe(Effect.orDie)
        }))
      yield* executeRecorded(fresh.id)
      expect(seen).toHaveLength(1)
      expect(seen[0]!.loaded).toBe("loaded")
      expect(seen[0]!.started).toEqual({ resumed: false })
      expect((yield* sideOf(fresh.id)).map((event) => [event.type, event.data["token"]])).toEqual([["side.started", seen[0]!.token]])
      // Nothing in the run's own log: no pending→running, no run.resumed, no run.completed.
      expect(yield* eventsOf(fresh.id)).toEqual(ownEvents)
      expect(yield* store.getRun(fresh.id)).toMatchObject({ status: "done" })
      // Its start is logged at Debug (many short runs, their own log says more); no Info line.
      expect(loggedFor(fresh.id, "run started")).toHaveLength(0)

      // Delivered again once it ended: `finished`, not the work.
      yield* executeRecorded(fresh.id)
      expect(conductedFor(fresh.id)).toBe(1)
      expect(finishedCalls.get(fresh.id)).toBe(1)

      // A run under way before (started_at set) that crashes: its record says it resumed, and the
      // kernel's end (internal_error) is the record's, for this execution.
      const crashed = yield* store.createStandaloneRun(projectId, search).pipe(Effect.orDie)
      yield* sql`UPDATE runs SET status = 'running', started_at = now() WHERE id = ${crashed.id}`.pipe(Effect.orDie)
      const crashedEvents = yield* eventsOf(crashed.id)
      let crashedToken = ""
      recordedPlans.set(crashed.id, (_run, begin) =>
        Effect.gen(function*() {
          const [token, , started] = yield* begin(Effect.void)
          crashedToken = token
          expect(started).toEqual({ resumed: true })
          return yield* Effect.die(new Error("disk on fire"))
        }))
      yield* executeRecorded(crashed.id)
      expect(yield* store.getRun(crashed.id)).toMatchObject({ status: "failed", terminal_reason: "failed", error_code: "internal_error", error_detail: INTERNAL_ERROR_DETAIL })
      const side = yield* sideOf(crashed.id)
      expect(side.map((event) => event.type)).toEqual(["side.started", "side.ended"])
      expect(side[1]!.data).toEqual({ status: "failed", terminalReason: "failed", code: "internal_error", detail: INTERNAL_ERROR_DETAIL, token: crashedToken })
      expect(yield* eventsOf(crashed.id)).toEqual(crashedEvents)
      expect(loggedFor(crashed.id, "run resumed")).toHaveLength(0)
      expect(loggedFor(crashed.id, "run failed")[0]?.cause).toContain("disk on fire")

      // A RunFailure: its code, through the record.
      const refused = yield* store.createStandaloneRun(projectId, search).pipe(Effect.orDie)
      recordedPlans.set(refused.id, (_run, begin) =>
        begin(Effect.void).pipe(Effect.andThen(Effect.fail(new RunFailure({ code: "validation_error", detail: "no such engine" })))))
      yield* executeRecorded(refused.id)
      expect(yield* store.getRun(refused.id)).toMatchObject({ status: "failed", error_code: "validation_error", error_detail: "no such engine" })

      // Superseded before the kernel's end: the record's end refuses, nothing is written, the take-over is logged.
      const started = yield* Deferred.make<void>()
      const proceed = yield* Deferred.make<void>()
      const stale = yield* store.createStandaloneRun(projectId, search).pipe(Effect.orDie)
      recordedPlans.set(stale.id, (_run, begin) =>
        Effect.gen(function*() {
          yield* begin(Effect.void)
          yield* Deferred.succeed(started, undefined)
          yield* Deferred.await(proceed)
          return yield* Effect.die(new Error("stale crash"))
        }))
      const executing = yield* Effect.forkChild(executeRecorded(stale.id))
      yield* Deferred.await(started)
      yield* store.claimExecution(stale.id)
      yield* Deferred.succeed(proceed, undefined)
      yield* Fiber.join(executing)
      expect(yield* store.getRun(stale.id)).toMatchObject({ status: "running", error_code: null })
      expect((yield* sideOf(stale.id)).map((event) => event.type)).toEqual(["side.started"])
      expect(loggedFor(stale.id, "run taken over by another runner; this execution stopped")).toHaveLength(1)
    }))

  // Last: the runner drains from here on (the layer's RunnerLifecycle stays draining).
  it.effect("while the runner drains, an Execute is left for the shard's next owner without a write", () =>
    Effect.gen(function*() {
      const lifecycle = yield* RunnerLifecycle
      const run = yield* newRun(() => Effect.die(new Error("must not run while draining")))
      const events = yield* eventsOf(run.id)
      yield* lifecycle.startDraining
      const clientFor = yield* KernelTestEntity.client
      // Not answered here: the message waits for the runner that takes the entity's shard.
      yield* clientFor(run.id).Execute({ runId: run.id }, { discard: true }).pipe(Effect.orDie)
      yield* Effect.sync(() => logged.some((line) => line.message === "draining: run left for the runner that takes its shard" && line.annotations["run_id"] === run.id)).pipe(
        Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (left) => left })
      )
      expect(conductedFor(run.id)).toBe(0)
      expect((yield* runOf(run.id)).status).toBe("pending")
      expect(yield* eventsOf(run.id)).toEqual(events)
    }))
})
