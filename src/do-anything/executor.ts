/**
 * The Session entity (Effect Cluster): owns one browser context leased from the pool of the runner
 * it lives on, and executes the session's runs one at a time inside it, so a follow-up run sees
 * the cookies, tabs and page the previous one left. Each run's lifecycle is the run kernel's
 * (src/runs/kernel.ts, `makeRunExecution`): `Execute` is persisted and handled at least once (a
 * run gone or ended is acknowledged), the run is claimed, started or resumed, bounded by its
 * deadline, stopped by `Interrupt`, and ended once. What the kernel's `begin` loads here is the
 * session's browser (restored from a checkpoint on another runner's resume); the work is the
 * agent (src/agent/run-agent.ts) or the hold-the-page run of an interactive login. `Interrupt`,
 * `Close` and take control run beside a long `Execute`. The browser is released when a run ends
 * with keep_alive false, when the session is closed, or when the entity passivates after idling.
 *
 * A draining runner (SIGTERM, see src/cluster/lifecycle.ts) starts no run and resumes none: their
 * Execute is left unprocessed and handled by the runner that takes the shard after the handover.
 */
import { SkillStore } from "../store/skills.ts"
import { CacheScriptStore } from "../store/cache-scripts.ts"
import { Clock, Effect, Exit, FiberMap, Layer, Option, Schema, Scope, Stream } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { type AgentSettings, modelNotConfigured, runAgent } from "../agent/run-agent.ts"
import { AgentModel } from "../agent/model.ts"
import { navigate } from "../browser/actions.ts"
import { AppConfig } from "../config/config.ts"
import { BrowserPool, type ContextLease } from "../browser/pool.ts"
import { makeLiveControl } from "../control/live-control.ts"
import { TakeControl } from "../control/take-control.ts"
import { RunnerLifecycle } from "../cluster/lifecycle.ts"
import { type Begin, makeLeaveWhenRefused, makeRunExecution, RunFailure } from "../runs/kernel.ts"
import { isTerminal } from "../domain/run-state.ts"
import { type DoAnythingRequest, type ProjectId, type Run, type RunId, SessionId } from "../domain/run.ts"
import type { ProfileId } from "../domain/profile.ts"
import { type Checkpoint, RunStore } from "../store/runs.ts"
import { SessionStore } from "../store/sessions.ts"
import { ProfileStore } from "../profiles/profile-store.ts"
import { prepareRestore } from "../profiles/restore.ts"
import { holdForPerson, isLoginHold } from "../profiles/login-hold.ts"
import { RunRecorders } from "../recordings/recorder.ts"
import { recordingSettings } from "../recordings/settings.ts"
import { SecretVaultLive } from "../secrets/service.ts"
import { SafetyPolicies } from "../safety/service.ts"
import { SessionEntity } from "../entities/session.ts"

/**
 * The storage state a context starts from (BrowserContextOptions["storageState"]), as prepareRestore
 * leaves it of a checkpoint's or profile's stored state: cookies, and the origins that have IndexedDB.
 */
const ContextStorageState = Schema.Struct({
  cookies: Schema.mutable(Schema.Array(Schema.Struct({
    name: Schema.String,
    value: Schema.String,
    domain: Schema.String,
    path: Schema.String,
    expires: Schema.Number,
    httpOnly: Schema.Boolean,
    secure: Schema.Boolean,
    sameSite: Schema.Literals(["Strict", "Lax", "None"]),
    partitionKey: Schema.optional(Schema.String)
  }))),
  origins: Schema.mutable(Schema.Array(Schema.Struct({
    origin: Schema.String,
    localStorage: Schema.mutable(Schema.Array(Schema.Struct({ name: Schema.String, value: Schema.String }))).pipe(
      Schema.withDecodingDefaultKey(Effect.succeed([]))
    ),
    indexedDB: Schema.optional(Schema.mutable(Schema.Array(Schema.Unknown)))
  })))
})
const decodeContextStorageState = Schema.decodeUnknownOption(ContextStorageState)

