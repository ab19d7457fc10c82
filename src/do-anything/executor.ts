/**
 * The Session entity (Effect Cluster): owns one browser context leased from the pool of the runner
 * it lives on, and executes the session's runs one at a time inside it, so a follow-up run sees
 * the cookies, tabs and page the previous one left. `Execute` is persisted (it survives a restart
 * and is handled at least once: runAgent ignores runs that are no longer pending); `Interrupt` and
 * `Close` run beside a long `Execute`. The browser is released when a run ends with
 * keep_alive false, when the session is closed, or when the entity passivates after idling.
 *
 * A draining runner (SIGTERM, see src/cluster/lifecycle.ts) starts no run and resumes none: their
 * Execute is left unprocessed and handled by the runner that takes the shard after the handover.
 */
import { SkillStore } from "../store/skills.ts"
import { CacheScriptStore } from "../store/cache-scripts.ts"
import { Clock, Effect, Exit, Fiber, FiberMap, Layer, Option, Scope, Stream } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { type AgentSettings, runAgent } from "../agent/run-agent.ts"
import { AgentModel } from "../agent/model.ts"
import { fairModelLayer, WorkOwner } from "../fairness/fair-queue.ts"
import { navigate } from "../browser/actions.ts"
import { AppConfig } from "../config/config.ts"
import { BrowserPool, type ContextLease } from "../browser/pool.ts"
import { makeLiveControl } from "../control/live-control.ts"
import { TakeControl } from "../control/take-control.ts"
import { RunnerLifecycle, runHere } from "../cluster/lifecycle.ts"
import { isSuperseded, makeLeaveWhenRefused } from "../runs/kernel.ts"
import { isTerminal } from "../domain/run-state.ts"
import { type ProjectId, type Run, RunId, SessionId } from "../domain/run.ts"
import type { ProfileId } from "../domain/profile.ts"
import { type Checkpoint, RunStore } from "../store/runs.ts"
import { SessionStore } from "../store/sessions.ts"
import { RunNotifier } from "../webhooks/run-notifier.ts"
import { ProfileStore } from "../profiles/profile-store.ts"
import { prepareRestore } from "../profiles/restore.ts"
import { holdForPerson, isLoginHold } from "../profiles/login-hold.ts"
import { RunRecorders } from "../recordings/recorder.ts"
import { recordingSettings } from "../recordings/settings.ts"
import { SecretVaultLive } from "../secrets/service.ts"
import { SafetyPolicies } from "../safety/service.ts"
import { SessionEntity } from "../entities/session.ts"

