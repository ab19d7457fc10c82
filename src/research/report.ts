/**
 * The state a DeepResearch run carries from step to step (saved in its checkpoint after each
 * one), and the report assembled from it at the end: final.md, citations.json, confidence.json
 * and the run's result.
 */
import type { Brief, Claim, DepthBudget, Source } from "./pipeline.ts"
import type { ConfidenceSummary, Outline, PartialSection } from "../domain/research.ts"

export interface SectionGathering {
  readonly sourceIds: ReadonlyArray<string>
  readonly blockers: ReadonlyArray<string>
}

export interface WrittenSection {
  readonly markdown: string
  readonly method: "model" | "extractive"
}

/** The report a follow-up run builds on: its parent's, cut to PRIOR_REPORT_CHARS. */
export interface PriorReport {
  readonly run_id: string
  readonly markdown: string
}

/** Characters of the parent's report a follow-up keeps (and gives to the brief and the planner). */
export const PRIOR_REPORT_CHARS = 12_000

export interface ResearchState {
  /** A refinement's text: instructions for the planner and the writer (null for other runs). */
  readonly instructions?: string | null
  /** A follow-up's parent report, given as context so the new report builds on it (null for other runs). */
  readonly context?: PriorReport | null
  readonly brief: Brief | null
  readonly outline: Outline | null
  /** Reviewer notes from the outline approval (plain-string edits). */
  readonly notes: ReadonlyArray<string>
  readonly approved: boolean
  readonly sources: ReadonlyArray<Source>
  readonly gathered: Readonly<Record<string, SectionGathering>>
  readonly claims: Readonly<Record<string, ReadonlyArray<Claim>>>
  readonly written: Readonly<Record<string, WrittenSection>>
  /** max_cost_usd was reached: no more model calls. */
  readonly capped: boolean
}

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
  readonly citations: ReadonlyArray<{
    readonly n: number
    readonly source_id: string
    readonly url: string
    readonly title: string
    readonly site: string
    readonly section_ids: ReadonlyArray<string>
  }>
  readonly confidence: {
    readonly summary: ConfidenceSummary
    readonly sections: ReadonlyArray<{
      readonly section_id: string
      readonly title: string
      readonly claims: ReadonlyArray<{ readonly text: string; readonly confidence: string; readonly citations: ReadonlyArray<number> }>
    }>
  }
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