const sessionHandlers = Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    // A Session entity is addressed by its session id.
    const sessionId = SessionId.make(address.entityId)
    const pool = yield* BrowserPool
    const store = yield* RunStore
    const sessionStore = yield* SessionStore
    const config = yield* AppConfig
    const lifecycle = yield* RunnerLifecycle
    const leaveWhenRefused = yield* makeLeaveWhenRefused
    const runs = yield* FiberMap.make<string>()
    // Set when the entity stops on this runner (its shard moved, or the runner stops), by the last
    // finalizer added below (finalizers run last-added first): an execution that sees its agent
    // interrupted, or its browser released, then knows the run is no longer this runner's to finish
    // (the kernel's ExecutionHost).
    let stopping = false
    const profiles = yield* ProfileStore
    const recorders = yield* RunRecorders
    const control = yield* TakeControl
    // The agent's model (its requests take fair shares of the model lane: src/agent/model.ts).
    const fairAgentModel = yield* AgentModel
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
      const restored = restore.storageState === undefined ? Option.none() : decodeContextStorageState(restore.storageState)
      if (restore.storageState !== undefined && Option.isNone(restored)) {
        yield* Effect.logWarning("a stored browser state is not a storage state; the context starts without its cookies").pipe(
          Effect.annotateLogs({ session_id: sessionId })
        )
      }
      const options = Option.match(restored, {
        onNone: () => ({ allowPrivateNetworks: config.allowPrivateNetworks }),
        onSome: (state) => ({ allowPrivateNetworks: config.allowPrivateNetworks, storageState: state })
      })
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

    /** What is stored before a run ends (once per run: runAgent's beforeEnd, else the kernel's `ending`). */
    let storedBeforeEnd: RunId | undefined
    const beforeEnd = (runId: RunId) =>
      Effect.suspend(() => {
        if (storedBeforeEnd === runId) return Effect.void
        storedBeforeEnd = runId
        return Effect.andThen(recorders.finish(runId), saveProfile)
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

    /** What a run of this session runs in: the session's browser, and what the run resumes from. */
    interface Prepared {
      readonly leased: ContextLease
      /** The run's own checkpoint (a resumed run). */
      readonly checkpoint: Checkpoint | undefined
      /** The interactive login whose page the run holds for a person (src/profiles/login-hold.ts). */
      readonly holdAt: string | undefined
      /** A new run whose browser was restored from the session's previous run's checkpoint. */
      readonly restored: boolean
    }

    /**
     * The kernel's `load` (after the claim, before the run starts): the session's browser, a new
     * one restored from the session's previous run's checkpoint (the session moved here while it
     * idled) or from the run's own (it resumes here after its runner died), or the profile's
     * saved state. A run that cannot get one fails before it starts.
     */
    const prepare = (run: Run, resumed: boolean) =>
      Effect.gen(function*() {
        const checkpoint = resumed ? yield* store.loadCheckpoint(run.id) : undefined
        if (checkpoint?.dirtyForm === true) {
          // What was typed into the form lived only in the dead runner's browser.
          return yield* new RunFailure({
            code: "cannot_resume",
            detail: "the runner executing this run stopped while a form held unsubmitted input, which cannot be restored; start a follow-up run"
          })
        }
        const from = resumed ? checkpoint : yield* previousCheckpoint(run)
        const restore = yield* Effect.result(stateToRestore(run.project_id, from?.storageState))
        if (restore._tag === "Failure") {
          return yield* new RunFailure({ code: "profile_state_unreadable", detail: `the profile's saved state could not be read: ${restore.failure.reason}` })
        }
        const leased = yield* Effect.result(acquire(restore.success))
        if (leased._tag === "Failure") {
          return yield* new RunFailure({
            code: "browser_unavailable",
            detail: resumed ? "the run could not resume: no browser on this runner" : String((leased.failure as { message?: string }).message ?? leased.failure)
          })
        }
        if (from !== undefined) yield* restoreTabs(leased.success, from)
        // The run's recording (src/recordings/recorder.ts) covers its whole execution here.
        yield* recorders.start(run.id, leased.success, recordingSettings(run.request._tag === "DoAnything" ? run.request : undefined))
        const login = yield* profiles.loginOfSession(sessionId)
        const holdAt = login !== undefined && isLoginHold(run, login) ? login.start_url : undefined
        // A new run that needs the model fails before it starts when there is none.
        if (!resumed && holdAt === undefined && Option.isNone(fairAgentModel)) {
          return yield* new RunFailure({ code: "model_not_configured", detail: modelNotConfigured })
        }
        return { leased: leased.success, checkpoint, holdAt, restored: !resumed && from !== undefined } satisfies Prepared
      })

    /**
     * What executes a run: the agent, or, for the hold-the-page run of an interactive login
     * (src/profiles/login-hold.ts), a browser that opens the start URL and waits for a person.
     */
    const conduct = (run: Run, _request: DoAnythingRequest, begin: Begin) =>
      Effect.gen(function*() {
        if (run.status !== "pending" && run.status !== "running") {
          // Waiting for a person (or paused) when its runner died: the question is lost with the
          // model call that asked it, so the run fails cleanly instead of staying non-terminal.
          return yield* new RunFailure({ code: "runner_restarted", detail: "the runner executing this run stopped; start a follow-up run to continue" })
        }
        // Delivered again after the runner that executed it died (or was drained): resume from the
        // last completed step in a context rebuilt from the checkpoint.
        const resumed = run.status === "running"
        const [executor, prepared] = yield* begin(prepare(run, resumed), ({ checkpoint }) => ({
          from_step: checkpoint?.step ?? 0,
          url: checkpoint?.url ?? null
        }), ({ restored }) => resumed ? {} : { restored })
        const work = prepared.holdAt !== undefined
          ? holdForPerson(run.id, prepared.leased, executor, prepared.holdAt)
          : runAgent(run.id, prepared.leased, settings, executor, resumed ? { checkpoint: prepared.checkpoint } : undefined, beforeEnd(run.id))
        // The take-control watcher (URL expiry, idle release) lives and dies with the work; the
        // agent's model calls are its project's in the fair queue (src/fairness/fair-queue.ts).
        yield* Effect.scoped(Effect.andThen(Effect.forkScoped(live.watch(run.id)), work)).pipe(Effect.provideService(AgentModel, fairAgentModel))
      })

    const execution = yield* makeRunExecution({
      kind: "do_anything",
      requestOf: (run) => run.session_id === sessionId && run.request._tag === "DoAnything" ? run.request : undefined,
      conduct,
      internalErrorDetail: "the agent failed",
      logAnnotations: { session_id: sessionId },
      // The run's recording and its profile's browser state are stored before the agent ends the
      // run (runAgent's beforeEnd), so a client that sees it ended finds the recording, and a
      // session or monitor started with the profile right then starts logged in; a run ended
      // otherwise (canceled, failed by the kernel) has them stored here, before "run ended" is sent.
      ending: (run) => beforeEnd(run.id),
      // A run with keep_alive false closes its session.
      ended: (run) =>
        Effect.gen(function*() {
          if (run.request._tag === "DoAnything" && run.request.keep_alive === false) {
            yield* release
            yield* sessionStore.setSessionStatus(sessionId, "closed")
          }
        }).pipe(Effect.ignore),
      // Another execution finishes the run: this runner keeps no recording of it.
      left: (run) => recorders.discard(run.id)
    }, { fibers: runs, stopping: () => stopping })

    return SessionEntity.of({
      Execute: ({ payload }) => leaveWhenRefused(execution.handleExecute(payload.runId), payload.runId).pipe(Effect.ensuring(touch)),
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
