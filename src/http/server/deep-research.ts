/** Handlers of DeepResearch runs (Convention A, Convention B and the standalone path). */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig } from "../../config/config.ts"
import { conflict, notFound, validationError } from "../errors.ts"
import { cancellable, isTerminal } from "../../domain/run-state.ts"
import { ResearchEntity } from "../../entities/research.ts"
import { RunEventBus } from "../../events/run-event-bus.ts"
import { applyOutlineEdits, depthBudgets } from "../../research/pipeline.ts"
import { type CreateResearchRequest, decodeOutlineAnswer } from "../../research/schema.ts"
import type { ResearchState } from "../../research/report.ts"
import { outlineOf, researchRunView } from "../views/research-view.ts"
import { ArtifactStore } from "../../store/artifacts.ts"
import { type RunRow, RunStore } from "../../store/runs.ts"
import { validateCallbackUrl } from "../../webhooks/callback-url.ts"
import { RunNotifier } from "../../webhooks/run-notifier.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { DEFAULT_LIMIT, decodeCursor, toPage } from "../pagination.ts"
import { parseLastEventId, runEventStream } from "../sse.ts"

type Group = "deep_research" | "deep_research_flat" | "deep_research_standalone"

/** What the run view needs of the run's state: not its sources, which can be hundreds of KB. */
const gateFields = ["outline", "approved"]

