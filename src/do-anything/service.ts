/**
 * Sessions: the DoAnything product. It owns the rules of sessions and their runs (the request's
 * cross-field rules, the model choice, the per-key session cap, which the store enforces
 * atomically) and hands runs to the Session entity, whose executor (src/do-anything/executor.ts) runs them.
 * Cancel and close go through here too. The HTTP handlers only decode, call one method and render.
 */
import { Context, Effect, Layer, Option } from "effect"
import { AgentModel } from "../agent/model.ts"
import { toolNames } from "../agent/tools.ts"
import { AppConfig } from "../config/config.ts"
import { Plans } from "../billing/plans.ts"
import { Budget } from "../billing/budget.ts"
import {
  type BudgetExceeded,
  type ControlNotAvailable,
  InsufficientCredits,
  InvalidField,
  MissingFields,
  RunEnded,
  RunNotExpired,
  SessionNotFound,
  UnknownNames
} from "../domain/errors.ts"
import { isTerminal } from "../domain/run-state.ts"
import { type DoAnythingRequest, type Principal, type ProjectId, type Run, RunId, type Session, SessionId } from "../domain/run.ts"
import type { InputRequestId } from "../domain/id-schemas.ts"
import { RunStore } from "../store/runs.ts"
import { type NewRun, SessionStore } from "../store/sessions.ts"
import { ProfileStore } from "../profiles/profile-store.ts"
import { SkillStore } from "../store/skills.ts"
import { SecretStore } from "../secrets/secret-store.ts"
import { RunNotifier } from "../webhooks/run-notifier.ts"
import { WorkspaceStore } from "../store/workspace-store.ts"
import { type IssuedUrl, TakeControl } from "../control/take-control.ts"
import { cancelRun } from "../runs/cancel.ts"
import { makeRunCreate } from "../runs/create.ts"
import { SessionSchedules } from "./schedules.ts"
import { decodeSessionSchedule, validateSessionSchedule } from "../domain/schedule-spec.ts"
import { SessionEntity } from "../entities/session.ts"
import { withMethodSpans } from "../observability/spans.ts"

/**
 * A Convention B run on an existing session without instructions observes: it reports the state
 * the session's page is in (URL, title, what it shows) and changes nothing, with read-only actions.
 */
export const OBSERVE_INSTRUCTIONS =
  "Report the current state of this session's browser: the URL and title of the current tab and what the page shows. " +
  "Do not navigate, click, type or change anything; finish with done."
export const OBSERVE_ACTIONS: ReadonlyArray<string> = ["read_page", "extract", "screenshot", "scroll", "done"]

const hasInstructions = (request: DoAnythingRequest) =>
  request.instructions !== undefined && request.instructions !== null && request.instructions.trim() !== ""

/** A session created with its first run. */
type SessionWithRun = { readonly session: Session; readonly run: Run }

export interface SessionWithRuns {
  readonly session: Session
  readonly runs: ReadonlyArray<Run>
}

