/**
 * DeepResearch on the wire: the request (CreateResearchRequest, unknown fields forbidden), the
 * result and its parts, the outline a run asks to have approved, and the answers it accepts.
 */
import { Schema } from "effect"
import { deepResearchFields } from "./run.ts"
import { MaxString } from "./schemas.ts"
import { InputRequestId } from "./id-schemas.ts"

export { Depth, UsdAmount } from "./run.ts"

export { type Phase, Phases } from "./run-state.ts"

export const CreateResearchRequest = Schema.Struct(deepResearchFields)
export type CreateResearchRequest = typeof CreateResearchRequest.Type

export const ConfidenceSummary = Schema.Struct({
  high: Schema.Int,
  medium: Schema.Int,
  low: Schema.Int
})
export type ConfidenceSummary = typeof ConfidenceSummary.Type

/** One source the report cites, as citations.json lists it (`n` is its number in final.md). */
export const CitationEntry = Schema.Struct({
  n: Schema.Int,
  source_id: Schema.String,
  url: Schema.String,
  title: Schema.String,
  site: Schema.String,
  section_ids: Schema.Array(Schema.String)
})
/** The citations.json artifact: every cited source, by its number. */
export const CitationsArtifact = Schema.Array(CitationEntry).annotate({ title: "citations.json" })
export type CitationsArtifact = typeof CitationsArtifact.Type

/** How well a claim is backed: by two or more independent sites, one, or contested (src/research/pipeline.ts). */
export const Confidence = Schema.Literals(["high", "medium", "low"])
export type Confidence = typeof Confidence.Type

/** The confidence.json artifact: the claims of each section with their confidence and citation numbers. */
export const ConfidenceArtifact = Schema.Struct({
  summary: ConfidenceSummary,
  sections: Schema.Array(Schema.Struct({
    section_id: Schema.String,
    title: Schema.String,
    claims: Schema.Array(Schema.Struct({
      text: Schema.String,
      confidence: Confidence,
      citations: Schema.Array(Schema.Int)
    }))
  }))
}).annotate({ title: "confidence.json" })
export type ConfidenceArtifact = typeof ConfidenceArtifact.Type

export const PartialSection = Schema.Struct({
  section_id: Schema.String,
  reason: Schema.String,
  coverage_ratio: Schema.Number,
  blockers: Schema.Array(Schema.String)
})
export type PartialSection = typeof PartialSection.Type

export const ResearchResult = Schema.Struct({
  final_md: Schema.String,
  final_artifact_id: Schema.String,
  citations_count: Schema.Int,
  confidence_summary: ConfidenceSummary,
  partial_sections: Schema.Array(PartialSection)
})
export type ResearchResult = typeof ResearchResult.Type

/** One section of the outline, as the run shows it for approval. */
export const OutlineSection = Schema.Struct({
  section_id: Schema.String,
  title: Schema.String,
  questions: Schema.Array(Schema.String),
  queries: Schema.Array(Schema.String)
})
export type OutlineSection = typeof OutlineSection.Type

export const Outline = Schema.Struct({
  title: Schema.String,
  sections: Schema.Array(OutlineSection)
})
export type Outline = typeof Outline.Type

const SectionId = MaxString(64).check(Schema.isMinLength(1))
const Title = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))
const Queries = Schema.Array(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(500))).check(
  Schema.isMinLength(1),
  Schema.isMaxLength(5)
)

/**
 * One edit of an `approve_with_edits` answer. A plain string is a reviewer's note: it is kept
 * with the outline and given to the model when the sections are written.
 */
export const OutlineEdit = Schema.Union([
  Schema.Struct({ op: Schema.Literal("add_section"), title: Title, queries: Schema.optional(Queries), questions: Schema.optional(Schema.Array(MaxString(500)).check(Schema.isMaxLength(10))) }),
  Schema.Struct({ op: Schema.Literal("remove_section"), section_id: SectionId }),
  Schema.Struct({ op: Schema.Literal("rename_section"), section_id: SectionId, title: Title }),
  Schema.Struct({ op: Schema.Literal("set_queries"), section_id: SectionId, queries: Queries }),
  Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(2000))
])
export type OutlineEdit = typeof OutlineEdit.Type

/**
 * The answers to an outline approval request: "approve", {approved: true}, {approved: false}
 * (the run is canceled), or {action: "approve_with_edits", edits: [...]}.
 */
export const OutlineAnswer = Schema.Union([
  Schema.Literal("approve"),
  Schema.Struct({ approved: Schema.Boolean }),
  Schema.Struct({ action: Schema.Literal("approve"), edits: Schema.optional(Schema.Array(OutlineEdit).check(Schema.isMaxLength(50))) }),
  Schema.Struct({ action: Schema.Literal("approve_with_edits"), edits: Schema.Array(OutlineEdit).check(Schema.isMinLength(1), Schema.isMaxLength(50)) }),
  Schema.Struct({ action: Schema.Literal("reject"), reason: Schema.optional(MaxString(500)) })
])
export type OutlineAnswer = typeof OutlineAnswer.Type
export const decodeOutlineAnswer = Schema.decodeUnknownEffect(OutlineAnswer)

const DerivedText = Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(2000))

/** POST .../{rid}/followup: a follow-up question on a finished report (unknown fields forbidden). */
export const ResearchFollowupRequest = Schema.Struct({
  text: DerivedText.annotate({ description: "the follow-up question (1..2000 characters); it becomes the new run's topic" })
})

/** POST .../{rid}/refine: instructions to redo a report (unknown fields forbidden). */
export const ResearchRefineRequest = Schema.Struct({
  text: DerivedText.annotate({ description: "instructions for the planner and the writer (1..2000 characters), e.g. \"more on costs, shorter\"" })
})

/** The intervene body of DeepResearch (answers the outline approval request). */
export const ResearchInterveneRequest = Schema.Struct({
  kind: Schema.optional(Schema.Literal("answer_input_request")),
  request_id: InputRequestId.check(Schema.isMaxCodePoints(64), Schema.isMinLength(1)),
  response: Schema.Unknown,
  metadata: Schema.optional(Schema.Record(Schema.String, Schema.Unknown))
})
