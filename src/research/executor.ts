/**
 * The DeepResearch executor, plugged into the run kernel (src/runs/kernel.ts) on the DeepResearch
 * entity, one per run: it conducts the run through its phases
 * (src/research/pipeline.ts) and checkpoints the run's state after every unit of work (the brief,
 * the outline, each section gathered, cross-checked and written), with the cost of that unit, in
 * one transaction. `Execute` is persisted: after a restart or a runner's death it is delivered
 * again and the run resumes from its last checkpoint (a `run.resumed` event says so), including a
 * run waiting at the outline gate, which keeps waiting for the same request.
 *
 * The gate holds no browser and no slot: a draining runner hands a waiting run over at once.
 * The run's deadline (max_duration_minutes) covers the gate; past it the run ends `canceled`
 * with `duration_exceeded`.
 */
import { Effect, Option } from "effect"
import { LanguageModel } from "effect/ai"
import { AgentModel } from "../agent/model.ts"
import { toMicros } from "../domain/money.ts"
import { budgetExceededDetail } from "../domain/billing.ts"
import { AppConfig } from "../config/config.ts"
import { RunnerLifecycle } from "../cluster/lifecycle.ts"
import { isTerminal } from "../domain/run-state.ts"
import { RunEventBus } from "../events/run-event-bus.ts"
import { awaitInputAnswer } from "../events/input-answer.ts"
import { Reader } from "../reader/reader.ts"
import { applyOutlineEdits, crosscheckSection, depthBudgets, extractiveSection, gatherSection, planOutline, writeBrief, writeSection } from "./pipeline.ts"
import { assembleReport, citationNumbers, initialState, type ResearchState, stateOfCheckpoint } from "./report.ts"
import { decodeOutlineAnswer, type Outline, type Phase } from "../domain/research.ts"
import { canonicalUrl } from "../engines/canonical-url.ts"
import { WebSearch } from "../engines/web-search.ts"
import { ArtifactStore } from "../store/artifacts.ts"
import type { DeepResearchRequest, Run, RunId } from "../domain/run.ts"
import type { ExecutionToken } from "../domain/id-schemas.ts"
import { RunStore } from "../store/runs.ts"
import { type Begin, Handover, RunFailure, runEntityHandlers, RunStopped } from "../runs/kernel.ts"
import { ResearchEntity } from "../entities/research.ts"
import type { EventData, NewRunEvent } from "../domain/events.ts"

const OUTLINE_PROMPT = "Review the research outline. Answer \"approve\", {\"action\": \"approve_with_edits\", \"edits\": [...]} " +
  "(edits: {op: add_section | remove_section | rename_section | set_queries, ...} or a note as a string), or {\"action\": \"reject\"}."

