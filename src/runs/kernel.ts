/**
 * The run kernel: the lifecycle every kind of run shares once it is dispatched to its cluster
 * entity, written once. A product plugs in an executor (what its run does); the kernel does the
 * rest:
 * - `Execute` (persisted, delivered at least once): a run that is gone, of another kind or ended
 *   is acknowledged and left alone; while this runner drains, the run is left for the shard's
 *   next owner without a write (src/cluster/lifecycle.ts);
 * - the execution runs in a fiber that `Interrupt` (after a cancel) stops, as work of the run's
 *   project in the fair queue, bounded by the run's deadline (max_duration_minutes: past it the
 *   run ends `canceled` with `duration_exceeded`) once it started: the start itself is not cut,
 *   so a run taken up after its deadline passed (its runner was down) still says it was taken up
 *   (`run.resumed`) before it ends;
 * - the start: this execution claims the run (an older execution elsewhere is superseded and
 *   stops at its next write), then `pending → running`, or a `run.resumed` event when the run
 *   was under way on a runner that died or drained;
 * - one end: a failure becomes the run's error code (the executor's own code, `model_error`, or
 *   `internal_error` with the cause logged), then "run ended" (the run's callback) is sent once.
 *
 * Checkpoints and charges go through the run store, each with its events in one transaction
 * (`completeStep`, `chargeRun`); the credit hold of a run is settled by the store's terminal
 * transition. A one-run entity (DeepResearch, WebSearch) takes its handlers from
 * `runEntityHandlers`; DoAnything's Session entity, which owns a browser across its session's runs
 * and answers more messages, executes each of its runs through `makeRunExecution` with its own
 * fiber map, plus hooks for what its runs leave behind (the recording, the profile, the browser).
 * Track's Monitor entity executes each tick (a run of kind `track_tick`) through `makeRunExecution`
 * the same way; a tick reports to its monitor's log, not its own, so its executor records the start
 * and the kernel's ends itself (`RunRecord`), and finishes a tick's aftermath when its message is
 * delivered again after the tick ended (`finished`).
 */
import { Cause, Data, Deferred, Duration, Effect, Exit, Fiber, FiberMap, Option } from "effect"
import { Entity, Sharding } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { leaveForNextOwner, RunnerLifecycle, runHere } from "../cluster/lifecycle.ts"
import type { EventData } from "../domain/events.ts"
import { RunFailure } from "../domain/run-failure.ts"
import { isTerminal, type TerminalReason } from "../domain/run-state.ts"
import type { Run, RunId, StoredRunKind } from "../domain/run.ts"
import type { ExecutionToken } from "../domain/id-schemas.ts"
import { WorkOwner } from "../fairness/fair-queue.ts"
import { newExecutionToken, RunStore, SupersededExecution } from "../store/runs.ts"
import { RunNotifier } from "../webhooks/run-notifier.ts"

/** The run cannot go on; it ends `failed` with this code and detail (src/domain/run-failure.ts). */
export { RunFailure }

/** The run ended (canceled, or failed by someone else) while this execution worked on it: nothing to write. */
export class RunStopped extends Data.TaggedError("RunStopped") {}

/** This runner drains while the run waits (for a person): the run moves to the shard's next owner. */
export class Handover extends Data.TaggedError("Handover") {}

/**
 * An entity's `Execute` answer: handled here, or, when this runner drains, left unprocessed for
 * the runner that takes the entity's shard. Made where the entity's handlers are built (it reads
 * the entity's address).
 */
export const makeLeaveWhenRefused = Effect.gen(function*() {
  const sharding = yield* Sharding.Sharding
  const address = yield* Entity.CurrentAddress
  return <E, R>(handled: Effect.Effect<"handled" | "refused", E, R>, runId: RunId): Effect.Effect<void, E, R> =>
    Effect.flatMap(handled, (outcome) => outcome === "handled" ? Effect.void : leaveForNextOwner(sharding, address, runId))
})

/**
 * How the kernel ends a run that did not end otherwise: `failed` with the failure's code, or
 * `canceled` (`duration_exceeded`) at the run's deadline.
 */
export interface KernelEnd {
  readonly status: "failed" | "canceled"
  readonly terminalReason: TerminalReason
  readonly code: string
  readonly detail: string
}

