/**
 * Handlers of DoAnything (both conventions). Writes go through the RunStore (state change and
 * event in one transaction); execution is handed to the Session entity, which owns the browser.
 */
import { Context, Effect, Layer } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { toolNames } from "../../agent/tools.ts"
import { AppConfig } from "../../config/config.ts"
import { badRequest, conflict, notFound, TooManyRequests, validationError } from "../errors.ts"
import { cancellable, isTerminal } from "../../domain/run-state.ts"
import { flatRunView, runView, sessionView } from "../views/run-view.ts"
import { SessionEntity } from "../../entities/session.ts"
import { RunEventBus } from "../../events/run-event-bus.ts"
import { type NewRun, type RunRow, RunStore, type SessionRow } from "../../store/runs.ts"
import { ScreenshotStore } from "../../store/screenshots.ts"
import { validateCallbackUrl } from "../../webhooks/callback-url.ts"
import { RunNotifier } from "../../webhooks/run-notifier.ts"
import { WebAgentApi } from "../api/api.ts"
import type { CreateRunRequest } from "../api/do-anything.ts"
import { CurrentKey } from "../api/security.ts"
import { DEFAULT_LIMIT, decodeCursor, toPage } from "../pagination.ts"
import { parseLastEventId, runEventStream } from "../sse.ts"


/** Rules the schema cannot express: names of allowed_actions, instructions present. */
const checkRunRequest = (payload: CreateRunRequest, needsInstructions: boolean) =>
  Effect.gen(function*() {
    const unknown = (payload.allowed_actions ?? []).filter((name) => !toolNames.includes(name))
    if (unknown.length > 0) {
      return yield* validationError(`unknown action(s): ${unknown.join(", ")}; valid: ${toolNames.join(", ")}`, unknown.map((name) => ({
        loc: ["body", "allowed_actions"],
        msg: `unknown action ${name}; valid actions: ${toolNames.join(", ")}`,
        type: "enum"
      })))
    }
    if (needsInstructions && (payload.instructions === undefined || payload.instructions === null || payload.instructions.trim() === "")) {
      return yield* validationError("instructions are required", [{ loc: ["body", "instructions"], msg: "instructions are required", type: "missing" }])
    }
  })

/** The stored run of a request, with the defaults and limits of the configuration. */
const toNewRun = (
  config: Pick<AppConfig["Service"], "maxSteps" | "runMinuteMs">,
  payload: CreateRunRequest,
  overrides: Partial<NewRun> = {}
): NewRun => ({
  instructions: payload.instructions ?? null,
  request: { keep_alive: true, agentmail: true, skills: [], allowed_actions: [], ...payload },
  maxSteps: config.maxSteps,
  model: payload.model ?? null,
  maxDurationMs: payload.max_duration_minutes === undefined || payload.max_duration_minutes === null ? null : payload.max_duration_minutes * config.runMinuteMs,
  ...overrides
})

