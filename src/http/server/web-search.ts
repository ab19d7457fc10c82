/** Handlers of WebSearch runs (both conventions). */
import { Effect, Option } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { notFound, validationError } from "../errors.ts"
import { flatStatus } from "../../domain/run-state.ts"
import { RunEventBus } from "../../events/run-event-bus.ts"
import type { WebSearchRequest, WebSearchResult } from "../../search/schema.ts"
import { WebSearchRuns } from "../../search/web-search-runs.ts"
import { type RunRow, RunStore } from "../../store/runs.ts"
import { AppConfig } from "../../config/config.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { parseLastEventId, runEventStream } from "../sse.ts"

const iso = (date: Date | null) => date === null ? null : date.toISOString()

const view = (run: RunRow, flat: boolean) => ({
  id: run.id,
  run_id: run.id,
  session_id: null,
  kind: "web_search" as const,
  status: flat ? flatStatus(run.status) : run.status,
  terminal_reason: run.status === "done" ? "done" : run.terminal_reason,
  error: run.error_code === null ? null : { code: run.error_code, detail: run.error_detail ?? "" },
  results: (run.output ?? null) as WebSearchResult | null,
  created_at: run.created_at.toISOString(),
  started_at: iso(run.started_at),
  finished_at: iso(run.finished_at)
})

const handlersFor = (group: "web_search" | "web_search_flat") =>
  HttpApiBuilder.group(
    WebAgentApi,
    group,
    Effect.fn(function*(handlers) {
      const runs = yield* WebSearchRuns
      const store = yield* RunStore
      const config = yield* AppConfig
      const context = yield* Effect.context<RunEventBus | RunStore>()
      const flat = group === "web_search_flat"

      const find = (runId: string) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const run = yield* store.getRun(runId)
          if (run === undefined || run.project_id !== projectId || run.kind !== "web_search") {
            return yield* notFound("run_not_found", `no web search run ${runId} in this project`)
          }
          return run
        })

      return handlers
        .handle("createRun", ({ payload }) =>
          Effect.gen(function*() {
            const request: WebSearchRequest = payload
            // Unknown engines are refused before anything is created.
            const unknown = (request.engines ?? []).filter((name) => !runs.engines.includes(name))
            if (unknown.length > 0) {
              return yield* validationError(`unknown engine(s): ${unknown.join(", ")}; valid: ${runs.engines.join(", ")}`, unknown.map((name) => ({
                loc: ["body", "engines"],
                msg: `unknown engine ${name}; valid engines: ${runs.engines.join(", ")}`,
                type: "enum"
              })))
            }
            const { projectId } = yield* CurrentKey
            const started = yield* runs.start(projectId, request)
            if (request.wait) {
              const finished = yield* started.finished.pipe(Effect.timeoutOption(`${config.webSearchWaitSeconds} seconds`))
              if (Option.isSome(finished)) return view((yield* store.getRun(started.run.id))!, flat)
            }
            const current = (yield* store.getRun(started.run.id))!
            return HttpServerResponse.jsonUnsafe(view(current, flat), { status: 202 })
          }))
        .handle("getRun", ({ params }) => find(params.rid).pipe(Effect.map((run) => view(run, flat))))
        .handle("runEvents", ({ params, headers }) =>
          find(params.rid).pipe(Effect.flatMap((run) =>
            runEventStream(run.id, parseLastEventId(headers["last-event-id"]), config).pipe(
              Effect.provide(context)
            )
          )))
    })
  )

export const WebSearchHandlers = handlersFor("web_search")
export const WebSearchFlatHandlers = handlersFor("web_search_flat")