/**
 * Where the runs of a kind record their lifecycle when not in the run's own log. Without one (the
 * default) the kernel writes through the run store: `pending → running` or a `run.resumed` event at
 * the start, a status transition (`run.status_changed`, `run.completed`, the credit hold settled)
 * at its end. A kind whose runs report to another log (a Track tick reports to its monitor's,
 * src/track/tick.ts) gives both writes here; the kernel still decides when each happens. Such a
 * kind tells its ends its own way: the kernel sends no "run ended" (callback) for it, and its
 * writes must carry the execution's token (a superseded execution is caught there).
 */
export interface RunRecord<Started, R> {
  /**
   * Claims the run for the execution `token` and records its start, in one write (a tick is a
   * statement: the kernel's own claim would be one more write per tick), before `load`: a run
   * whose `started_at` is set was under way before (it resumes). Gives what `begin` hands the work
   * as `started`. Fails with RunStopped when the run ended meanwhile.
   */
  readonly start: (run: Run, token: ExecutionToken) => Effect.Effect<Started, RunStopped, R>
  /**
   * Ends the run, which has not ended, as the kernel says. `token` is the execution's (undefined
   * when the work failed before its claim); dies with SupersededExecution when another execution
   * owns the run.
   */
  readonly end: (run: Run, end: KernelEnd, token: ExecutionToken | undefined) => Effect.Effect<void, never, R>
}

/**
 * What a product plugs into the kernel: which runs are its own, and what one of them does.
 * `Started` is what its `record` gives at the start (nothing for a run recorded in its own log).
 */
export interface RunExecutor<Request, R, Started = void> {
  readonly kind: StoredRunKind
  /** The run's request when the run is this product's, else undefined (the message is acknowledged). */
  readonly requestOf: (run: Run) => Request | undefined
  /**
   * The work. It starts the run with the `begin` it is given, ends it with a terminal transition
   * (or fails with RunFailure, RunStopped or Handover), and may die with SupersededExecution at
   * any write when another execution took the run over.
   */
  readonly conduct: (run: Run, request: Request, begin: Begin<Started>) => Effect.Effect<void, unknown, R>
  /** Where the runs record their start and the kernel's ends, when not in their own log (RunRecord). */
  readonly record?: RunRecord<Started, R>
  /** The detail of a run that failed for a reason the executor did not name (the cause is logged). */
  readonly internalErrorDetail: string
  /** Added to the kernel's log lines about the executor's runs. */
  readonly logAnnotations?: Readonly<Record<string, unknown>>
  /** After the execution's end is written (its failure's code), before "run ended" is sent. */
  readonly ending?: (run: Run) => Effect.Effect<void, never, R>
  /** After "run ended" was sent: the execution is over on this runner. */
  readonly ended?: (run: Run) => Effect.Effect<void, never, R>
  /**
   * The execution stopped without ending the run here: another execution took it over, the
   * entity stopped on this runner, or the run was handed over; the run's next execution ends it.
   */
  readonly left?: (run: Run) => Effect.Effect<void, never, R>
  /**
   * An Execute for a run of this kind that already ended (delivered again because its runner
   * stopped between the run's end and the message's answer): finishes, idempotently, what the end
   * leaves to do after it (a Track tick's notification). Runs in the message's handler, not as the
   * run's work: no fiber, no deadline, no drain check. Without it the message is only acknowledged.
   */
  readonly finished?: (run: Run, request: Request) => Effect.Effect<void, never, R>
}

/**
 * Claims the run for this execution, reads what it resumes from (`load`, after the claim, so an
 * older execution can no longer move the checkpoint under it), and starts it: `pending → running`,
 * or a `run.resumed` event saying where it resumes from (`resumedFrom`; absent: step 0) for a run
 * that was under way elsewhere; or, for an executor with a `record`, its record's start, which
 * is also the claim (one write), and `load` after it.
 * Gives the execution's token (its writes carry it), what `load` read, and what the record's
 * start gave (`Started`). Without a record, a failure of `load` ends the run before it starts
 * (no transition to running, no `run.resumed`). `logged` adds what `load` read to the "run started" / "run resumed"
 * log line.
 */
