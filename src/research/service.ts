/**
 * Research: the DeepResearch product. It creates runs and hands them to their entity
 * (src/entities/research.ts), answers the outline approval gate (with edits checked against the
 * outline), cancels, records feedback and reads artifacts, and derives runs from finished ones:
 * a follow-up question (a new topic that builds on the parent's report) and a refinement (the
 * parent's topic again, rewritten by instructions from the parent's sources). The HTTP handlers
 * only decode, call one method and render.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { Budget } from "../billing/budget.ts"
import type { BudgetExceeded, InsufficientCredits, RunCapReached } from "../domain/errors.ts"
import { AppConfig } from "../config/config.ts"
import { ArtifactNotFound, InputRequestNotFound, InvalidField, ParentRunNotReady, RunNotAwaitingInput, RunNotEnded, UnknownSections } from "../domain/errors.ts"
import { isTerminal } from "../domain/run-state.ts"
import { type DeepResearchRequest, type ProjectId, type Run, RunId } from "../domain/run.ts"
import type { ArtifactId, InputRequestId } from "../domain/id-schemas.ts"
import { cancelRun } from "../runs/cancel.ts"
import { ResearchEntity } from "../entities/research.ts"
import { ArtifactStore, type ArtifactRow } from "../store/artifacts.ts"
import { makeStandaloneCreate } from "../runs/create.ts"
import { RunStore } from "../store/runs.ts"
import { RunNotifier } from "../webhooks/run-notifier.ts"
import { applyOutlineEdits, depthBudgets } from "./pipeline.ts"
import { initialState, PRIOR_REPORT_CHARS, type ResearchState, stateOfCheckpoint } from "./report.ts"
import { decodeOutlineAnswer, Outline, type OutlineEdit, ResearchResult } from "../domain/research.ts"
import { withMethodSpans } from "../observability/spans.ts"

const decodeResult = Schema.decodeUnknownOption(ResearchResult)

/**
 * What the run view needs of the run's state (ResearchState's `outline` and `approved`): not its
 * sources, which can be hundreds of KB. A checkpoint that has neither yet reads as neither.
 */
const GateState = Schema.Struct({ outline: Schema.optional(Schema.NullOr(Outline)), approved: Schema.optional(Schema.Boolean) })
type GateState = typeof GateState.Type
const gateFields = ["outline", "approved"]
const decodeGateState = Schema.decodeUnknownEffect(GateState)

/** The outline kept in a run's checkpoint state, if it has one yet. */
const outlineOf = (history: GateState | undefined): Outline | null => history?.outline ?? null

const editsOf = (answer: typeof decodeOutlineAnswer extends (u: unknown) => Effect.Effect<infer A, any, any> ? A : never): ReadonlyArray<OutlineEdit> | undefined =>
  typeof answer === "object" && "edits" in answer ? answer.edits : undefined

/** A research run with what its view shows besides the row: the outline and the pending approval request. */
export interface ResearchRun {
  readonly run: Run
  readonly request: DeepResearchRequest
  readonly outline: Outline | null
  readonly pendingRequestId: InputRequestId | null
}

const requestOf = (run: Run): DeepResearchRequest => {
  if (run.request._tag !== "DeepResearch") throw new Error(`run ${run.id} is not a research run`)
  return run.request
}

