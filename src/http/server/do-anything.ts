/**
 * Handlers of DoAnything (both conventions): decode, call one method of the Sessions service
 * (src/do-anything/service.ts), map its domain errors, render the wire view.
 */
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig } from "../../config/config.ts"
import { Sessions } from "../../do-anything/service.ts"
import { RunEvents } from "../../runs/events.ts"
import { Screenshots } from "../../runs/screenshots.ts"
import { validateCallbackUrl } from "../../webhooks/callback-url.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { notFound, validationError } from "../errors.ts"
import { DEFAULT_LIMIT, decodeCursor, toPage } from "../pagination.ts"
import { parseLastEventId, runEventStream } from "../sse.ts"
import { flatRunView, runView, sessionView } from "../views/run-view.ts"
import { mailDomainOf } from "../../mail/inbound/inbox-store.ts"
import { withRecording } from "../views/recording-view.ts"
import { Recordings } from "../../recordings/service.ts"
import type { RunId, SessionId } from "../../domain/run.ts"
import type { Convention } from "../../domain/run-state.ts"
import { SafetyPolicies } from "../../safety/service.ts"
import { checkCreateSafety } from "./safety.ts"

/**
 * The base of URLs handed to people (control pages): WA_PUBLIC_URL, else the scheme and host the
 * caller reached this node at (X-Forwarded-Proto / X-Forwarded-Host from a proxy, else Host).
 */
export const publicBaseUrl = Effect.gen(function*() {
  const { publicUrl } = yield* AppConfig
  if (publicUrl._tag === "Some") return publicUrl.value.replace(/\/$/, "")
  const request = yield* HttpServerRequest.HttpServerRequest
  const first = (value: string | undefined) => value?.split(",")[0]?.trim()
  const proto = first(request.headers["x-forwarded-proto"]) ?? "http"
  const host = first(request.headers["x-forwarded-host"]) ?? request.headers["host"] ?? "localhost"
  return `${proto === "https" ? "https" : "http"}://${host}`
})

/** The stored request of a create: its `convention` is the route's (it decides the names of the run's callback). */
const tagged = <P extends object>(payload: P, convention: Convention) => ({ _tag: "DoAnything" as const, ...payload, convention })

/** The SSE stream of a run's events, with statuses named as the route's convention does. */
const eventsOf = Effect.fnUntraced(function*(runId: RunId, lastEventId: string | undefined, convention: Convention) {
  const config = yield* AppConfig
  const context = yield* Effect.context<RunEvents>()
  return yield* runEventStream(runId, parseLastEventId(lastEventId), config, convention).pipe(Effect.provide(context))
})

