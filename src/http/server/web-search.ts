/** Handlers of WebSearch runs (both conventions), over the Search service. */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig } from "../../config/config.ts"
import { Search, type Started } from "../../search/service.ts"
import { RunEvents } from "../../runs/events.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { parseLastEventId, runEventStream } from "../sse.ts"
import { webSearchRunView } from "../views/web-search-view.ts"
import type { RunId } from "../../domain/run.ts"

const handlersFor = (group: "web_search" | "web_search_flat") =>
  HttpApiBuilder.group(
    WebAgentApi,
    group,
    Effect.fn(function*(handlers) {
      const search = yield* Search
      const config = yield* AppConfig
      const context = yield* Effect.context<RunEvents>()
      const flat = group === "web_search_flat"
      // Convention B (/api/v1) names a run's `done` `succeeded`: in views, events and 409 envelopes.
      const convention = flat ? "B" as const : "A" as const
      const find = (runId: RunId) => CurrentKey.use(({ projectId }) => httpErrors(search.find(projectId, runId), convention))
      /** Ended within the wait: 200 with the result; otherwise 202 and the client polls. */
      const answer = ({ run, ended }: Started) =>
        ended ? webSearchRunView(run, flat) : HttpServerResponse.jsonUnsafe(webSearchRunView(run, flat), { status: 202 })

      return handlers
        .handle("createRun", ({ payload }) =>
          Effect.gen(function*() {
            const { projectId } = yield* CurrentKey
            return answer(yield* httpErrors(search.create(projectId, { _tag: "WebSearch", ...payload }), convention))
          }))
        .handle("getRun", ({ params }) => find(params.rid).pipe(Effect.map((run) => webSearchRunView(run, flat))))
        .handle("runEvents", ({ params, headers }) =>
          find(params.rid).pipe(Effect.flatMap((run) =>
            runEventStream(run.id, parseLastEventId(headers["last-event-id"]), config, convention).pipe(Effect.provide(context))
          )))
        .handle("cancel", ({ params, payload }) =>
          find(params.rid).pipe(
            Effect.flatMap((run) => httpErrors(search.cancel(run, payload.reason ?? null), convention)),
            Effect.map((run) => webSearchRunView(run, flat))
          ))
        .handle("refine", ({ params, payload }) =>
          find(params.rid).pipe(
            Effect.flatMap((run) => httpErrors(search.refine(run, payload), convention)),
            Effect.map(answer)
          ))
        .handle("followup", ({ params, payload }) =>
          find(params.rid).pipe(
            Effect.flatMap((run) => httpErrors(search.followup(run, { queries: payload.queries, text: payload.text ?? null, wait: payload.wait }), convention)),
            Effect.map(answer)
          ))
    })
  )

export const WebSearchHandlers = handlersFor("web_search")
export const WebSearchFlatHandlers = handlersFor("web_search_flat")