export class Research extends Context.Service<Research, {
  readonly create: (projectId: ProjectId, request: DeepResearchRequest) => Effect.Effect<Run, InsufficientCredits | BudgetExceeded | RunCapReached>
  readonly find: (projectId: ProjectId, runId: RunId) => Effect.Effect<Run, import("../domain/errors.ts").RunNotFound>
  readonly list: (projectId: ProjectId, status: string | undefined, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<Run>>
  /** The run with its outline; an answer the run has not taken in yet is shown applied. */
  readonly details: (run: Run) => Effect.Effect<ResearchRun>
  readonly answer: (run: Run, requestId: InputRequestId, response: unknown) => Effect.Effect<
    ResearchRun,
    RunNotAwaitingInput | InputRequestNotFound | InvalidField | UnknownSections | import("../domain/errors.ts").InputRequestAnswered
  >
  readonly cancel: (run: Run, reason: string | null) => Effect.Effect<ResearchRun, import("../domain/errors.ts").RunEnded | import("../domain/errors.ts").RunNotFound | import("../domain/errors.ts").InvalidTransition>
  readonly feedback: (run: Run, feedback: unknown) => Effect.Effect<ResearchRun, RunNotEnded>
  /** The run's artifacts, newest first; with `page`, at most `limit` before the id `before`. */
  readonly artifacts: (run: Run, page?: { readonly limit: number; readonly before: string | undefined }) => Effect.Effect<ReadonlyArray<ArtifactRow>>
  readonly artifact: (run: Run, artifactId: ArtifactId) => Effect.Effect<{ readonly contentType: string; readonly content: string }, ArtifactNotFound>
  /**
   * A follow-up question on a finished report: a new run whose topic is the question, with the
   * parent's settings, and the parent's report given to the brief, the planner and the writer so
   * the new report builds on it. The parent must be `done`.
   */
  readonly followup: (run: Run, question: string) => Effect.Effect<Run, ParentRunNotReady | InsufficientCredits | BudgetExceeded | RunCapReached>
  /**
   * The parent's topic again, rewritten by `text` (instructions for the planner and the writer).
   * When the parent's outline was final (approved, or no approval asked), its brief, outline,
   * sources and claims are reused: nothing is searched again, every section is written anew (and
   * sections the parent did not cross-check are cross-checked). Otherwise the run plans again
   * from the parent's brief, with the text. The parent must have ended.
   */
  readonly refine: (run: Run, text: string) => Effect.Effect<Run, ParentRunNotReady | InsufficientCredits | BudgetExceeded | RunCapReached>
}>()("wa/research/Research") {
  static readonly layer = Layer.effect(
    Research,
    Effect.gen(function*() {
      const store = yield* RunStore
      const artifactStore = yield* ArtifactStore
      const notifier = yield* RunNotifier
      const config = yield* AppConfig
      const clientFor = yield* ResearchEntity.client
      const createStandalone = yield* makeStandaloneCreate
      const cancel = cancelRun(store, notifier, (run) => clientFor(run.id).Interrupt({ runId: run.id }, { discard: true }))

      const gateState = (runId: RunId) =>
        store.checkpointFields(runId, gateFields).pipe(
          Effect.flatMap((fields) => fields === undefined ? Effect.succeed(undefined) : Effect.orDie(decodeGateState(fields)))
        )

      const details = Effect.fn("Research.details")(function*(run: Run) {
        const request = requestOf(run)
        const state = yield* gateState(run.id)
        let outline = outlineOf(state)
        const atGate = outline !== null && state?.approved === false && !isTerminal(run.status)
        const latest = atGate ? yield* store.latestInputRequest(run.id) : undefined
        if (outline !== null && latest?.status === "answered") {
          const answer = yield* decodeOutlineAnswer(latest.response).pipe(Effect.option)
          const edits = answer._tag === "Some" ? editsOf(answer.value) : undefined
          if (edits !== undefined) outline = applyOutlineEdits(outline, edits, depthBudgets[request.depth]).outline
        }
        return {
          run,
          request,
          outline,
          pendingRequestId: run.status === "awaiting_input" && latest?.status === "pending" ? latest.id : null
        }
      })

      const reread = (run: Run) => store.getRun(run.id).pipe(Effect.flatMap((current) => details(current ?? run)))

      /**
       * Creates a run and hands it to its entity. A derived run's first checkpoint (`seed`) is saved
       * before the entity is told, so its execution starts from it.
       */
      const start = Effect.fn("Research.start")(function*(
        projectId: ProjectId,
        request: DeepResearchRequest,
        derived: { readonly parentRunId: RunId; readonly instructions: string | null; readonly seed: ResearchState } | undefined = undefined
      ) {
        // A derived run's seed is saved with the run, in its transaction.
        const run = yield* createStandalone({
          projectId,
          entityType: "DeepResearch",
          insert: Effect.gen(function*() {
            const run = yield* store.createStandaloneRun(projectId, request, {
              maxDurationMs: request.max_duration_minutes * config.runMinuteMs,
              ...(derived === undefined ? {} : { parentRunId: derived.parentRunId, instructions: derived.instructions })
            })
            if (derived !== undefined) {
              yield* store.completeStep(run.id, 0, { step: 0, history: derived.seed, url: null, tabs: [], dirtyForm: false, storageState: undefined })
            }
            return run
          }),
          dispatch: (runId) => clientFor(runId).Execute({ runId }, { discard: true }).pipe(Effect.orDie)
        })
        return run
      })

      return Research.of({
        ...withMethodSpans<Pick<Research["Service"], "create" | "list" | "artifacts">>("Research", {
          create: (projectId, request) => start(projectId, request),
          list: (projectId, status, limit, beforeId) => store.listRuns(projectId, "deep_research", status, limit, beforeId),
          artifacts: (run, page) => artifactStore.list(run.id, page)
        }),
        followup: Effect.fn("Research.followup")(function*(run: Run, question: string) {
          if (run.status !== "done") return yield* new ParentRunNotReady({ runId: run.id, status: run.status, operation: "followup", needs: "done" })
          const report = Option.match(decodeResult(run.output), { onNone: () => "", onSome: (result) => result.final_md })
          return yield* start(run.project_id, { ...requestOf(run), topic: question }, {
            parentRunId: run.id,
            instructions: null,
            seed: { ...initialState, context: { run_id: run.id, markdown: report.slice(0, PRIOR_REPORT_CHARS) } }
          })
        }),
        refine: Effect.fn("Research.refine")(function*(run: Run, text: string) {
          if (!isTerminal(run.status)) return yield* new ParentRunNotReady({ runId: run.id, status: run.status, operation: "refine", needs: "ended" })
          const request = requestOf(run)
          const checkpoint = yield* store.loadCheckpoint(run.id)
          const parent: ResearchState = yield* stateOfCheckpoint(checkpoint?.history)
          // The outline is final once approved (or when no approval was asked): its sources and
          // claims still hold. An outline rejected or never approved is planned again, with the text.
          const outlineFinal = parent.outline !== null && (parent.approved || !request.require_outline_approval)
          const seed: ResearchState = {
            ...initialState,
            instructions: text,
            context: parent.context ?? null,
            brief: parent.brief,
            ...(outlineFinal
              ? { outline: parent.outline, notes: parent.notes, approved: true, sources: parent.sources, gathered: parent.gathered, claims: parent.claims }
              : {})
          }
          return yield* start(run.project_id, request, { parentRunId: run.id, instructions: text, seed })
        }),
        find: Effect.fn("Research.find")(function*(projectId: ProjectId, runId: RunId) {
          return yield* store.findRun(projectId, runId, "deep_research")
        }),
        details,
        answer: Effect.fn("Research.answer")(function*(run: Run, requestId: InputRequestId, response: unknown) {
          if (run.status !== "awaiting_input") return yield* new RunNotAwaitingInput({ runId: run.id, status: run.status })
          const pending = yield* store.latestInputRequest(run.id)
          if (pending === undefined || pending.id !== requestId || pending.status !== "pending") {
            return yield* new InputRequestNotFound({ inputRequestId: requestId, field: "request_id" })
          }
          const answer = yield* decodeOutlineAnswer(response).pipe(Effect.mapError((error) =>
            new InvalidField({
              field: ["response"],
              detail: "response is not an outline answer: use \"approve\", {approved}, {action: approve_with_edits, edits} or {action: reject}",
              msg: error.message.slice(0, 500),
              type: "value_error"
            })
          ))
          // Edits must name sections of this outline; checked now so a typo is a 422, not a silent no-op.
          const edits = editsOf(answer)
          if (edits !== undefined) {
            const outline = outlineOf(yield* gateState(run.id))
            if (outline !== null) {
              const { unknownSections } = applyOutlineEdits(outline, edits, depthBudgets[requestOf(run).depth])
              if (unknownSections.length > 0) {
                return yield* new UnknownSections({ unknown: unknownSections, sections: outline.sections.map((s) => s.section_id) })
              }
            }
          }
          yield* store.answerInputRequest(run.id, requestId, response).pipe(
            Effect.catchTag("InputRequestNotFound", () => Effect.fail(new InputRequestNotFound({ inputRequestId: requestId, field: "request_id" })))
          )
          return yield* reread(run)
        }),
        cancel: Effect.fn("Research.cancel")(function*(run: Run, reason: string | null) {
          return yield* details(yield* cancel(run, reason))
        }),
        feedback: Effect.fn("Research.feedback")(function*(run: Run, feedback: unknown) {
          if (!isTerminal(run.status)) return yield* new RunNotEnded({ runId: run.id, status: run.status })
          yield* store.setFeedback(run.id, feedback)
          return yield* reread(run)
        }),
        artifact: Effect.fn("Research.artifact")(function*(run: Run, artifactId: ArtifactId) {
          const artifact = yield* artifactStore.content(run.id, artifactId)
          if (artifact === undefined) return yield* new ArtifactNotFound({ runId: run.id, artifactId })
          return artifact
        })
      })
    })
  ).pipe(Layer.provide(Budget.layer))
}