export const DoAnythingHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "do_anything",
  Effect.fn(function*(handlers) {
    const sessions = yield* Sessions
    const safety = yield* SafetyPolicies
    const { allowPrivateNetworks } = yield* AppConfig
    const mailDomain = mailDomainOf(yield* AppConfig)
    const context = yield* Effect.context<AppConfig | RunEvents>()
    const run = (sid: SessionId, rid: RunId) => CurrentKey.use(({ projectId }) => httpErrors(sessions.findRun(projectId, rid, sid)))
    const recordings = yield* Effect.context<Recordings>()
    return handlers
      .handle("createSession", ({ payload }) =>
        Effect.gen(function*() {
          yield* httpErrors(validateCallbackUrl(payload.callback_url, allowPrivateNetworks))
          const key = yield* CurrentKey
          yield* checkCreateSafety(safety, key.projectId, payload)
          // With session_id: a follow-up run on that session (as Convention B's create; without
          // instructions it observes the page), answered with the session; 404 / 409 as there.
          if (payload.session_id !== undefined && payload.session_id !== null) {
            yield* httpErrors(sessions.addRun(key.projectId, payload.session_id, tagged(payload, "A"), { observeWithoutInstructions: true }))
            const { session, runs } = yield* httpErrors(sessions.find(key.projectId, payload.session_id))
            return sessionView(session, runs, mailDomain)
          }
          const { session, run } = yield* httpErrors(sessions.create(key, tagged(payload, "A")))
          return sessionView(session, [run], mailDomain)
        }))
      .handle("listSessions", ({ query }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const limit = query.limit ?? DEFAULT_LIMIT
          const before = yield* decodeCursor(query.cursor)
          const rows = yield* sessions.list(projectId, query.status, limit + 1, before)
          const page = toPage(rows.map((row) => ({ ...row, id: row.session.id })), limit)
          return { items: page.items.map(({ session, runs }) => sessionView(session, runs, mailDomain)), next_cursor: page.next_cursor }
        }))
      .handle("getSession", ({ params }) =>
        CurrentKey.use(({ projectId }) => httpErrors(sessions.find(projectId, params.sid))).pipe(
          Effect.map(({ session, runs }) => sessionView(session, runs, mailDomain))
        ))
      .handle("closeSession", ({ params }) =>
        CurrentKey.use(({ projectId }) => httpErrors(sessions.close(projectId, params.sid))).pipe(
          Effect.map(({ session, runs }) => sessionView(session, runs, mailDomain))
        ))
      .handle("createRun", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* httpErrors(validateCallbackUrl(payload.callback_url, allowPrivateNetworks))
          const { projectId } = yield* CurrentKey
          yield* checkCreateSafety(safety, projectId, payload)
          return runView(yield* httpErrors(sessions.addRun(projectId, params.sid, tagged(payload, "A"))))
        }))
      .handle("getRun", ({ params }) => run(params.sid, params.rid).pipe(Effect.flatMap(withRecording(runView)), Effect.provide(recordings)))
      .handle("runEvents", ({ params, headers }) =>
        run(params.sid, params.rid).pipe(Effect.flatMap((found) => eventsOf(found.id, headers["last-event-id"], "A")), Effect.provide(context)))
      .handle("message", ({ params, payload }) =>
        run(params.sid, params.rid).pipe(
          Effect.flatMap((found) => httpErrors(sessions.message(found, payload.content))),
          Effect.as({ queued: true })
        ))
      .handle("intervene", ({ params, payload }) =>
        Effect.gen(function*() {
          const found = yield* run(params.sid, params.rid)
          const kind = payload.kind ?? "answer_input_request"
          if (kind === "take_control" || kind === "refresh_control_url") {
            const base = yield* publicBaseUrl
            const { run: updated, url } = yield* httpErrors(
              kind === "take_control" ? sessions.takeControl(found, payload.reason ?? null, base) : sessions.refreshControlUrl(found, base)
            )
            return { ...runView(updated), ...url }
          }
          if (kind === "release_control") return runView(yield* httpErrors(sessions.releaseControl(found, payload.trigger ?? "api")))
          const missing = [
            ...(payload.input_request_id === undefined ? ["input_request_id"] : []),
            ...(payload.response === undefined ? ["response"] : [])
          ]
          if (missing.length > 0) {
            return yield* validationError(`${missing.join(" and ")} required`, missing.map((field) => ({ loc: ["body", field], msg: "required", type: "missing" })))
          }
          return runView(yield* httpErrors(sessions.answer(found, payload.input_request_id!, payload.response)))
        }))
      .handle("cancel", ({ params, payload }) =>
        run(params.sid, params.rid).pipe(
          Effect.flatMap((found) => httpErrors(sessions.cancel(found, payload.reason ?? null))),
          Effect.map(runView)
        ))
      .handle("continue", ({ params, payload }) =>
        run(params.sid, params.rid).pipe(
          Effect.tap((found) => checkCreateSafety(safety, found.project_id, payload)),
          Effect.flatMap((found) => httpErrors(sessions.continueRun(found, payload.content))),
          Effect.map(runView)
        ))
      .handle("feedback", ({ params, payload }) =>
        run(params.sid, params.rid).pipe(
          Effect.flatMap((found) => sessions.feedback(found, { ...payload, created_at: new Date().toISOString() })),
          Effect.map(runView)
        ))
  })
)

export const DoAnythingFlatHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "do_anything_flat",
  Effect.fn(function*(handlers) {
    const sessions = yield* Sessions
    const safety = yield* SafetyPolicies
    const { allowPrivateNetworks } = yield* AppConfig
    const context = yield* Effect.context<AppConfig | RunEvents>()
    const run = (rid: RunId) => CurrentKey.use(({ projectId }) => httpErrors(sessions.findRun(projectId, rid), "B"))
    const recordings = yield* Effect.context<Recordings>()
    return handlers
      .handle("createRun", ({ payload }) =>
        Effect.gen(function*() {
          yield* httpErrors(validateCallbackUrl(payload.callback_url, allowPrivateNetworks), "B")
          const key = yield* CurrentKey
          yield* checkCreateSafety(safety, key.projectId, payload)
          // With session_id: a follow-up run on that session; without instructions it observes the page.
          if (payload.session_id !== undefined && payload.session_id !== null) {
            return flatRunView(
              yield* httpErrors(sessions.addRun(key.projectId, payload.session_id, tagged(payload, "B"), { observeWithoutInstructions: true }), "B")
            )
          }
          const { run } = yield* httpErrors(sessions.create(key, tagged(payload, "B")), "B")
          return flatRunView(run)
        }))
      .handle("getRun", ({ params }) => run(params.rid).pipe(Effect.flatMap(withRecording(flatRunView)), Effect.provide(recordings)))
      .handle("runEvents", ({ params, headers }) =>
        run(params.rid).pipe(Effect.flatMap((found) => eventsOf(found.id, headers["last-event-id"], "B")), Effect.provide(context)))
  })
)

export const MediaHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "media",
  Effect.fn(function*(handlers) {
    const screenshots = yield* Screenshots
    return handlers.handle("screenshot", ({ params, query }) =>
      Effect.gen(function*() {
        // 403 like the other signed URLs (workspace files, recordings): the URL grants nothing (any more).
        const result = yield* httpErrors(screenshots.read(params.id, query.expires, query.signature))
        if (result === undefined) return yield* notFound("screenshot_not_found", "no such screenshot")
        return HttpServerResponse.uint8Array(result, { contentType: "image/jpeg", headers: { "cache-control": "private, max-age=900" } })
      }))
  })
)