const researchExecutor = Effect.gen(function*() {
  const store = yield* RunStore
  const artifacts = yield* ArtifactStore
  const agentModel = yield* AgentModel
  const search = yield* WebSearch
  const reader = yield* Reader
  const bus = yield* RunEventBus
  const lifecycle = yield* RunnerLifecycle
  const prices = (yield* AppConfig).prices

  const conduct = (run: Run, request: DeepResearchRequest, begin: Begin) =>
    Effect.gen(function*() {
      const runId = run.id
      const budget = depthBudgets[request.depth]
      if (Option.isNone(agentModel)) {
        return yield* new RunFailure({ code: "model_not_configured", detail: "DeepResearch needs a model; set WA_MODEL_BASE_URL (and WA_MODEL_API_KEY)" })
      }
      const configured = agentModel.value
      // Its model requests take fair shares of the model lane (src/agent/model.ts).
      const model = yield* Effect.provide(Effect.service(LanguageModel.LanguageModel), configured.layer)
      const cost = configured.costUsd

      const [executor, checkpoint] = yield* begin(store.loadCheckpoint(runId), (saved) => ({ from_step: saved?.step ?? 0, phase: run.phase }))
      let step = checkpoint?.step ?? 0
      let state: ResearchState = checkpoint === undefined ? initialState : yield* stateOfCheckpoint(checkpoint.history)
      let spent = Number(run.llm_cost_usd)
      const cap = request.max_cost_usd === null || request.max_cost_usd === undefined ? Number.POSITIVE_INFINITY : Number(request.max_cost_usd)

      // The run's fee (deep_research_per_run), once per run; refused when the project cannot pay.
      const fee = yield* store.chargeRun(runId, [{
        kind: "charge_research",
        column: "service",
        micros: toMicros(prices.deep_research_per_run),
        idempotencyKey: `research:${runId}`,
        force: false
      }], executor)
      if (fee.refused && fee.exhausted !== null) return yield* new RunFailure({ code: "budget_exceeded", detail: budgetExceededDetail(fee.exhausted) })

      const enter = (phase: Phase) => store.setPhase(runId, phase, executor)
      /** Saves the state after a unit of work, with what that unit cost, as the next checkpoint. */
      const save = (next: ResearchState, usd: number, progress?: EventData<"run.research.progress">) =>
        Effect.gen(function*() {
          step++
          state = next
          spent += usd
          // The progress event goes in the checkpoint's transaction: a resume never repeats it.
          const events: ReadonlyArray<NewRunEvent> = progress === undefined ? [] : [{ type: "run.research.progress", data: progress }]
          const charged = yield* store.completeStep(runId, usd, { step, history: next, url: null, tabs: [], dirtyForm: false, storageState: undefined }, executor, events)
          // The project can pay for no more (billing on): the run ends; what it spent stays charged.
          if (charged.exhausted !== null) return yield* new RunFailure({ code: "budget_exceeded", detail: budgetExceededDetail(charged.exhausted) })
        })
      /** Stops when the run was canceled meanwhile. */
      const ensureActive = Effect.gen(function*() {
        const current = yield* store.getRun(runId)
        if (current === undefined || isTerminal(current.status)) return yield* new RunStopped()
      })
      const canSpend = () => spent < cap
      // A refinement's instructions and a follow-up's earlier report (seeded in its first checkpoint).
      const derivation = { instructions: state.instructions ?? null, prior: state.context?.markdown ?? null }

      // brief
      if (state.brief === null) {
        yield* enter("brief")
        if (!canSpend()) return yield* new RunFailure({ code: "cost_cap_reached", detail: "max_cost_usd was reached before the brief was written" })
        const brief = yield* writeBrief(model, cost, { topic: request.topic, audience: request.target_audience ?? null, ...derivation })
        yield* save({ ...state, brief: brief.value }, brief.usd)
      }
      const brief = state.brief!

      // plan
      if (state.outline === null) {
        yield* ensureActive
        yield* enter("plan")
        if (!canSpend()) return yield* new RunFailure({ code: "cost_cap_reached", detail: "max_cost_usd was reached before the outline was planned" })
        const planned = yield* planOutline(model, cost, { topic: request.topic, brief, budget, ...derivation })
        // A model that proposes nothing still gets a report: one section on the whole topic.
        const outline: Outline = planned.value.sections.length > 0 ? planned.value : {
          title: brief.title,
          sections: [{ section_id: "s1", title: brief.title, questions: [...brief.key_questions], queries: [request.topic.slice(0, 500)] }]
        }
        yield* save({ ...state, outline }, planned.usd)
      }

      // hitl_outline
      if (request.require_outline_approval && !state.approved) {
        yield* ensureActive
        yield* enter("hitl_outline")
        const answer = yield* awaitOutlineAnswer(runId, state.outline!, executor)
        const decoded = yield* decodeOutlineAnswer(answer).pipe(Effect.orDie) // validated by the intervene handler
        const rejected = (typeof decoded === "object" && "approved" in decoded && !decoded.approved) ||
          (typeof decoded === "object" && "action" in decoded && decoded.action === "reject")
        if (rejected) {
          yield* store.transition(runId, "canceled", {
            executor,
            terminalReason: "outline_rejected",
            errorCode: "outline_rejected",
            errorDetail: typeof decoded === "object" && "reason" in decoded && decoded.reason !== undefined ? decoded.reason : "the outline was rejected"
          }).pipe(Effect.ignore)
          return
        }
        const edits = typeof decoded === "object" && "edits" in decoded ? decoded.edits ?? [] : []
        const edited = applyOutlineEdits(state.outline!, edits, budget)
        yield* save({ ...state, outline: edited.outline, notes: [...state.notes, ...edited.notes], approved: true }, 0)
      }
      const outline = state.outline!

      // gather
      yield* enter("gather")
      let nextSource = state.sources.length + 1
      for (const section of outline.sections) {
        if (state.gathered[section.section_id] !== undefined) continue
        yield* ensureActive
        const known = new Set(state.sources.map((s) => canonicalUrl(s.url)))
        const outcome = yield* gatherSection(search, reader, {
          section,
          budget,
          whitelist: request.domain_whitelist ?? null,
          blacklist: request.domain_blacklist ?? null,
          known,
          nextSourceId: () => `S${nextSource++}`
        })
        yield* save({
          ...state,
          sources: [...state.sources, ...outcome.sources],
          gathered: { ...state.gathered, [section.section_id]: { sourceIds: outcome.sources.map((s) => s.id), blockers: outcome.blockers } }
        }, 0, { phase: "gather", section_id: section.section_id, sources_found: outcome.sources.length, sources_target: budget.sourcesPerSection })
      }
      const sourcesOf = (sectionId: string) => {
        const ids = new Set(state.gathered[sectionId]?.sourceIds ?? [])
        return state.sources.filter((s) => ids.has(s.id))
      }

      // crosscheck
      yield* enter("crosscheck")
      for (const section of outline.sections) {
        if (state.claims[section.section_id] !== undefined || state.capped) continue
        yield* ensureActive
        const sources = sourcesOf(section.section_id)
        if (sources.length === 0) {
          yield* save({ ...state, claims: { ...state.claims, [section.section_id]: [] } }, 0)
          continue
        }
        if (!canSpend()) {
          yield* save({ ...state, capped: true }, 0)
          break
        }
        const checked = yield* crosscheckSection(model, cost, { section, sources })
        yield* save({ ...state, claims: { ...state.claims, [section.section_id]: checked.value } }, checked.usd, {
          phase: "crosscheck",
          section_id: section.section_id,
          claims: checked.value.length
        })
      }

      // synthesize
      yield* enter("synthesize")
      const numbers = citationNumbers(state)
      for (const section of outline.sections) {
        if (state.written[section.section_id] !== undefined) continue
        yield* ensureActive
        const sources = sourcesOf(section.section_id)
        const claims = state.claims[section.section_id]
        const written = (markdown: string, method: "model" | "extractive", capped = state.capped) =>
          ({ ...state, capped, written: { ...state.written, [section.section_id]: { markdown, method } } })
        if (sources.length === 0) {
          yield* save(written("", "model"), 0)
        } else if (claims === undefined || state.capped || !canSpend()) {
          yield* save(written(extractiveSection(section, sources, numbers), "extractive", true), 0)
        } else if (claims.length === 0) {
          yield* save(written("_The sources found do not support a clear answer for this section._", "model"), 0)
        } else {
          const text = yield* writeSection(model, cost, { section, claims, numbers, audience: request.target_audience ?? null, notes: state.notes, ...derivation })
          yield* save(written(text.value, "model"), text.usd, { phase: "synthesize", section_id: section.section_id })
        }
      }

      const report = assembleReport(state, budget)
      const rows = yield* artifacts.putAll(runId, [
        { name: "final.md", contentType: "text/markdown; charset=utf-8", content: report.finalMd },
        { name: "citations.json", contentType: "application/json", content: JSON.stringify(report.citations, null, 2) },
        { name: "confidence.json", contentType: "application/json", content: JSON.stringify(report.confidence, null, 2) }
      ])
      yield* store.transition(runId, "done", {
        executor,
        terminalReason: "done",
        output: {
          final_md: report.finalMd,
          final_artifact_id: rows[0]!.id,
          citations_count: report.citations.length,
          confidence_summary: report.confidence.summary,
          partial_sections: report.partialSections
        }
      }).pipe(Effect.ignore)
    })

  /**
   * The answer to the run's outline approval request: the pending one (asked again after a
   * resume), an answer that came while no runner executed the run, or a new request.
   */
  const awaitOutlineAnswer = (runId: RunId, outline: Outline, executor: ExecutionToken) =>
    Effect.gen(function*() {
      const latest = yield* store.latestInputRequest(runId)
      const requestId = latest !== undefined
        ? latest.id
        : yield* store.createInputRequest(runId, OUTLINE_PROMPT, { kind: "outline_approval", outline }, executor).pipe(
          Effect.mapError(() => new RunStopped())
        )
      // The gate holds no browser: a draining runner hands the waiting run over at once.
      const answer = yield* awaitInputAnswer({ store, bus }, runId, requestId, { handOver: lifecycle.draining })
      switch (answer._tag) {
        case "Answered":
          return answer.response
        case "HandOver":
          return yield* new Handover()
        default:
          // Ended, or withdrawn (nothing withdraws an outline request): the run does not go on here.
          return yield* new RunStopped()
      }
    })

  return yield* runEntityHandlers({
    kind: "deep_research",
    requestOf: (run) => run.request._tag === "DeepResearch" ? run.request : undefined,
    conduct,
    internalErrorDetail: "the research failed; see the service logs"
  })
})

export const ResearchEntityLive = ResearchEntity.toLayer(
  Effect.map(researchExecutor, (handlers) => ResearchEntity.of(handlers)),
  { maxIdleTime: "1 minute" }
)