export type Begin<Started = void> = <A, E, R>(
  load: Effect.Effect<A, E, R>,
  resumedFrom?: (loaded: A) => Omit<EventData<"run.resumed">, "run_id">,
  logged?: (loaded: A) => Readonly<Record<string, unknown>>
) => Effect.Effect<readonly [token: ExecutionToken, loaded: A, started: Started], E | RunStopped, R>

/** Where an entity keeps the fibers of its runs' executions, and whether it is stopping on this runner. */
export interface ExecutionHost {
  /** `Interrupt` removes a run's fiber from it. */
  readonly fibers: FiberMap.FiberMap<string>
  /**
   * True once the entity stops on this runner (its shard moved, or the runner stops): set by a
   * finalizer added after the map, so it is set before the map interrupts its fibers, and an
   * execution interrupted then leaves the run to the shard's next owner and ends nothing.
   */
  readonly stopping: () => boolean
}

/**
 * The lifecycle of one run's execution, for an entity's `Execute` (persisted, delivered at least
 * once): `handleExecute` reads the run (gone, of another kind or ended: acknowledged, no work),
 * refuses while this runner drains, runs the executor's work in a fiber of the host's map bounded
 * by the run's deadline, and ends the run once. "refused": leave the message for the next owner.
 */
export const makeRunExecution = <Request, R, Started = void>(executor: RunExecutor<Request, R, Started>, host: ExecutionHost) =>
  Effect.map(makeRunExecutions(executor), (forHost) => forHost(host))

/**
 * `makeRunExecution` in two steps: what does not depend on the entity (the services, the
 * executor's context) once, then one execution per host. An entity that lives for one message at
 * a time (a Monitor between its ticks) builds the first step with its layer, not per instance.
 */