export const DoAnythingHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "do_anything",
  Effect.fn(function*(handlers) {
    const ops = yield* DoAnythingOps
    const { allowPrivateNetworks } = yield* AppConfig
    return handlers
      .handle("createSession", ({ payload }) =>
        Effect.gen(function*() {
          yield* checkRunRequest(payload, true)
          yield* validateCallbackUrl(payload.callback_url, allowPrivateNetworks)
          const { session, run } = yield* ops.startSession(payload)
          return sessionView(session, [run])
        }))
      .handle("listSessions", ({ query }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const limit = query.limit ?? DEFAULT_LIMIT
          const before = yield* decodeCursor(query.cursor)
          const rows = yield* ops.store.listSessions(projectId, query.status, limit + 1, before)
          const page = toPage(rows, limit)
          const items = yield* Effect.forEach(page.items, (session) =>
            ops.store.runsOfSession(session.id).pipe(Effect.map((runs) => sessionView(session, runs))))
          return { items, next_cursor: page.next_cursor }
        }))
      .handle("getSession", ({ params }) =>
        ops.session(params.sid).pipe(Effect.flatMap((session) =>
          ops.store.runsOfSession(session.id).pipe(Effect.map((runs) => sessionView(session, runs)))
        )))
      .handle("closeSession", ({ params }) =>
        Effect.gen(function*() {
          const session = yield* ops.session(params.sid)
          for (const run of yield* ops.store.runsOfSession(session.id)) {
            if (!isTerminal(run.status)) yield* ops.cancel(run, "session closed").pipe(Effect.ignore)
          }
          yield* ops.closeSession(session.id)
          const closed = yield* ops.session(params.sid)
          return sessionView(closed, yield* ops.store.runsOfSession(session.id))
        }))
      .handle("createRun", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* checkRunRequest(payload, true)
          yield* validateCallbackUrl(payload.callback_url, allowPrivateNetworks)
          const session = yield* ops.session(params.sid)
          const run = yield* ops.addRun(session, ops.newRun(payload))
          return runView(run)
        }))
      .handle("getRun", ({ params }) => ops.run(params.sid, params.rid).pipe(Effect.map(runView)))
      .handle("runEvents", ({ params, headers }) =>
        ops.run(params.sid, params.rid).pipe(Effect.flatMap((run) => ops.events(run, headers["last-event-id"]))))
      .handle("message", ({ params, payload }) =>
        Effect.gen(function*() {
          const run = yield* ops.run(params.sid, params.rid)
          if (isTerminal(run.status)) return yield* conflict(`the run is ${run.status}; messages go to a follow-up run`)
          yield* ops.store.queueMessage(run.id, payload.content)
          return { queued: true }
        }))
      .handle("intervene", ({ params, payload }) =>
        Effect.gen(function*() {
          const run = yield* ops.run(params.sid, params.rid)
          const kind = payload.kind ?? "answer_input_request"
          if (kind !== "answer_input_request") {
            return yield* validationError(`intervene kind ${kind} is not available yet; only answer_input_request is`, [
              { loc: ["body", "kind"], msg: "only answer_input_request is supported", type: "not_supported" }
            ])
          }
          const missing = [
            ...(payload.input_request_id === undefined ? ["input_request_id"] : []),
            ...(payload.response === undefined ? ["response"] : [])
          ]
          if (missing.length > 0) {
            return yield* validationError(`${missing.join(" and ")} required`, missing.map((field) => ({ loc: ["body", field], msg: "required", type: "missing" })))
          }
          yield* ops.store.answerInputRequest(run.id, payload.input_request_id!, payload.response)
          return runView((yield* ops.store.getRun(run.id))!)
        }))
      .handle("cancel", ({ params, payload }) =>
        ops.run(params.sid, params.rid).pipe(
          Effect.flatMap((run) => ops.cancel(run, payload.reason ?? null)),
          Effect.map(runView)
        ))
      .handle("continue", ({ params, payload }) =>
        Effect.gen(function*() {
          const run = yield* ops.run(params.sid, params.rid)
          if (!run.expired) return yield* conflict("only a run that ran out of steps (expired) can be continued; add a follow-up run instead")
          const session = yield* ops.session(params.sid)
          const request = run.request as CreateRunRequest
          const next = yield* ops.addRun(session, ops.newRun({
            ...request,
            instructions: `${payload.content}\n\n(Continuing the earlier task: ${run.instructions ?? ""})`
          }, { parentRunId: run.id }))
          return runView(next)
        }))
      .handle("feedback", ({ params, payload }) =>
        Effect.gen(function*() {
          const run = yield* ops.run(params.sid, params.rid)
          yield* ops.store.setFeedback(run.id, { ...payload, created_at: new Date().toISOString() })
          return runView((yield* ops.store.getRun(run.id))!)
        }))
  })
)

export const DoAnythingFlatHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "do_anything_flat",
  Effect.fn(function*(handlers) {
    const ops = yield* DoAnythingOps
    const { allowPrivateNetworks } = yield* AppConfig
    return handlers
      .handle("createRun", ({ payload }) =>
        Effect.gen(function*() {
          yield* validateCallbackUrl(payload.callback_url, allowPrivateNetworks)
          if (payload.session_id !== undefined && payload.session_id !== null) {
            yield* checkRunRequest(payload, true)
            const session = yield* ops.session(payload.session_id)
            return flatRunView(yield* ops.addRun(session, ops.newRun(payload)))
          }
          yield* checkRunRequest(payload, true)
          const { run } = yield* ops.startSession(payload)
          return flatRunView(run)
        }))
      .handle("getRun", ({ params }) => ops.runById(params.rid).pipe(Effect.map(flatRunView)))
      .handle("runEvents", ({ params, headers }) =>
        ops.runById(params.rid).pipe(Effect.flatMap((run) => ops.events(run, headers["last-event-id"]))))
  })
)

export const MediaHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "media",
  Effect.fn(function*(handlers) {
    const screenshots = yield* ScreenshotStore
    return handlers.handle("screenshot", ({ params, query }) =>
      Effect.gen(function*() {
        const result = yield* screenshots.read(params.id, query.expires, query.signature)
        if (result === "missing") return yield* notFound("screenshot_not_found", "no such screenshot")
        if (result === "invalid") return yield* badRequest("the signature does not match")
        if (result === "expired") return yield* badRequest("the URL has expired; read the run's events again for a fresh one")
        return HttpServerResponse.uint8Array(result, { contentType: "image/jpeg", headers: { "cache-control": "private, max-age=900" } })
      }))
  })
)