const handlersFor = (group: Group) =>
  HttpApiBuilder.group(
    WebAgentApi,
    group,
    Effect.fn(function*(handlers) {
      const store = yield* RunStore
      const artifacts = yield* ArtifactStore
      const notifier = yield* RunNotifier
      const config = yield* AppConfig
      const clientFor = yield* ResearchEntity.client
      const context = yield* Effect.context<RunEventBus | RunStore>()
      const flat = group === "deep_research_flat"

      const find = (runId: string) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const run = yield* store.getRun(runId)
          if (run === undefined || run.project_id !== projectId || run.kind !== "deep_research") {
            return yield* notFound("run_not_found", `no research run ${runId} in this project`)
          }
          return run
        })

      /**
       * The full view: the outline from the run's checkpoint and its pending approval request. An
       * answer the run has not taken in yet is shown applied, so the edits show at once.
       */
      const view = (run: RunRow) =>
        Effect.gen(function*() {
          const state = (yield* store.checkpointFields(run.id, gateFields)) as Partial<ResearchState> | undefined
          let outline = outlineOf(state)
          const atGate = outline !== null && state?.approved === false && !isTerminal(run.status)
          const latest = atGate ? yield* store.latestInputRequest(run.id) : undefined
          if (outline !== null && latest?.status === "answered") {
            const answer = yield* decodeOutlineAnswer(latest.response).pipe(Effect.option)
            if (answer._tag === "Some" && typeof answer.value === "object" && "edits" in answer.value && answer.value.edits !== undefined) {
              const request = run.request as unknown as CreateResearchRequest
              outline = applyOutlineEdits(outline, answer.value.edits, depthBudgets[request.depth]).outline
            }
          }
          return researchRunView(run, {
            flat,
            outline,
            pendingRequestId: run.status === "awaiting_input" && latest?.status === "pending" ? latest.id : null
          })
        })

      return handlers
        .handle("createRun", ({ payload }) =>
          Effect.gen(function*() {
            const request: CreateResearchRequest = payload
            yield* validateCallbackUrl(request.callback_url, config.allowPrivateNetworks)
            const { projectId } = yield* CurrentKey
            const run = yield* store.createStandaloneRun(projectId, "deep_research", { ...request }, {
              maxDurationMs: request.max_duration_minutes * config.runMinuteMs
            })
            // Fire-and-forget: the persisted Execute reaches the run's entity even if this request is gone.
            yield* clientFor(run.id).Execute({ runId: run.id }, { discard: true }).pipe(Effect.orDie)
            return HttpServerResponse.jsonUnsafe(researchRunView(run, { flat }), { status: 202 })
          }))
        .handle("listRuns", ({ query }) =>
          Effect.gen(function*() {
            const { projectId } = yield* CurrentKey
            const limit = query.limit ?? DEFAULT_LIMIT
            const before = yield* decodeCursor(query.cursor)
            // Convention B shows `succeeded` for the stored `done`.
            const status = flat && query.status === "succeeded" ? "done" : query.status
            const rows = yield* store.listRuns(projectId, "deep_research", status, limit + 1, before)
            const page = toPage(rows, limit)
            return { items: page.items.map((run) => researchRunView(run, { flat })), next_cursor: page.next_cursor }
          }))
        .handle("getRun", ({ params }) => find(params.rid).pipe(Effect.flatMap(view)))
        .handle("runEvents", ({ params, headers }) =>
          find(params.rid).pipe(Effect.flatMap((run) =>
            runEventStream(run.id, parseLastEventId(headers["last-event-id"]), config).pipe(
              Effect.provide(context)
            )
          )))
        .handle("intervene", ({ params, payload }) =>
          Effect.gen(function*() {
            const run = yield* find(params.rid)
            if (run.status !== "awaiting_input") return yield* conflict(`the run is ${run.status}; it is not awaiting input`, { status: run.status })
            const pending = yield* store.latestInputRequest(run.id)
            if (pending === undefined || pending.id !== payload.request_id || pending.status !== "pending") {
              return yield* conflict(`no pending input request ${payload.request_id} on this run`, { request_id: payload.request_id })
            }
            const answer = yield* decodeOutlineAnswer(payload.response).pipe(Effect.mapError((error) =>
              validationError("response is not an outline answer: use \"approve\", {approved}, {action: approve_with_edits, edits} or {action: reject}", [
                { loc: ["body", "response"], msg: error.message.slice(0, 500), type: "value_error" }
              ])
            ))
            // Edits must name sections of this outline; checked now so a typo is a 422, not a silent no-op.
            if (typeof answer === "object" && "edits" in answer && answer.edits !== undefined) {
              const outline = outlineOf(yield* store.checkpointFields(run.id, gateFields))
              const request = run.request as unknown as CreateResearchRequest
              if (outline !== null) {
                const { unknownSections } = applyOutlineEdits(outline, answer.edits, depthBudgets[request.depth])
                if (unknownSections.length > 0) {
                  return yield* validationError(`unknown section id(s): ${[...new Set(unknownSections)].join(", ")}`, unknownSections.map((id) => ({
                    loc: ["body", "response", "edits"],
                    msg: `no section ${id} in the outline; sections: ${outline.sections.map((s) => s.section_id).join(", ")}`,
                    type: "value_error"
                  })))
                }
              }
            }
            yield* store.answerInputRequest(run.id, payload.request_id, payload.response)
            return yield* view((yield* store.getRun(run.id))!)
          }))
        .handle("cancel", ({ params, payload }) =>
          Effect.gen(function*() {
            const run = yield* find(params.rid)
            if (!cancellable.includes(run.status)) return yield* conflict(`the run is ${run.status}; only a non-terminal run can be canceled`, { status: run.status })
            const canceled = yield* store.transition(run.id, "canceled", { terminalReason: "canceled", data: { reason: payload.reason ?? null } })
            yield* clientFor(run.id).Interrupt({ runId: run.id }, { discard: true }).pipe(Effect.ignore)
            yield* notifier.terminal(run.id)
            return yield* view(canceled)
          }))
        .handle("feedback", ({ params, payload }) =>
          Effect.gen(function*() {
            const run = yield* find(params.rid)
            if (!isTerminal(run.status)) return yield* conflict(`the run is ${run.status}; feedback is for finished runs`, { status: run.status })
            yield* store.setFeedback(run.id, payload)
            return yield* view((yield* store.getRun(run.id))!)
          }))
        .handle("listArtifacts", ({ params }) =>
          Effect.gen(function*() {
            const run = yield* find(params.rid)
            const rows = yield* artifacts.list(run.id)
            return {
              items: rows.map((row) => ({
                id: row.id,
                run_id: row.run_id,
                name: row.name,
                content_type: row.content_type,
                size_bytes: row.size_bytes,
                created_at: row.created_at.toISOString()
              }))
            }
          }))
        .handle("getArtifact", ({ params }) =>
          Effect.gen(function*() {
            const run = yield* find(params.rid)
            const artifact = yield* artifacts.content(run.id, params.aid)
            if (artifact === undefined) return yield* notFound("artifact_not_found", `no artifact ${params.aid} on run ${run.id}`)
            return HttpServerResponse.text(artifact.content, { contentType: artifact.contentType })
          }))
    })
  )

export const DeepResearchHandlers = handlersFor("deep_research")
export const DeepResearchFlatHandlers = handlersFor("deep_research_flat")
export const DeepResearchStandaloneHandlers = handlersFor("deep_research_standalone")