const sessionHandlers = Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    // A Session entity is addressed by its session id.
    const sessionId = SessionId.make(address.entityId)
    const pool = yield* BrowserPool
    const store = yield* RunStore
    const sessionStore = yield* SessionStore
    const notifier = yield* RunNotifier
    const config = yield* AppConfig
    const lifecycle = yield* RunnerLifecycle
    const leaveWhenRefused = yield* makeLeaveWhenRefused
    const runs = yield* FiberMap.make<string>()
    // Set when the entity stops on this runner (its shard moved, or the runner stops), by the last
    // finalizer added below (finalizers run last-added first): an execution that sees its agent
    // interrupted, or its browser released, then knows the run is no longer this runner's to finish.
    let stopping = false
    const profiles = yield* ProfileStore
    const recorders = yield* RunRecorders
    const control = yield* TakeControl
    // The agent's model, its calls taking fair shares of the model lane.
    const fairAgentModel = Option.map(yield* AgentModel, (model) => ({ ...model, layer: fairModelLayer(model.layer) }))
    const settings: AgentSettings = {
      stepScreenshots: config.stepScreenshots,
      vision: Option.exists(fairAgentModel, (model) => model.vision)
    }

    let lease: { readonly lease: ContextLease; readonly scope: Scope.Closeable } | undefined
    const live = yield* makeLiveControl(sessionId, () => lease?.lease.page())
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
      // Cookies (and IndexedDB) through Playwright, local storage by an init script (profiles/restore.ts).
      const restore = prepareRestore(storageState)
      const options = restore.storageState === undefined
        ? { allowPrivateNetworks: config.allowPrivateNetworks }
        : { allowPrivateNetworks: config.allowPrivateNetworks, storageState: restore.storageState as never }
      const acquired = yield* pool.acquireContext(options).pipe(
        Effect.tap((opened) => Effect.promise(() => restore.apply(opened.context).catch(() => undefined))),
        Scope.provide(scope),
        Effect.onError(() => Scope.close(scope, Exit.void))
      )
      lease = { lease: acquired, scope }
      return acquired
    })

    // The session's profile (read once from its row): its saved state starts the session's first
    // browser context, and the context's state is saved back into it at every run end and when the
    // browser is released. undefined until read; null when the session has none.
    let profileId: ProfileId | null | undefined
    const bindProfile = (projectId: ProjectId) =>
      profileId !== undefined ? Effect.void : sessionStore.getSession(projectId, sessionId).pipe(Effect.map((session) => {
        profileId = session?.profile_id ?? null
      }))
    /** The state a new context starts from: a checkpoint's (newer, this session's own), else the profile's. */
    const stateToRestore = (projectId: ProjectId, checkpointState: unknown) =>
      Effect.gen(function*() {
        yield* bindProfile(projectId)
        if (lease !== undefined || checkpointState !== undefined && checkpointState !== null) return checkpointState
        return profileId === null || profileId === undefined ? undefined : yield* profiles.loadState(profileId)
      })
    const saveProfile = Effect.suspend(() => {
      const current = lease
      const id = profileId
      if (current === undefined || current.lease.crashed() || id === undefined || id === null) return Effect.void
      return Effect.tryPromise(() => current.lease.context.storageState({ indexedDB: true })).pipe(
        Effect.timeout("10 seconds"),
        Effect.flatMap((state) => profiles.saveState(id, state, sessionId)),
        Effect.flatMap((saved) => saved ? Effect.void : Effect.logWarning("profile state not saved: another session holds the profile now")),
        Effect.catchCause((cause) => Effect.logWarning("could not save the profile's browser state", cause)),
        Effect.annotateLogs({ session_id: sessionId, profile_id: id })
      )
    })

    // When the entity last finished handling a message: the idle window counts from there.
    let lastActive = yield* Clock.currentTimeMillis
    const touch = Clock.currentTimeMillis.pipe(Effect.map((now) => {
      lastActive = now
    }))
    const idleMs = config.sessionIdleSeconds * 1000

    // Passivation after idling releases the browser and closes the session. When the entity stops
    // for any other reason (the runner shuts down, or its shard moves to another runner when the
    // cluster rebalances) the session stays open: it moves with its shard, and its next run (or
    // the one still pending or under way) starts there from the last checkpoint's cookies,
    // storage and tabs. The cluster does not say why an entity stops, so the idle time decides
    // (with a second of slack for the passivation timer).
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* saveProfile
        yield* release
        if (yield* lifecycle.draining) return
        const idleFor = (yield* Clock.currentTimeMillis) - lastActive
        if (idleFor < idleMs - 1000) return
        const open = (yield* sessionStore.runsOfSession(sessionId)).some((run) => !isTerminal(run.status))
        if (!open) yield* sessionStore.setSessionStatus(sessionId, "closed")
      }).pipe(Effect.ignore)
    )
    yield* Effect.addFinalizer(() => Effect.sync(() => { stopping = true }))

    const finishRun = (runId: RunId) =>
      Effect.gen(function*() {
        const run = yield* store.getRun(runId)
        if (run === undefined) return
        yield* notifier.terminal(runId)
        yield* saveProfile
        if (run.request._tag === "DoAnything" && run.request.keep_alive === false) {
          yield* release
          yield* sessionStore.setSessionStatus(sessionId, "closed")
        }
      })

    /** Reopens the checkpoint's tabs: the active one first (and it stays active), then the others. */
    const restoreTabs = (restored: ContextLease, checkpoint: Checkpoint) =>
      Effect.gen(function*() {
        const visible = (url: string | null): url is string => url !== null && url !== "" && url !== "about:blank"
        const active = yield* Effect.tryPromise(() => restored.context.newPage()).pipe(Effect.option)
        if (active._tag === "Some") restored.setActivePage(active.value)
        if (visible(checkpoint.url)) yield* navigate(restored, checkpoint.url).pipe(Effect.ignore)
        for (const url of checkpoint.tabs.filter((tab) => tab !== checkpoint.url && visible(tab))) {
          yield* Effect.tryPromise(async () => {
            const page = await restored.context.newPage()
            await page.goto(url, { timeout: 30_000 }).catch(() => undefined)
          }).pipe(Effect.ignore)
        }
        if (active._tag === "Some") restored.setActivePage(active.value)
      })

    /** Ends a run that cannot go on here with a clear error, and tells whoever waits for it. */
    const failRun = (runId: RunId, errorCode: string, errorDetail: string) =>
      store.transition(runId, "failed", { terminalReason: "failed", errorCode, errorDetail }).pipe(
        Effect.ignore,
        Effect.andThen(finishRun(runId))
      )

    /**
     * Runs the agent in a fiber of the map (so Interrupt, which runs beside Execute, can stop it),
     * then finishes the run, unless another runner took the run over meanwhile: then this one
     * only stops.
     */
    const execute = <E, R>(runId: RunId, leased: ContextLease, agent: Effect.Effect<void, E, R>) =>
      Effect.gen(function*() {
        // The run's recording (src/recordings/recorder.ts) covers the agent's whole execution here.
        const run = yield* store.getRun(runId)
        const request = run?.request
        yield* recorders.start(runId, leased, recordingSettings(request?._tag === "DoAnything" ? request : undefined))
        // The agent's model calls are its project's in the fair queue (src/fairness/fair-queue.ts).
        const owned = agent.pipe(Effect.provideService(AgentModel, fairAgentModel), Effect.provideService(WorkOwner, run?.project_id ?? "service"))
        // The take-control watcher (URL expiry, idle release) lives and dies with the agent.
        const fiber = yield* FiberMap.run(runs, runId, Effect.scoped(Effect.andThen(Effect.forkScoped(live.watch(runId)), owned)))
        const exit = yield* Fiber.await(fiber)
        if (isSuperseded(exit)) {
          yield* recorders.discard(runId)
          return yield* Effect.logWarning("run taken over by another runner; this execution stopped").pipe(Effect.annotateLogs({ run_id: runId }))
        }
        if (stopping && Exit.hasInterrupts(exit)) {
          // The entity's scope closed before its Execute handler was interrupted: the shard's next
          // owner resumes the run; finishing it here would notify and save state for a run not ours.
          yield* recorders.discard(runId)
          return yield* Effect.logInfo("run execution stopped with its entity on this runner").pipe(Effect.annotateLogs({ run_id: runId }))
        }
        yield* recorders.finish(runId)
        yield* finishRun(runId)
      }).pipe(Effect.onInterrupt(() =>
        recorders.discard(runId).pipe(
          // The entity stopped here (its shard moved to another runner, or this runner is stopping).
          Effect.andThen(Effect.logInfo("run execution stopped with its entity on this runner").pipe(Effect.annotateLogs({ run_id: runId })))
        )
      ))

    /**
     * What executes a run: the agent, or, for the hold-the-page run of an interactive login
     * (src/profiles/login-hold.ts), a browser that opens the start URL and waits for a person.
     */
    const agentFor = (runId: RunId, leased: ContextLease, executor: string, resume?: { readonly checkpoint: Checkpoint | undefined }) =>
      Effect.gen(function*() {
        const run = yield* store.getRun(runId)
        const login = run === undefined ? undefined : yield* profiles.loginOfSession(sessionId)
        return run !== undefined && login !== undefined && isLoginHold(run, login)
          ? holdForPerson(runId, leased, executor, login.start_url, resume !== undefined)
          : runAgent(runId, leased, settings, executor, resume)
      })

    const resumeRun = (runId: RunId, projectId: ProjectId) =>
      Effect.gen(function*() {
        const checkpoint = yield* store.loadCheckpoint(runId)
        if (checkpoint?.dirtyForm === true) {
          // What was typed into the form lived only in the dead runner's browser.
          yield* failRun(runId, "cannot_resume", "the runner executing this run stopped while a form held unsubmitted input, which cannot be restored; start a follow-up run")
          return
        }
        const restore = yield* Effect.result(stateToRestore(projectId, checkpoint?.storageState))
        if (restore._tag === "Failure") {
          yield* failRun(runId, "profile_state_unreadable", `the profile's saved state could not be read: ${restore.failure.reason}`)
          return
        }
        const leased = yield* Effect.result(acquire(restore.success))
        if (leased._tag === "Failure") {
          yield* failRun(runId, "browser_unavailable", "the run could not resume: no browser on this runner")
          return
        }
        if (checkpoint !== undefined) yield* restoreTabs(leased.success, checkpoint)
        yield* store.appendEvent(runId, "run.resumed", {
          run_id: runId,
          from_step: checkpoint?.step ?? 0,
          url: checkpoint?.url ?? null
        })
        const executor = yield* store.claimExecution(runId)
        yield* Effect.logInfo("run resumed").pipe(Effect.annotateLogs({ run_id: runId, session_id: sessionId, from_step: checkpoint?.step ?? 0 }))
        yield* execute(runId, leased.success, yield* agentFor(runId, leased.success, executor, { checkpoint }))
      })

    /**
     * The checkpoint of the session's previous run, when this runner holds no browser for the
     * session yet: the session moved here (its runner shut down while it idled), and its next run
     * starts with the cookies, storage and tabs the previous one left.
     */
    const previousCheckpoint = (run: Run) =>
      Effect.gen(function*() {
        if (lease !== undefined) return undefined
        const previous = (yield* sessionStore.runsOfSession(sessionId)).filter((other) => other.id < run.id).at(-1)
        return previous === undefined ? undefined : yield* store.loadCheckpoint(previous.id)
      })

    const startRun = (run: Run) =>
      Effect.gen(function*() {
        const previous = yield* previousCheckpoint(run)
        const restore = yield* Effect.result(stateToRestore(run.project_id, previous?.storageState))
        if (restore._tag === "Failure") {
          yield* failRun(run.id, "profile_state_unreadable", `the profile's saved state could not be read: ${restore.failure.reason}`)
          return
        }
        const leased = yield* Effect.result(acquire(restore.success))
        if (leased._tag === "Failure") {
          yield* failRun(run.id, "browser_unavailable", String((leased.failure as { message?: string }).message ?? leased.failure))
          return
        }
        if (previous !== undefined) yield* restoreTabs(leased.success, previous)
        const executor = yield* store.claimExecution(run.id)
        // Which runner executes which run, for operators following a run across nodes.
        yield* Effect.logInfo("run started").pipe(Effect.annotateLogs({ run_id: run.id, session_id: sessionId, restored: previous !== undefined }))
        yield* execute(run.id, leased.success, yield* agentFor(run.id, leased.success, executor))
      })

    const handleExecute = (runId: RunId) =>
      Effect.gen(function*() {
        const run = yield* store.getRun(runId)
        if (run === undefined || run.session_id !== sessionId) return "handled" as const
        if (run.status === "running") {
          // Delivered again after the runner that executed it died (or was drained): resume
          // from the last completed step in a context rebuilt from the checkpoint.
          return yield* runHere(lifecycle, resumeRun(run.id, run.project_id))
        }
        if (run.status !== "pending") {
          // Waiting for a person (or paused) when its runner died: the question is lost with the
          // model call that asked it, so the run fails cleanly instead of staying non-terminal.
          if (!isTerminal(run.status)) {
            yield* failRun(run.id, "runner_restarted", "the runner executing this run stopped; start a follow-up run to continue")
          }
          return "handled" as const
        }
        return yield* runHere(lifecycle, startRun(run))
      }).pipe(Effect.catchCause((cause) => Effect.logError("session run failed", cause).pipe(Effect.as("handled" as const))))

    return SessionEntity.of({
      Execute: ({ payload }) => leaveWhenRefused(handleExecute(payload.runId), payload.runId).pipe(Effect.ensuring(touch)),
      Interrupt: ({ payload }) => FiberMap.remove(runs, payload.runId).pipe(Rpc.fork),
      // While a person watches and steers (their control page streams frames), a run that asked
      // for capture_during_take_control: false records nothing; capture resumes when the stream ends.
      ControlFrames: ({ payload }) =>
        Rpc.fork(Stream.unwrap(Effect.gen(function*() {
          const grant = yield* control.grant(payload.grantId)
          if (grant === undefined) return live.frames(payload.grantId)
          yield* recorders.personInControl(grant.runId, true)
          return live.frames(payload.grantId).pipe(Stream.ensuring(recorders.personInControl(grant.runId, false)))
        }))),
      ControlInput: ({ payload }) => live.input(payload.grantId, payload.inputs).pipe(Rpc.fork),
      Close: () =>
        Effect.gen(function*() {
          yield* FiberMap.clear(runs)
          yield* saveProfile
          yield* release
          yield* sessionStore.setSessionStatus(sessionId, "closed")
        }).pipe(Rpc.fork)
    })
})

/** The entity, passivated (browser released, session closed) after WA_SESSION_IDLE_SECONDS idle. */
export const SessionEntityLive = Layer.unwrap(Effect.map(AppConfig, (config) =>
  SessionEntity.toLayer(sessionHandlers, { maxIdleTime: `${config.sessionIdleSeconds} seconds` })
)).pipe(Layer.provide(ProfileStore.layer), Layer.provide(RunRecorders.live), Layer.provide(SecretVaultLive), Layer.provide(SafetyPolicies.layer), Layer.provide(CacheScriptStore.layer), Layer.provide(SkillStore.layer))