/** The operations both conventions share, bound to the current project. */
export class DoAnythingOps extends Context.Service<DoAnythingOps, {
  readonly store: RunStore["Service"]
  readonly session: (sessionId: string) => Effect.Effect<SessionRow, ReturnType<typeof notFound>, CurrentKey>
  readonly run: (sessionId: string, runId: string) => Effect.Effect<RunRow, ReturnType<typeof notFound>, CurrentKey>
  readonly runById: (runId: string) => Effect.Effect<RunRow, ReturnType<typeof notFound>, CurrentKey>
  readonly startSession: (payload: CreateRunRequest) => Effect.Effect<{ session: SessionRow; run: RunRow }, TooManyRequests, CurrentKey>
  readonly addRun: (session: SessionRow, run: NewRun) => Effect.Effect<RunRow, ReturnType<typeof conflict>>
  readonly newRun: (payload: CreateRunRequest, overrides?: Partial<NewRun>) => NewRun
  readonly cancel: (run: RunRow, reason: string | null) => Effect.Effect<RunRow, ReturnType<typeof conflict>>
  readonly closeSession: (sessionId: string) => Effect.Effect<void>
  readonly events: (run: RunRow, lastEventId: string | undefined) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>
}>()("wa/http/DoAnythingOps") {
  static readonly layer = Layer.effect(
    DoAnythingOps,
    Effect.gen(function*() {
      const store = yield* RunStore
      const config = yield* AppConfig
      const notifier = yield* RunNotifier
      const clientFor = yield* SessionEntity.client
      const context = yield* Effect.context<RunEventBus | RunStore>()

      const session = (sessionId: string) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const row = yield* store.getSession(projectId, sessionId)
          if (row === undefined) return yield* notFound("session_not_found", `no session ${sessionId} in this project`)
          return row
        })
      const runById = (runId: string) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const row = yield* store.getRun(runId)
          if (row === undefined || row.project_id !== projectId || row.kind !== "do_anything") {
            return yield* notFound("run_not_found", `no run ${runId} in this project`)
          }
          return row
        })
      const run = (sessionId: string, runId: string) =>
        runById(runId).pipe(Effect.flatMap((row) =>
          row.session_id === sessionId ? Effect.succeed(row) : Effect.fail(notFound("run_not_found", `no run ${runId} in session ${sessionId}`))
        ))
      // Execution is fire-and-forget: the persisted Execute message reaches the entity even if
      // this request is gone.
      const execute = (sessionId: string, runId: string) =>
        clientFor(sessionId).Execute({ runId }, { discard: true }).pipe(Effect.orDie)

      const startSession = (payload: CreateRunRequest) =>
        Effect.gen(function*() {
          const key = yield* CurrentKey
          const created = yield* store.createSession({
            projectId: key.projectId,
            apiKeyId: key.keyId,
            profileId: payload.profile_id ?? null,
            workspaceId: payload.workspace_id ?? null,
            run: toNewRun(config, payload),
            maxOpenSessions: config.maxConcurrentSessions
          }).pipe(Effect.catchTag("SessionCapReached", ({ open, limit }) =>
            Effect.fail(new TooManyRequests({
              code: "too_many_concurrent_sessions",
              detail: `this key already holds ${open} open sessions (limit ${limit}); close one or wait for one to end`,
              extra: { limit, active: open, retry_after_seconds: 5 }
            }))
          ))
          yield* execute(created.session.id, created.run.id)
          return created
        })

      const addRun = (sessionRow: SessionRow, newRun: NewRun) =>
        Effect.gen(function*() {
          const created = yield* store.addRun(sessionRow.id, newRun)
          yield* execute(sessionRow.id, created.id)
          return created
        })

      const cancel = (row: RunRow, reason: string | null) =>
        Effect.gen(function*() {
          if (!cancellable.includes(row.status)) return yield* conflict(`the run is ${row.status}; only a non-terminal run can be canceled`, { status: row.status })
          const canceled = yield* store.transition(row.id, "canceled", {
            terminalReason: "canceled",
            data: { reason }
          })
          if (row.session_id !== null) yield* clientFor(row.session_id).Interrupt({ runId: row.id }, { discard: true }).pipe(Effect.ignore)
          yield* notifier.terminal(row.id)
          return canceled
        })

      return DoAnythingOps.of({
        store,
        session,
        run,
        runById,
        startSession,
        addRun,
        newRun: (payload, overrides) => toNewRun(config, payload, overrides),
        cancel,
        closeSession: (sessionId) =>
          clientFor(sessionId).Close(undefined, { discard: true }).pipe(
            Effect.ignore,
            Effect.andThen(store.setSessionStatus(sessionId, "closed"))
          ),
        events: (row, lastEventId) =>
          runEventStream(row.id, parseLastEventId(lastEventId), config).pipe(Effect.provide(context))
      })
    })
  )
}
