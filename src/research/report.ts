/**
 * The state a DeepResearch run carries from step to step (saved in its checkpoint after each
 * one), and the report assembled from it at the end: final.md, citations.json, confidence.json
 * and the run's result.
 */
import { Effect, Schema } from "effect"
import { Brief, Claim, type DepthBudget, Source } from "./pipeline.ts"
import { type CitationsArtifact, type ConfidenceArtifact, Outline, type PartialSection } from "../domain/research.ts"

export const SectionGathering = Schema.Struct({
  sourceIds: Schema.Array(Schema.String),
  blockers: Schema.Array(Schema.String)
})
export type SectionGathering = typeof SectionGathering.Type

export const WrittenSection = Schema.Struct({
  markdown: Schema.String,
  method: Schema.Literals(["model", "extractive"])
})
export type WrittenSection = typeof WrittenSection.Type

/** The report a follow-up run builds on: its parent's, cut to PRIOR_REPORT_CHARS. */
export const PriorReport = Schema.Struct({
  run_id: Schema.String,
  markdown: Schema.String
})
export type PriorReport = typeof PriorReport.Type

/** Characters of the parent's report a follow-up keeps (and gives to the brief and the planner). */
export const PRIOR_REPORT_CHARS = 12_000

export const ResearchState = Schema.Struct({
  /** A refinement's text: instructions for the planner and the writer (null for other runs). */
  instructions: Schema.optional(Schema.NullOr(Schema.String)),
  /** A follow-up's parent report, given as context so the new report builds on it (null for other runs). */
  context: Schema.optional(Schema.NullOr(PriorReport)),
  brief: Schema.NullOr(Brief),
  outline: Schema.NullOr(Outline),
  /** Reviewer notes from the outline approval (plain-string edits). */
  notes: Schema.Array(Schema.String),
  approved: Schema.Boolean,
  sources: Schema.Array(Source),
  gathered: Schema.Record(Schema.String, SectionGathering),
  claims: Schema.Record(Schema.String, Schema.Array(Claim)),
  written: Schema.Record(Schema.String, WrittenSection),
  /** max_cost_usd was reached: no more model calls. */
  capped: Schema.Boolean
})
export type ResearchState = typeof ResearchState.Type

export const initialState: ResearchState = {
  brief: null,
  outline: null,
  notes: [],
  approved: false,
  sources: [],
  gathered: {},
  claims: {},
  written: {},
  capped: false
}

/**
 * The state saved in a run's checkpoint (its `history`), decoded: fields a checkpoint lacks take
 * their initial values. A checkpoint that does not decode is a defect (the run fails, logged).
 */
export const stateOfCheckpoint = (history: unknown): Effect.Effect<ResearchState> =>
  Schema.decodeUnknownEffect(ResearchState)({ ...initialState, ...(typeof history === "object" && history !== null ? history : {}) }).pipe(Effect.orDie)

/**
 * Report-wide citation numbers: sources in the order the report's sections use them, from 1.
 * Sources gathered for a section that was later removed are not numbered.
 */
export const citationNumbers = (state: ResearchState): Map<string, number> => {
  const numbers = new Map<string, number>()
  for (const section of state.outline?.sections ?? []) {
    for (const id of state.gathered[section.section_id]?.sourceIds ?? []) {
      if (!numbers.has(id)) numbers.set(id, numbers.size + 1)
    }
  }
  return numbers
}

export interface Report {
  readonly finalMd: string
  readonly citations: CitationsArtifact
  readonly confidence: ConfidenceArtifact
  readonly partialSections: ReadonlyArray<PartialSection>
}

const escapeLinkText = (text: string) => text.replace(/[[\]]/g, "").replace(/\s+/g, " ").trim()

export const assembleReport = (state: ResearchState, budget: DepthBudget): Report => {
  const outline = state.outline ?? { title: state.brief?.title ?? "Research report", sections: [] }
  const numbers = citationNumbers(state)
  const byId = new Map(state.sources.map((s) => [s.id, s]))

  const lines: Array<string> = [`# ${outline.title}`, ""]
  if (state.brief !== null && state.brief.objective !== "") lines.push(state.brief.objective, "")
  for (const section of outline.sections) {
    lines.push(`## ${section.title}`, "")
    const written = state.written[section.section_id]
    const body = written?.markdown.trim() ?? ""
    lines.push(body !== "" ? body : "_No sources were found for this section._", "")
  }
  const citations = [...numbers.entries()].map(([id, n]) => {
    const source = byId.get(id)!
    return {
      n,
      source_id: id,
      url: source.url,
      title: source.title,
      site: source.site,
      section_ids: outline.sections.filter((s) => state.gathered[s.section_id]?.sourceIds.includes(id) === true).map((s) => s.section_id)
    }
  })
  if (citations.length > 0) {
    lines.push("## Sources", "")
    for (const citation of citations) lines.push(`${citation.n}. [${escapeLinkText(citation.title) || citation.url}](${citation.url})`)
    lines.push("")
  }

  const summary = { high: 0, medium: 0, low: 0 }
  const sections = outline.sections.map((section) => {
    const claims = state.written[section.section_id]?.method === "model" ? state.claims[section.section_id] ?? [] : []
    for (const claim of claims) summary[claim.confidence]++
    return {
      section_id: section.section_id,
      title: section.title,
      claims: claims.map((claim) => ({
        text: claim.text,
        confidence: claim.confidence,
        citations: claim.source_ids.map((id) => numbers.get(id)!).filter((n) => n !== undefined)
      }))
    }
  })

  const partialSections: Array<PartialSection> = []
  for (const section of outline.sections) {
    const gathering = state.gathered[section.section_id]
    const found = gathering?.sourceIds.length ?? 0
    const coverage = Math.min(1, found / budget.sourcesPerSection)
    if (state.written[section.section_id]?.method === "extractive") {
      partialSections.push({
        section_id: section.section_id,
        reason: "cost_cap_reached",
        coverage_ratio: coverage,
        blockers: ["max_cost_usd was reached before this section was cross-checked and written; it holds extracts of its sources"]
      })
    } else if (found < budget.sourcesPerSection) {
      partialSections.push({
        section_id: section.section_id,
        reason: "insufficient_sources",
        coverage_ratio: coverage,
        blockers: [...(gathering?.blockers ?? [])].slice(0, 20)
      })
    }
  }

  return { finalMd: lines.join("\n"), citations, confidence: { summary, sections }, partialSections }
}
