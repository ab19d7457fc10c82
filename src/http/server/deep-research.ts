/** Handlers of DeepResearch runs (Convention A, Convention B and the standalone path), over the Research service. */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig } from "../../config/config.ts"
import { Research, type ResearchRun } from "../../research/service.ts"
import { RunEvents } from "../../runs/events.ts"
import { validateCallbackUrl } from "../../webhooks/callback-url.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { DEFAULT_LIMIT, decodeCursor, toPage } from "../pagination.ts"
import { parseLastEventId, runEventStream } from "../sse.ts"
import { researchRunView } from "../views/research-view.ts"
import type { RunId } from "../../domain/run.ts"

type Group = "deep_research" | "deep_research_flat" | "deep_research_standalone"

const handlersFor = (group: Group) =>
  HttpApiBuilder.group(
    WebAgentApi,
    group,
    Effect.fn(function*(handlers) {
      const research = yield* Research
      const config = yield* AppConfig
      const context = yield* Effect.context<RunEvents>()
      const flat = group === "deep_research_flat"
      // Convention B (/api/v1) names a run's `done` `succeeded`: in views, events, 409 envelopes and
      // the callback of a run it creates (the request's `convention`).
      const convention = flat ? "B" as const : "A" as const

      const find = (runId: RunId) => CurrentKey.use(({ projectId }) => httpErrors(research.find(projectId, runId), convention))
      const render = (details: ResearchRun) =>
        researchRunView(details.run, details.request, { flat, outline: details.outline, pendingRequestId: details.pendingRequestId })
      /** A run just started, as create answers it (202). */
      const simple202 = (run: ResearchRun["run"]) =>
        research.details(run).pipe(Effect.map((details) => HttpServerResponse.jsonUnsafe(render(details), { status: 202 })))

      return handlers
        .handle("createRun", ({ payload }) =>
          Effect.gen(function*() {
            yield* httpErrors(validateCallbackUrl(payload.callback_url, config.allowPrivateNetworks), convention)
            const { projectId } = yield* CurrentKey
            const request = { _tag: "DeepResearch" as const, ...payload, convention }
            const run = yield* httpErrors(research.create(projectId, request), convention)
            return HttpServerResponse.jsonUnsafe(researchRunView(run, request, { flat }), { status: 202 })
          }))
        .handle("listRuns", ({ query }) =>
          Effect.gen(function*() {
            const { projectId } = yield* CurrentKey
            const limit = query.limit ?? DEFAULT_LIMIT
            const before = yield* decodeCursor(query.cursor)
            // Convention B shows `succeeded` for the stored `done`.
            const status = flat && query.status === "succeeded" ? "done" : query.status
            const page = toPage(yield* research.list(projectId, status, limit + 1, before), limit)
            const runs = page.items.flatMap((run) => run.request._tag === "DeepResearch" ? [{ run, request: run.request }] : [])
            // Each convention's list holds its own names (the schema of each says which).
            return flat
              ? { items: runs.map(({ run, request }) => researchRunView(run, request, { flat: true })), next_cursor: page.next_cursor }
              : { items: runs.map(({ run, request }) => researchRunView(run, request, { flat: false })), next_cursor: page.next_cursor }
          }))
        .handle("getRun", ({ params }) => find(params.rid).pipe(Effect.flatMap(research.details), Effect.map(render)))
        .handle("runEvents", ({ params, headers }) =>
          find(params.rid).pipe(Effect.flatMap((run) =>
            runEventStream(run.id, parseLastEventId(headers["last-event-id"]), config, convention).pipe(Effect.provide(context))
          )))
        .handle("intervene", ({ params, payload }) =>
          find(params.rid).pipe(
            Effect.flatMap((run) => httpErrors(research.answer(run, payload.request_id, payload.response), convention)),
            Effect.map(render)
          ))
        .handle("cancel", ({ params, payload }) =>
          find(params.rid).pipe(
            Effect.flatMap((run) => httpErrors(research.cancel(run, payload.reason ?? null), convention)),
            Effect.map(render)
          ))
        .handle("feedback", ({ params, payload }) =>
          find(params.rid).pipe(
            Effect.flatMap((run) => httpErrors(research.feedback(run, payload), convention)),
            Effect.map(render)
          ))
        .handle("followup", ({ params, payload }) =>
          find(params.rid).pipe(
            Effect.flatMap((run) => httpErrors(research.followup(run, payload.text), convention)),
            Effect.flatMap(simple202)
          ))
        .handle("refine", ({ params, payload }) =>
          find(params.rid).pipe(
            Effect.flatMap((run) => httpErrors(research.refine(run, payload.text), convention)),
            Effect.flatMap(simple202)
          ))
        .handle("listArtifacts", ({ params, query }) =>
          Effect.gen(function*() {
            const limit = query.limit ?? DEFAULT_LIMIT
            const before = yield* decodeCursor(query.cursor)
            const run = yield* find(params.rid)
            return toPage(yield* research.artifacts(run, { limit: limit + 1, before }), limit)
          }).pipe(
            Effect.map((page) => ({
              next_cursor: page.next_cursor,
              items: page.items.map((row) => ({
                id: row.id,
                run_id: row.run_id,
                name: row.name,
                content_type: row.content_type,
                size_bytes: row.size_bytes,
                created_at: row.created_at.toISOString()
              }))
            }))
          ))
        .handle("getArtifact", ({ params }) =>
          find(params.rid).pipe(
            Effect.flatMap((run) => httpErrors(research.artifact(run, params.aid), convention)),
            Effect.map((artifact) => HttpServerResponse.text(artifact.content, { contentType: artifact.contentType }))
          ))
    })
  )

export const DeepResearchHandlers = handlersFor("deep_research")
export const DeepResearchFlatHandlers = handlersFor("deep_research_flat")
export const DeepResearchStandaloneHandlers = handlersFor("deep_research_standalone")
