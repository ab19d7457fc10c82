/**
 * The Session entity (Effect Cluster): owns one browser context leased from the pool of the runner
 * it lives on, and executes the session's runs one at a time inside it, so a follow-up run sees
 * the cookies, tabs and page the previous one left. `Execute` is persisted (it survives a restart
 * and is handled at least once: runAgent ignores runs that are no longer pending); `Interrupt` and
 * `Close` run beside a long `Execute`. The browser is released when a run ends with
 * keep_alive false, when the session is closed, or when the entity passivates after idling.
 */
import { Effect, Exit, Fiber, FiberMap, Layer, Schema, Scope } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { type AgentSettings, runAgent } from "../agent/run-agent.ts"
import { navigate } from "../browser/actions.ts"
import { AppConfig } from "../config/config.ts"
import { BrowserPool, type ContextLease } from "../browser/pool.ts"
import { trackRunInFlight } from "../cluster/metrics.ts"
import { isTerminal } from "../domain/run-state.ts"
import { RunStore } from "../store/runs.ts"
import { RunNotifier } from "../webhooks/run-notifier.ts"

export const Execute = Rpc.make("Execute", { payload: { runId: Schema.String } })
  .annotate(ClusterSchema.Persisted, true)
export const Interrupt = Rpc.make("Interrupt", { payload: { runId: Schema.String } })
export const Close = Rpc.make("Close")

export const SessionEntity = Entity.make("Session", [Execute, Interrupt, Close])


const sessionHandlers = Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const sessionId = address.entityId
    const pool = yield* BrowserPool
    const store = yield* RunStore
    const notifier = yield* RunNotifier
    const config = yield* AppConfig
    const runs = yield* FiberMap.make<string>()
    const settings: AgentSettings = {
      stepScreenshots: config.stepScreenshots,
      vision: config.modelVision
    }

    let lease: { readonly lease: ContextLease; readonly scope: Scope.Closeable } | undefined
    const release = Effect.suspend(() => {
      const current = lease
      lease = undefined
      return current === undefined ? Effect.void : Scope.close(current.scope, Exit.void)
    })
    // `storageState` restores cookies and local storage when a run resumes on this runner.
    const acquire = (storageState?: unknown) => Effect.gen(function*() {
      if (lease !== undefined && !lease.lease.crashed()) return lease.lease
      yield* release // a crashed context is dropped; the session's next run gets a fresh one
      const scope = yield* Scope.make()
      const options = storageState === undefined || storageState === null
        ? { allowPrivateNetworks: config.allowPrivateNetworks }
        : { allowPrivateNetworks: config.allowPrivateNetworks, storageState: storageState as never }
      const acquired = yield* pool.acquireContext(options).pipe(
        Scope.provide(scope),
        Effect.onError(() => Scope.close(scope, Exit.void))
      )
      lease = { lease: acquired, scope }
      return acquired
    })

    // Passivation (idle timeout, shutdown) releases the browser and closes the session.
    yield* Effect.addFinalizer(() =>
      release.pipe(Effect.andThen(store.setSessionStatus(sessionId, "closed")), Effect.ignore)
    )

    const finishRun = (runId: string) =>
      Effect.gen(function*() {
        const run = yield* store.getRun(runId)
        if (run === undefined) return
        yield* notifier.terminal(runId)
        if ((run.request as { keep_alive?: boolean }).keep_alive === false) {
          yield* release
          yield* store.setSessionStatus(sessionId, "closed")
        }
      })

    const resumeRun = (runId: string) =>
      Effect.gen(function*() {
        const checkpoint = yield* store.loadCheckpoint(runId)
        const leased = yield* Effect.result(acquire(checkpoint?.storageState))
        if (leased._tag === "Failure") {
          yield* store.transition(runId, "failed", {
            terminalReason: "failed",
            errorCode: "browser_unavailable",
            errorDetail: "the run could not resume: no browser on this runner"
          }).pipe(Effect.ignore)
          yield* finishRun(runId)
          return
        }
        if (checkpoint?.url !== undefined && checkpoint.url !== null && checkpoint.url !== "about:blank") {
          yield* navigate(leased.success, checkpoint.url).pipe(Effect.ignore)
        }
        yield* store.appendEvent(runId, "run.resumed", {
          run_id: runId,
          from_step: checkpoint?.step ?? 0,
          url: checkpoint?.url ?? null
        })
        const fiber = yield* FiberMap.run(runs, runId, trackRunInFlight(runAgent(runId, leased.success, settings, { checkpoint })))
        yield* Fiber.await(fiber)
        yield* finishRun(runId)
      })

    return SessionEntity.of({
      Execute: ({ payload }) =>
        Effect.gen(function*() {
          const run = yield* store.getRun(payload.runId)
          if (run === undefined || run.session_id !== sessionId) return
          if (run.status === "running") {
            // Delivered again after the runner that executed it died (or was drained): resume
            // from the last completed step in a context rebuilt from the checkpoint.
            yield* resumeRun(run.id)
            return
          }
          if (run.status !== "pending") {
            // Waiting for a person (or paused) when its runner died: the question is lost with the
            // model call that asked it, so the run fails cleanly instead of staying non-terminal.
            if (!isTerminal(run.status)) {
              yield* store.transition(run.id, "failed", {
                terminalReason: "failed",
                errorCode: "runner_restarted",
                errorDetail: "the runner executing this run stopped; start a follow-up run to continue"
              }).pipe(Effect.ignore)
              yield* finishRun(run.id)
            }
            return
          }
          const leased = yield* Effect.result(acquire())
          if (leased._tag === "Failure") {
            yield* store.transition(run.id, "failed", {
              terminalReason: "failed",
              errorCode: "browser_unavailable",
              errorDetail: String((leased.failure as { message?: string }).message ?? leased.failure)
            }).pipe(Effect.ignore)
            yield* finishRun(run.id)
            return
          }
          // The run's fiber sits in the map so Interrupt (which runs beside Execute) can stop it.
          const fiber = yield* FiberMap.run(runs, run.id, trackRunInFlight(runAgent(run.id, leased.success, settings)))
          yield* Fiber.await(fiber)
          yield* finishRun(run.id)
        }).pipe(Effect.catchCause((cause) => Effect.logError("session run failed", cause))),
      Interrupt: ({ payload }) => FiberMap.remove(runs, payload.runId).pipe(Rpc.fork),
      Close: () =>
        Effect.gen(function*() {
          yield* FiberMap.clear(runs)
          yield* release
          yield* store.setSessionStatus(sessionId, "closed")
        }).pipe(Rpc.fork)
    })
})

/** The entity, passivated (browser released, session closed) after WA_SESSION_IDLE_SECONDS idle. */
export const SessionEntityLive = Layer.unwrap(Effect.map(AppConfig, (config) =>
  SessionEntity.toLayer(sessionHandlers, { maxIdleTime: `${config.sessionIdleSeconds} seconds` })
))