export class Sessions extends Context.Service<Sessions, {
  /**
   * A new session with its first run. `beforeExecute` runs once both are stored, before the run is
   * handed to the Session entity (the interactive login records its login session there first).
   */
  readonly create: (key: { readonly projectId: ProjectId; readonly keyId: Principal }, request: DoAnythingRequest, options?: {
    readonly beforeExecute?: (created: { readonly session: Session; readonly run: Run }) => Effect.Effect<void>
  }) => Effect.Effect<
    { readonly session: Session; readonly run: Run },
    UnknownNames | MissingFields | InvalidField | InsufficientCredits | BudgetExceeded | import("../domain/errors.ts").SessionCapReached | import("../domain/errors.ts").WorkspaceNotFound | import("../domain/errors.ts").ProfileNotFound | import("../domain/errors.ts").ProfileInUse
  >
  /** A lookup: any id is accepted, one that names no session of the project is SessionNotFound. */
  readonly find: (projectId: ProjectId, sessionId: SessionId) => Effect.Effect<SessionWithRuns, SessionNotFound>
  readonly list: (projectId: ProjectId, status: string | undefined, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<SessionWithRuns>>
  /**
   * A follow-up run. `observeWithoutInstructions` (Convention B): a request without instructions
   * becomes an observing run (OBSERVE_INSTRUCTIONS) instead of a 422.
   */
  readonly addRun: (projectId: ProjectId, sessionId: SessionId, request: DoAnythingRequest, options?: { readonly observeWithoutInstructions?: boolean }) => Effect.Effect<
    Run,
    UnknownNames | MissingFields | InvalidField | InsufficientCredits | BudgetExceeded | SessionNotFound | import("../domain/errors.ts").SessionClosed | import("../domain/errors.ts").PreviousRunActive
  >
  readonly findRun: (projectId: ProjectId, runId: RunId, sessionId?: SessionId) => Effect.Effect<Run, import("../domain/errors.ts").RunNotFound>
  /** A run that ran out of steps, continued by a new run with `content` added to its instructions. */
  readonly continueRun: (run: Run, content: string) => Effect.Effect<
    Run,
    RunNotExpired | SessionNotFound | UnknownNames | MissingFields | InvalidField | InsufficientCredits | BudgetExceeded | import("../domain/errors.ts").SessionClosed | import("../domain/errors.ts").PreviousRunActive
  >
  readonly message: (run: Run, content: string) => Effect.Effect<void, RunEnded>
  readonly answer: (run: Run, inputRequestId: InputRequestId, response: unknown) => Effect.Effect<
    Run,
    import("../domain/errors.ts").InputRequestNotFound | import("../domain/errors.ts").InputRequestAnswered | import("../domain/errors.ts").RunNotAwaitingInput
  >
  readonly cancel: (run: Run, reason: string | null) => Effect.Effect<
    Run,
    RunEnded | import("../domain/errors.ts").RunNotFound | import("../domain/errors.ts").InvalidTransition
  >
  /** Cancels what still runs, releases the browser and closes the session. */
  readonly close: (projectId: ProjectId, sessionId: SessionId) => Effect.Effect<SessionWithRuns, SessionNotFound>
  readonly feedback: (run: Run, feedback: unknown) => Effect.Effect<Run>
  /** Take control (src/control/take-control.ts): a control URL under `baseUrl` for a person. */
  readonly takeControl: (run: Run, reason: string | null, baseUrl: string) => Effect.Effect<{ readonly run: Run; readonly url: IssuedUrl }, ControlNotAvailable>
  readonly refreshControlUrl: (run: Run, baseUrl: string) => Effect.Effect<{ readonly run: Run; readonly url: IssuedUrl }, ControlNotAvailable>
  readonly releaseControl: (run: Run, trigger: string) => Effect.Effect<Run, ControlNotAvailable>
}>()("wa/entities/Sessions") {
  static readonly layer = Layer.effect(
    Sessions,
    Effect.gen(function*() {
      const store = yield* RunStore
      const sessionStore = yield* SessionStore
      const config = yield* AppConfig
      const notifier = yield* RunNotifier
      const model = yield* AgentModel
      const workspaces = yield* WorkspaceStore
      const clientFor = yield* SessionEntity.client
      const profiles = yield* ProfileStore
      const skillStore = yield* SkillStore
      const secretStore = yield* SecretStore
      const control = yield* TakeControl
      const plans = yield* Plans
      const sessionSchedules = yield* SessionSchedules
      const runCreate = yield* makeRunCreate
      const reread = (run: Run) => store.getRun(run.id).pipe(Effect.map((found) => found ?? run))
      const models: ReadonlyArray<string> = Option.match(model, { onNone: () => [], onSome: (m) => [m.name] })

      // Execution is fire-and-forget: the persisted Execute message reaches the entity even if
      // the request that started it is gone.
      const execute = (sessionId: SessionId, runId: RunId) => clientFor(sessionId).Execute({ runId }, { discard: true }).pipe(Effect.orDie)
      const cancel = cancelRun(store, notifier, (run) =>
        run.session_id === null ? Effect.void : clientFor(run.session_id).Interrupt({ runId: run.id }, { discard: true }))

      /** Rules the schema cannot express: names of allowed_actions, of the model and of the project's secrets and skills, instructions present. */
      const check = Effect.fn("Sessions.check")(function*(request: DoAnythingRequest, projectId: ProjectId) {
        const unknown = (request.allowed_actions ?? []).filter((name) => !toolNames.includes(name))
        if (unknown.length > 0) return yield* new UnknownNames({ field: "allowed_actions", what: "action", unknown, allowed: [...toolNames] })
        if (request.model !== undefined && request.model !== null && !models.includes(request.model)) {
          return yield* new UnknownNames({ field: "model", what: "model", unknown: [request.model], allowed: [...models] })
        }
        if (!hasInstructions(request)) return yield* new MissingFields({ fields: ["instructions"] })
        const secretNames = request.secrets ?? []
        if (secretNames.length > 0) {
          // A secret the project does not have is a 422 at create, not a run that fails at its start.
          const known = yield* secretStore.names(projectId)
          const missing = secretNames.filter((name) => !known.includes(name))
          if (missing.length > 0) return yield* new UnknownNames({ field: "secrets", what: "secret", unknown: missing, allowed: known })
        }
        const skillNames = request.skills ?? []
        if (skillNames.length > 0) {
          // A skill the project does not have is a 422 (unknown_skills) at create, nothing created.
          const { missing } = yield* skillStore.forRun(projectId, [...new Set(skillNames)])
          if (missing.length > 0) return yield* new UnknownNames({ field: "skills", what: "skill", unknown: missing, allowed: [] })
        }
        yield* scheduleOf(request)
      })

      /** The request's schedule, decoded strictly and checked against the operator's minimum interval. */
      const scheduleOf = Effect.fn("Sessions.scheduleOf")(function*(request: DoAnythingRequest) {
        if (request.schedule === undefined || request.schedule === null) return undefined
        const decoded = decodeSessionSchedule(request.schedule)
        if (decoded._tag === "Failure") {
          return yield* new InvalidField({ field: ["schedule"], detail: `schedule: ${decoded.failure.message}`, msg: decoded.failure.message, type: "value_error" })
        }
        const problem = validateSessionSchedule(decoded.success, config.scheduleMinIntervalSeconds)
        if (problem !== undefined) {
          return yield* new InvalidField({ field: ["schedule", ...problem.path], detail: `schedule.${problem.path.join(".")}: ${problem.message}`, msg: problem.message, type: "value_error" })
        }
        return decoded.success
      })

      /** Gives the run's session the request's schedule, if it carries one (in the caller's transaction). */
      const attachSchedule = (run: Run, request: DoAnythingRequest) =>
        Effect.gen(function*() {
          const schedule = yield* scheduleOf(request).pipe(Effect.orDie)
          if (schedule !== undefined) yield* sessionSchedules.attach(run, request, schedule)
        })

      /** The stored run of a request, with the defaults and limits of the configuration. */
      // A run is stored without `schedule`: the schedule lives in session_schedules, and a run made
      // from a stored request (continue) must not set it again.
      const toNewRun = ({ schedule: _schedule, ...request }: DoAnythingRequest, parentRunId: RunId | null = null): NewRun => ({
        instructions: request.instructions ?? null,
        request: { keep_alive: true, agentmail: true, skills: [], allowed_actions: [], ...request },
        maxSteps: config.maxSteps,
        model: request.model ?? null,
        maxDurationMs: request.max_duration_minutes === undefined || request.max_duration_minutes === null ? null : request.max_duration_minutes * config.runMinuteMs,
        parentRunId
      })

      /** A session about to close by itself: its latest run ended and did not keep the session alive. */
      const closing = (projectId: ProjectId, sessionId: SessionId) =>
        Effect.gen(function*() {
          const session = yield* sessionStore.getSession(projectId, sessionId)
          if (session === undefined || session.status === "closed") return true
          const latest = (yield* sessionStore.runsOfSession(session.id)).at(-1)
          return latest !== undefined && isTerminal(latest.status) && latest.request._tag === "DoAnything" && latest.request.keep_alive === false
        })

      const find = Effect.fn("Sessions.find")(function*(projectId: ProjectId, sessionId: SessionId) {
        const session = yield* sessionStore.getSession(projectId, sessionId)
        if (session === undefined) return yield* new SessionNotFound({ sessionId })
        return { session, runs: yield* sessionStore.runsOfSession(session.id) }
      })

      /**
       * The Session entity executes a session's runs, one Execute each (fire-and-forget, after the
       * commit; the kernel's create dispatches a keyed retry's run when its attempt died first).
       */
      const sessionExecutor = <Created>(sessionOf: (created: Created) => SessionId, runOf: (created: Created) => Run) => ({
        entityType: "Session",
        entityId: sessionOf,
        manyRuns: true,
        dispatch: (created: Created) => execute(sessionOf(created), runOf(created).id)
      })

      const addRunTo = Effect.fn("Sessions.addRunTo")(function*(session: Session, request: DoAnythingRequest, parentRunId: RunId | null = null) {
        // The kernel's create: the retry of a keyed add whose first attempt committed before its
        // process died gets that run (one of this session's), dispatched if it never was; else the
        // rules, the insert (under an Idempotency-Key the claim records the run in its transaction)
        // and the dispatch.
        return yield* runCreate.create({
          projectId: session.project_id,
          existing: (id) => store.getRun(RunId.make(id)).pipe(Effect.map((run) => run?.session_id === session.id ? run : undefined)),
          check: check(request, session.project_id),
          // 402 (billing on) comes from the store: the run is admitted against a credit hold in its insert's transaction.
          admit: false,
          insert: () => sessionStore.addRun(session.id, toNewRun(request, parentRunId)).pipe(Effect.tap((added) => attachSchedule(added, request))),
          idOf: (run) => run.id,
          runOf: (run) => run,
          executor: sessionExecutor((_: Run) => session.id, (run: Run) => run)
        })
      })

      return Sessions.of({
        ...withMethodSpans("Sessions", { cancel }),
        create: Effect.fn("Sessions.create")(function*(key: { readonly projectId: ProjectId; readonly keyId: Principal }, request: DoAnythingRequest, options?: {
          readonly beforeExecute?: (created: { readonly session: Session; readonly run: Run }) => Effect.Effect<void>
        }) {
          const profileId = request.profile_id ?? null
          // The kernel's create: the retry of a keyed create whose first attempt committed before
          // its process died gets that session (its first run dispatched, after `beforeExecute`,
          // if it never was); else the rules, the insert and the dispatch.
          return yield* runCreate.create({
            projectId: key.projectId,
            existing: (id) =>
              Effect.gen(function*() {
                const session = yield* sessionStore.getSession(key.projectId, SessionId.make(id))
                const run = session === undefined ? undefined : (yield* sessionStore.runsOfSession(session.id))[0]
                return session === undefined || run === undefined ? undefined : { session, run }
              }),
            check: Effect.gen(function*() {
              yield* check(request, key.projectId)
              // The session's workspace must be one of the project's: 404 workspace_not_found, nothing created.
              if (request.workspace_id !== undefined && request.workspace_id !== null) yield* workspaces.find(key.projectId, request.workspace_id)
              // The plan's per-key and per-project caps (WA_MAX_CONCURRENT_SESSIONS, WA_MAX_SESSIONS_PER_PROJECT
              // override them); counted in the insert's transaction.
              return yield* plans.capsFor(key.projectId)
            }),
            // 402 (billing on) comes from the store: the run is admitted against a credit hold in its insert's
            // transaction, after the session caps (a create over a cap says so, not 402).
            admit: false,
            // The session, its first run and its schedule (if the request has one) are one transaction. A
            // profile is leased in it (its row lock serialises creates on one profile across nodes); an
            // unknown profile creates nothing.
            insert: (caps) =>
              (profileId === null ? Effect.void : profiles.lease(key.projectId, profileId)).pipe(
                Effect.andThen(sessionStore.createSession({
                  projectId: key.projectId,
                  apiKeyId: key.keyId,
                  profileId,
                  workspaceId: request.workspace_id ?? null,
                  run: toNewRun(request),
                  maxOpenSessions: caps.concurrency,
                  maxProjectSessions: caps.projectSessions
                })),
                Effect.tap((created) => attachSchedule(created.run, request))
              ),
            // The profile's holder may be closing already (its last run ended with keep_alive false
            // and it is saving the profile): wait for that, briefly, instead of answering 409.
            attempts: (attempt) =>
              profileId === null ? attempt : Effect.gen(function*() {
                for (let tries = 0;; tries++) {
                  const outcome = yield* Effect.result(attempt)
                  if (outcome._tag === "Success") return outcome.success
                  const failure = outcome.failure
                  if (failure._tag !== "ProfileInUse" || tries >= 50 || !(yield* closing(key.projectId, failure.sessionId))) {
                    return yield* Effect.fail(failure)
                  }
                  yield* Effect.sleep("100 millis")
                }
              }),
            // Under an Idempotency-Key the claim records the session in the insert's transaction (src/store/keyed-create.ts).
            idOf: (created) => created.session.id,
            runOf: (created) => created.run,
            executor: sessionExecutor((created: SessionWithRun) => created.session.id, (created: SessionWithRun) => created.run),
            ...(options?.beforeExecute === undefined ? {} : { beforeDispatch: options.beforeExecute })
          })
        }),
        find,
        list: Effect.fn("Sessions.list")(function*(projectId: ProjectId, status: string | undefined, limit: number, beforeId: string | undefined) {
          const sessions = yield* sessionStore.listSessions(projectId, status, limit, beforeId)
          return yield* Effect.forEach(sessions, (session) => sessionStore.runsOfSession(session.id).pipe(Effect.map((runs) => ({ session, runs }))))
        }),
        addRun: Effect.fn("Sessions.addRun")(function*(projectId: ProjectId, sessionId: SessionId, request: DoAnythingRequest, options: { readonly observeWithoutInstructions?: boolean } = {}) {
          const { session } = yield* find(projectId, sessionId)
          const observe = options.observeWithoutInstructions === true && !hasInstructions(request)
          return yield* addRunTo(session, observe
            ? { ...request, instructions: OBSERVE_INSTRUCTIONS, allowed_actions: request.allowed_actions ?? OBSERVE_ACTIONS }
            : request)
        }),
        findRun: Effect.fn("Sessions.findRun")(function*(projectId: ProjectId, runId: RunId, sessionId?: SessionId) {
          return yield* store.findRun(projectId, runId, "do_anything", sessionId)
        }),
        continueRun: Effect.fn("Sessions.continueRun")(function*(run: Run, content: string) {
          if (!run.expired || run.request._tag !== "DoAnything" || run.session_id === null) return yield* new RunNotExpired({ runId: run.id })
          const { session } = yield* find(run.project_id, run.session_id)
          return yield* addRunTo(session, {
            ...run.request,
            instructions: `${content}\n\n(Continuing the earlier task: ${run.instructions ?? ""})`
          }, run.id)
        }),
        message: Effect.fn("Sessions.message")(function*(run: Run, content: string) {
          if (isTerminal(run.status)) return yield* new RunEnded({ runId: run.id, status: run.status, operation: "message" })
          yield* store.queueMessage(run.id, content)
        }),
        answer: Effect.fn("Sessions.answer")(function*(run: Run, inputRequestId: InputRequestId, response: unknown) {
          yield* store.answerInputRequest(run.id, inputRequestId, response)
          return (yield* store.getRun(run.id)) ?? run
        }),
        close: Effect.fn("Sessions.close")(function*(projectId: ProjectId, sessionId: SessionId) {
          const { session, runs } = yield* find(projectId, sessionId)
          // Closing by its owner ends the session's schedule first, so no firing adds a run meanwhile.
          yield* sessionSchedules.detachSession(session.id)
          for (const run of runs) {
            if (!isTerminal(run.status)) yield* cancel(run, "session closed").pipe(Effect.ignore)
          }
          // A session holding a profile saves the profile's state before it is closed (closing
          // frees the profile for the next session): wait for the entity, within limits.
          yield* (session.profile_id === null
            ? clientFor(session.id).Close(undefined, { discard: true })
            : clientFor(session.id).Close(undefined).pipe(Effect.timeout("20 seconds"))).pipe(Effect.ignore)
          yield* sessionStore.setSessionStatus(session.id, "closed")
          return yield* find(projectId, sessionId)
        }),
        takeControl: Effect.fn("Sessions.takeControl")(function*(run: Run, reason: string | null, baseUrl: string) {
          const url = yield* control.issue(run, reason, baseUrl)
          return { run: yield* reread(run), url }
        }),
        refreshControlUrl: Effect.fn("Sessions.refreshControlUrl")(function*(run: Run, baseUrl: string) {
          const url = yield* control.refresh(run, baseUrl)
          return { run: yield* reread(run), url }
        }),
        releaseControl: Effect.fn("Sessions.releaseControl")(function*(run: Run, trigger: string) {
          return yield* control.release(run.id, trigger)
        }),
        feedback: Effect.fn("Sessions.feedback")(function*(run: Run, feedback: unknown) {
          yield* store.setFeedback(run.id, feedback)
          return (yield* store.getRun(run.id)) ?? run
        })
      })
    })
  ).pipe(Layer.provide(Layer.mergeAll(ProfileStore.layer, Plans.layer, SkillStore.layer, SecretStore.layer, Budget.layer)))
}