export const makeRunExecutions = <Request, R, Started = void>(executor: RunExecutor<Request, R, Started>) =>
  Effect.gen(function*() {
    const store = yield* RunStore
    const notifier = yield* RunNotifier
    const lifecycle = yield* RunnerLifecycle
    const context = yield* Effect.context<R>()
    const log = { kind: executor.kind, ...executor.logAnnotations }
    const hook = (of: ((run: Run) => Effect.Effect<void, never, R>) | undefined, run: Run) =>
      of === undefined ? Effect.void : of(run).pipe(Effect.provideContext(context))
    const record = executor.record
    const getRun = (runId: RunId) => store.getRun(runId, executor.kind)

    /**
     * Writes the kernel's end of a run that has not ended (in its record, or as a transition);
     * true when another execution owns the run now (nothing was written).
     */
    const writeEnd = (run: Run, kernelEnd: KernelEnd, token: ExecutionToken | undefined) =>
      (record === undefined
        ? store.transition(run.id, kernelEnd.status, {
          terminalReason: kernelEnd.terminalReason,
          errorCode: kernelEnd.code,
          errorDetail: kernelEnd.detail,
          ...(token === undefined ? {} : { executor: token })
        }).pipe(Effect.ignore)
        : record.end(run, kernelEnd, token).pipe(Effect.provideContext(context))).pipe(
          Effect.as(false),
          Effect.catchDefect((defect) => defect instanceof SupersededExecution ? Effect.succeed(true) : Effect.die(defect))
        )

    /**
     * `claimed` learns the execution's token: the kernel's own writes for the execution carry it
     * too. `started` is completed once the run started (the deadline counts from there).
     */
    const beginFor = (run: Run, claimed: (token: ExecutionToken) => void, started: Deferred.Deferred<void>): Begin<Started> => (load, resumedFrom, logged) =>
      Effect.gen(function*() {
        if (record !== undefined) {
          // The record's start is the claim: the token is the execution's from here on.
          const token = newExecutionToken()
          const begun = yield* record.start(run, token).pipe(Effect.provideContext(context))
          claimed(token)
          const loaded = yield* load
          const said = logged === undefined ? {} : logged(loaded)
          const resumed = run.started_at !== null
          // Debug: such runs are many and short (a Track tick a minute per monitor); their own log says more.
          yield* Effect.logDebug(resumed ? "run resumed" : "run started").pipe(Effect.annotateLogs({ ...log, ...said, run_id: run.id }))
          yield* Deferred.succeed(started, undefined)
          return [token, loaded, begun] as const
        }
        const token = yield* store.claimExecution(run.id)
        claimed(token)
        const loaded = yield* load
        const said = logged === undefined ? {} : logged(loaded)
        if (run.status === "pending") {
          yield* store.transition(run.id, "running", { executor: token }).pipe(Effect.mapError(() => new RunStopped()))
          // Which runner executes which run, for operators following a run across nodes.
          yield* Effect.logInfo("run started").pipe(Effect.annotateLogs({ ...log, ...said, run_id: run.id }))
        } else {
          const from = resumedFrom === undefined ? { from_step: 0 } : resumedFrom(loaded)
          yield* store.appendEvent(run.id, "run.resumed", { run_id: run.id, ...from }, token)
          yield* Effect.logInfo("run resumed").pipe(Effect.annotateLogs({ ...log, ...said, run_id: run.id, from_step: from.from_step }))
        }
        yield* Deferred.succeed(started, undefined)
        // Without a record, nothing is started but the run itself.
        return [token, loaded, undefined as Started] as const
      })

    const takenOver = (runId: RunId) =>
      Effect.logWarning("run taken over by another runner; this execution stopped").pipe(Effect.annotateLogs({ ...log, run_id: runId }), Effect.as("left" as const))

    /**
     * The one end of an execution: the failure's code written (unless the run ended otherwise, or
     * another execution took the run over since this one claimed it: `token`), then "run ended".
     */
    const end = (run: Run, exit: Exit.Exit<void, unknown>, token: ExecutionToken | undefined) =>
      Effect.gen(function*() {
        const runId = run.id
        // However the work ended (it may have seen the run end and returned, or stopped), once
        // another execution claimed the run, its end, its hooks and "run ended" are that one's:
        // a runner that froze and thawed must not save its stale browser or announce the end.
        // (A kind with a record of its own announces nothing here, and its writes carry the
        // token: a superseded execution of it is caught at its writes, without this read.)
        if (record === undefined && token !== undefined && !(yield* store.holdsClaim(runId, token))) return yield* takenOver(runId)
        if (Exit.isFailure(exit)) {
          const failure = Cause.squash(exit.cause)
          if (failure instanceof SupersededExecution) return yield* takenOver(runId)
          if (failure instanceof Handover) return "left" as const
          if (!(failure instanceof RunStopped) && !Cause.hasInterruptsOnly(exit.cause)) {
            const current = yield* getRun(runId)
            if (current !== undefined && !isTerminal(current.status)) {
              const modelError = (failure as { _tag?: string })._tag === "AiError"
              if (!(failure instanceof RunFailure)) yield* Effect.logError("run failed", exit.cause).pipe(Effect.annotateLogs({ ...log, run_id: runId }))
              const superseded = yield* writeEnd(current, {
                status: "failed",
                terminalReason: "failed",
                code: failure instanceof RunFailure ? failure.code : modelError ? "model_error" : "internal_error",
                detail: failure instanceof RunFailure
                  ? failure.detail
                  : modelError
                  ? `the model failed: ${(failure as Error).message}`
                  : executor.internalErrorDetail
              }, token)
              if (superseded) return yield* takenOver(runId)
            }
          }
        }
        yield* hook(executor.ending, run)
        // "run ended" (the run's callback) is for runs in their own log; a kind with a record of
        // its own tells its ends its own way (a Track tick, its monitor's notifications).
        if (record === undefined) {
          const ended = yield* getRun(runId)
          if (ended !== undefined && isTerminal(ended.status)) yield* notifier.terminal(runId)
        }
        return "ended" as const
      })

    /** The execution of the runs of one host (an entity instance): its fiber map and its stopping flag. */
    return (host: ExecutionHost) => {
      const stoppedHere = (runId: RunId) =>
        Effect.logInfo("run execution stopped with its entity on this runner").pipe(Effect.annotateLogs({ ...log, run_id: runId }))

      /**
       * Runs the work in a fiber of the map (Interrupt stops it), bounded, once the run started, by
       * the run's deadline; true when handed over.
       */
      const execute = (run: Run, request: Request) =>
        Effect.gen(function*() {
          let token: ExecutionToken | undefined
          const started = yield* Deferred.make<void>()
          const work = executor.conduct(run, request, beginFor(run, (claimed) => void (token = claimed), started)).pipe(Effect.provideContext(context))
          const deadline = run.deadline_at
          // Work that ends before it starts the run (it fails first) is not bounded: the race is its.
          const reached = deadline === null ? Effect.never : Deferred.await(started).pipe(
            Effect.andThen(Effect.suspend(() => Effect.sleep(Duration.millis(Math.max(0, deadline.getTime() - Date.now())))))
          )
          const bounded = deadline === null ? work : Effect.raceFirst(Effect.asSome(work), Effect.as(reached, Option.none())).pipe(
            Effect.flatMap((finished) =>
              Option.isSome(finished) ? Effect.void : writeEnd(run, {
                status: "canceled",
                terminalReason: "duration_exceeded",
                code: "duration_exceeded",
                detail: "the run reached max_duration_minutes"
              }, token).pipe(Effect.flatMap((superseded) => superseded ? Effect.die(new SupersededExecution(run.id)) : Effect.void))
            )
          )
          // The run's work (engine calls, page reads, model calls, writes) is its project's in the fair queue.
          const fiber = yield* FiberMap.run(host.fibers, run.id, bounded.pipe(Effect.provideService(WorkOwner, run.project_id)))
          const exit = yield* Fiber.await(fiber)
          if (host.stopping() && Exit.hasInterrupts(exit)) {
            yield* stoppedHere(run.id)
            yield* hook(executor.left, run)
            return false
          }
          const outcome = yield* end(run, exit, token)
          yield* hook(outcome === "ended" ? executor.ended : executor.left, run)
          return Exit.isFailure(exit) && Cause.squash(exit.cause) instanceof Handover
        }).pipe(
          // The Execute itself interrupted: the entity stopped here (its shard moved, or this runner stops).
          Effect.onInterrupt(() => stoppedHere(run.id).pipe(Effect.andThen(hook(executor.left, run))))
        )

      /**
       * `known`: the run as its caller just read or wrote it (a Track `Fire` made the tick run), and
       * the request as the caller built it (with what it read for it), so neither is read again.
       */
      const handleExecute = (runId: RunId, known?: { readonly run: Run; readonly request: Request }) =>
        Effect.gen(function*() {
          const run = known?.run ?? (yield* getRun(runId))
          const request = known?.request ?? (run === undefined ? undefined : executor.requestOf(run))
          if (run === undefined || request === undefined) return "handled" as const
          if (isTerminal(run.status)) {
            if (executor.finished !== undefined) yield* executor.finished(run, request).pipe(Effect.provideContext(context))
            return "handled" as const
          }
          let handedOver = false
          const outcome = yield* runHere(lifecycle, execute(run, request).pipe(Effect.map((moved) => void (handedOver = moved))))
          return handedOver ? "refused" as const : outcome
        }).pipe(Effect.catchCause((cause) => Effect.logError("run execution failed", cause).pipe(Effect.annotateLogs({ ...log, run_id: runId }), Effect.as("handled" as const))))

      return { handleExecute }
    }
  })

/**
 * The handlers of a one-run entity (`Execute` persisted, `Interrupt`) for a product's executor:
 * `toLayer` them on the product's entity (src/entities/).
 */
export const runEntityHandlers = <Request, R, Started = void>(executor: RunExecutor<Request, R, Started>) =>
  Effect.gen(function*() {
    const leaveWhenRefused = yield* makeLeaveWhenRefused
    const fibers = yield* FiberMap.make<string>()
    // Added after the map: this finalizer runs before the map interrupts its fibers (ExecutionHost).
    let stopping = false
    yield* Effect.addFinalizer(() => Effect.sync(() => { stopping = true }))
    const execution = yield* makeRunExecution(executor, { fibers, stopping: () => stopping })
    return {
      Execute: ({ payload }: { readonly payload: { readonly runId: RunId } }) => leaveWhenRefused(execution.handleExecute(payload.runId), payload.runId),
      Interrupt: ({ payload }: { readonly payload: { readonly runId: RunId } }) => FiberMap.remove(fibers, payload.runId).pipe(Rpc.fork)
    }
  })
