/**
 * The steps of a DeepResearch run, each a small unit that the run checkpoints after:
 *
 * - brief: the model restates the topic as an objective with key questions, for the audience.
 * - plan: the model proposes an outline; sections, questions and search queries are clamped to
 *   the depth's budget and numbered s1, s2, ...
 * - gather (per section): the section's queries go through WebSearch (all default engines, the
 *   run's domain lists as site filters), and the best new pages are read with the Reader.
 * - crosscheck (per section): the model lists the claims the sources support, citing source ids;
 *   each claim's confidence comes from how many independent sites back it (two or more: high, one:
 *   medium, contested: low). Claims citing no valid source are dropped.
 * - synthesize (per section): the model writes the section from those claims with [n] markers;
 *   markers that do not name one of the section's sources are removed.
 *
 * The model is required (the run fails with `model_not_configured` without one); every call
 * reports its cost so the run can stop at `max_cost_usd`.
 */
import { Effect, Schema } from "effect"
import { type AiError, LanguageModel } from "effect/ai"
import type { Reader } from "../reader/reader.ts"
import { fairly } from "../fairness/fair-queue.ts"
import { canonicalUrl, hostOf, normalizeSite, urlMatchesAnySite } from "../engines/canonical-url.ts"
import { extractiveSummary } from "../engines/summarize.ts"
import { decodeWebSearchRequest } from "../domain/web-search.ts"
import type { WebSearch } from "../engines/web-search.ts"
import { Confidence, type Depth, type Outline, type OutlineEdit, type OutlineSection } from "../domain/research.ts"

export interface DepthBudget {
  readonly sections: number
  readonly queriesPerSection: number
  readonly sourcesPerSection: number
}

export const depthBudgets: Record<Depth, DepthBudget> = {
  light: { sections: 3, queriesPerSection: 1, sourcesPerSection: 2 },
  standard: { sections: 5, queriesPerSection: 2, sourcesPerSection: 3 },
  deep: { sections: 8, queriesPerSection: 3, sourcesPerSection: 5 }
}

/** Characters of a follow-up's earlier report given to the writer with each section. */
const PRIOR_CHARS_FOR_WRITER = 4_000

/** What a derived run adds to its prompts: a refinement's instructions, a follow-up's earlier report. */
export interface Derivation {
  readonly instructions?: string | null | undefined
  /** The earlier report (Markdown) a follow-up builds on. */
  readonly prior?: string | null | undefined
}

const derivationText = (derived: Derivation, role: "brief" | "plan" | "write"): string => {
  const parts: Array<string> = []
  if (derived.prior !== undefined && derived.prior !== null && derived.prior !== "") {
    const guide = role === "brief"
      ? "This is a follow-up question on the earlier report below: aim the brief at what it does not already answer."
      : role === "plan"
      ? "This is a follow-up on the earlier report below: plan sections for what it does not already cover; do not repeat its sections."
      : "The reader already has the earlier report below: build on it, refer to it where useful, and do not repeat what it says."
    const text = role === "write" ? derived.prior.slice(0, PRIOR_CHARS_FOR_WRITER) : derived.prior
    parts.push(`${guide}\n--- earlier report ---\n${text}\n--- end of earlier report ---`)
  }
  if (derived.instructions !== undefined && derived.instructions !== null && derived.instructions.trim() !== "") {
    parts.push(`Instructions for this revision of the report (follow them): ${derived.instructions.trim()}`)
  }
  return parts.length === 0 ? "" : `\n\n${parts.join("\n\n")}`
}

/** Characters of each source given to the model. */
const SOURCE_CHARS = 4_000
/** Characters of each source kept in the run's checkpoint. */
const STORED_SOURCE_CHARS = 8_000

export const Brief = Schema.Struct({
  title: Schema.String,
  objective: Schema.String,
  key_questions: Schema.Array(Schema.String)
})
export type Brief = typeof Brief.Type

export const Source = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  title: Schema.String,
  site: Schema.String,
  text: Schema.String
})
export type Source = typeof Source.Type


export const Claim = Schema.Struct({
  text: Schema.String,
  source_ids: Schema.Array(Schema.String),
  confidence: Confidence
})
export type Claim = typeof Claim.Type

/** A model call's answer and what it cost. */
export interface Priced<A> {
  readonly value: A
  readonly usd: number
}

export type CostOf = (inputTokens: number, outputTokens: number) => number

const priced = <A>(value: A, usage: { readonly inputTokens: { readonly total?: number | undefined }; readonly outputTokens: { readonly total?: number | undefined } }, cost: CostOf): Priced<A> => ({
  value,
  usd: cost(usage.inputTokens.total ?? 0, usage.outputTokens.total ?? 0)
})

const BriefSchema = Schema.Struct({
  title: Schema.String,
  objective: Schema.String,
  key_questions: Schema.Array(Schema.String)
})

export const writeBrief = (
  model: LanguageModel.LanguageModel,
  cost: CostOf,
  input: { readonly topic: string; readonly audience: string | null } & Derivation
): Effect.Effect<Priced<Brief>, AiError.AiError> =>
  model.generateObject({
    objectName: "research_brief",
    schema: BriefSchema,
    prompt: [
      {
        role: "system",
        content: "You plan research reports. Restate the topic as a research brief: a short report title, " +
          "the objective in one or two sentences, and three to six key questions the report must answer. " +
          "Answer with JSON {\"title\", \"objective\", \"key_questions\": [...]}."
      },
      {
        role: "user",
        content: `Topic: ${input.topic}\nAudience: ${input.audience ?? "a general technical reader"}` + derivationText(input, "brief")
      }
    ]
  }).pipe(Effect.map((response) => priced({
    title: response.value.title.trim().slice(0, 200) || input.topic.slice(0, 200),
    objective: response.value.objective.trim().slice(0, 2000),
    key_questions: response.value.key_questions.map((q) => q.trim()).filter((q) => q !== "").slice(0, 10)
  }, response.usage, cost)))

const OutlineSchema = Schema.Struct({
  sections: Schema.Array(Schema.Struct({
    title: Schema.String,
    questions: Schema.Array(Schema.String),
    queries: Schema.Array(Schema.String)
  }))
})

/** Clamps a proposed outline to the depth's budget and numbers its sections. */
export const normalizeOutline = (title: string, proposed: typeof OutlineSchema.Type, budget: DepthBudget): Outline => ({
  title,
  sections: proposed.sections
    .map((section) => ({
      title: section.title.trim().slice(0, 200),
      questions: section.questions.map((q) => q.trim()).filter((q) => q !== "").slice(0, 5),
      queries: [...new Set(section.queries.map((q) => q.trim().slice(0, 500)).filter((q) => q !== ""))].slice(0, budget.queriesPerSection)
    }))
    .filter((section) => section.title !== "")
    .slice(0, budget.sections)
    .map((section, index) => ({
      section_id: `s${index + 1}`,
      title: section.title,
      questions: section.questions,
      // A section the model gave no query for is searched by its title.
      queries: section.queries.length > 0 ? section.queries : [section.title]
    }))
})

export const planOutline = (
  model: LanguageModel.LanguageModel,
  cost: CostOf,
  input: { readonly topic: string; readonly brief: Brief; readonly budget: DepthBudget } & Derivation
): Effect.Effect<Priced<Outline>, AiError.AiError> =>
  model.generateObject({
    objectName: "research_outline",
    schema: OutlineSchema,
    prompt: [
      {
        role: "system",
        content: `You outline research reports. Propose at most ${input.budget.sections} sections; for each give a title, ` +
          `the questions it answers, and at most ${input.budget.queriesPerSection} web search queries that would find sources. ` +
          "Answer with JSON {\"sections\": [{\"title\", \"questions\": [...], \"queries\": [...]}]}."
      },
      {
        role: "user",
        content: `Topic: ${input.topic}\nTitle: ${input.brief.title}\nObjective: ${input.brief.objective}\n` +
          `Key questions:\n${input.brief.key_questions.map((q) => `- ${q}`).join("\n")}` + derivationText(input, "plan")
      }
    ]
  }).pipe(Effect.map((response) => priced(normalizeOutline(input.brief.title, response.value, input.budget), response.usage, cost)))

/** Applies the edits of an `approve_with_edits` answer; plain-string edits come back as notes. */
export const applyOutlineEdits = (
  outline: Outline,
  edits: ReadonlyArray<OutlineEdit>,
  budget: DepthBudget
): { readonly outline: Outline; readonly notes: ReadonlyArray<string>; readonly unknownSections: ReadonlyArray<string> } => {
  let sections: Array<OutlineSection> = [...outline.sections]
  const notes: Array<string> = []
  const unknownSections: Array<string> = []
  let next = Math.max(0, ...outline.sections.map((s) => Number(s.section_id.slice(1)) || 0)) + 1
  const find = (id: string) => {
    const found = sections.some((s) => s.section_id === id)
    if (!found) unknownSections.push(id)
    return found
  }
  for (const edit of edits) {
    if (typeof edit === "string") {
      notes.push(edit)
      continue
    }
    switch (edit.op) {
      case "add_section":
        sections.push({
          section_id: `s${next++}`,
          title: edit.title,
          questions: edit.questions ?? [],
          queries: (edit.queries ?? [edit.title]).slice(0, budget.queriesPerSection)
        })
        break
      case "remove_section":
        if (find(edit.section_id)) sections = sections.filter((s) => s.section_id !== edit.section_id)
        break
      case "rename_section":
        if (find(edit.section_id)) sections = sections.map((s) => s.section_id === edit.section_id ? { ...s, title: edit.title } : s)
        break
      case "set_queries":
        if (find(edit.section_id)) {
          sections = sections.map((s) => s.section_id === edit.section_id ? { ...s, queries: edit.queries.slice(0, budget.queriesPerSection) } : s)
        }
        break
    }
  }
  return { outline: { ...outline, sections }, notes, unknownSections }
}

export interface GatherOutcome {
  readonly sources: ReadonlyArray<Source>
  /** Pages that could not be read, and searches that found nothing. */
  readonly blockers: ReadonlyArray<string>
}

/**
 * Searches the section's queries and reads the best pages not already used by another section
 * (`known` holds their canonical URLs), up to the budget. Candidates are taken in rank order;
 * a page that cannot be read is skipped and named in the blockers.
 */
export const gatherSection = (
  search: WebSearch["Service"],
  reader: Reader["Service"],
  input: {
    readonly section: OutlineSection
    readonly budget: DepthBudget
    readonly whitelist: ReadonlyArray<string> | null
    readonly blacklist: ReadonlyArray<string> | null
    readonly known: ReadonlySet<string>
    readonly nextSourceId: () => string
  }
): Effect.Effect<GatherOutcome> =>
  Effect.gen(function*() {
    const request = yield* decodeWebSearchRequest({
      queries: input.section.queries,
      max_results_per_query: Math.max(5, input.budget.sourcesPerSection * 2),
      ...(input.whitelist !== null && input.whitelist.length > 0 ? { site_whitelist: input.whitelist } : {}),
      ...(input.blacklist !== null && input.blacklist.length > 0 ? { site_blacklist: input.blacklist } : {}),
      objective: [input.section.title, ...input.section.questions].join(". ").slice(0, 2000)
    }).pipe(Effect.orDie)
    const found = yield* search.run(request).pipe(Effect.orDie)
    const blockers: Array<string> = []
    if (found.results.length === 0) blockers.push(`no search results for: ${input.section.queries.join(" | ")}`)
    // Pages already used (by another section, or by this one) by the URL they were read from:
    // a redirect can land two search hits on one page.
    const used = new Set(input.known)
    const whitelist = (input.whitelist ?? []).map(normalizeSite).filter((site) => site !== "")
    const blacklist = (input.blacklist ?? []).map(normalizeSite).filter((site) => site !== "")
    const sources: Array<Source> = []
    const wanted = input.budget.sourcesPerSection
    let next = 0
    // Pages are read a batch at a time, as many as are still wanted, in parallel; their outcomes
    // are taken in rank order, so the section gets the same pages as reading one by one would.
    while (sources.length < wanted && next < found.results.length) {
      const batch: Array<typeof found.results[number]> = []
      while (batch.length < wanted - sources.length && next < found.results.length) {
        const candidate = found.results[next++]!
        if (!used.has(canonicalUrl(candidate.url))) batch.push(candidate)
      }
      // Each read waits for its fair share of page reads (src/fairness/fair-queue.ts).
      const reads = yield* Effect.forEach(batch, (candidate) => Effect.result(reader.read(candidate.url).pipe(fairly("page_read"))), { concurrency: "unbounded" })
      for (const [index, read] of reads.entries()) {
        const candidate = batch[index]!
        if (read._tag === "Failure" || read.success.text.trim().length < 200) {
          blockers.push(`unreadable: ${candidate.url}`)
          continue
        }
        const page = read.success
        const landed = canonicalUrl(page.finalUrl)
        if (used.has(landed)) continue
        used.add(landed)
        // The domain lists hold for the page actually read, not only for the search hit.
        if ((whitelist.length > 0 && !urlMatchesAnySite(page.finalUrl, whitelist)) || (blacklist.length > 0 && urlMatchesAnySite(page.finalUrl, blacklist))) {
          blockers.push(`redirected outside the domain lists: ${candidate.url} -> ${page.finalUrl}`)
          continue
        }
        sources.push({
          id: input.nextSourceId(),
          url: page.finalUrl,
          title: page.title || candidate.title,
          site: hostOf(page.finalUrl) ?? page.finalUrl,
          text: page.text.slice(0, STORED_SOURCE_CHARS)
        })
      }
    }
    return { sources, blockers }
  })

const ClaimsSchema = Schema.Struct({
  claims: Schema.Array(Schema.Struct({
    text: Schema.String,
    source_ids: Schema.Array(Schema.String),
    contested: Schema.optionalKey(Schema.Boolean)
  }))
})

/** Confidence from independent support: sites, not pages, so one site quoted twice counts once. */
export const confidenceOf = (sites: ReadonlyArray<string>, contested: boolean): Confidence =>
  contested ? "low" : new Set(sites).size >= 2 ? "high" : "medium"

export const crosscheckSection = (
  model: LanguageModel.LanguageModel,
  cost: CostOf,
  input: { readonly section: OutlineSection; readonly sources: ReadonlyArray<Source> }
): Effect.Effect<Priced<ReadonlyArray<Claim>>, AiError.AiError> =>
  model.generateObject({
    objectName: "section_claims",
    schema: ClaimsSchema,
    prompt: [
      {
        role: "system",
        content: "You fact-check research notes. From the sources, list the claims that answer the section's questions. " +
          "Each claim cites the ids of every source that states it; mark a claim contested when sources disagree on it. " +
          "Use only what the sources say. Answer with JSON {\"claims\": [{\"text\", \"source_ids\": [...], \"contested\": false}]}."
      },
      {
        role: "user",
        content: `Section: ${input.section.title}\nQuestions:\n${input.section.questions.map((q) => `- ${q}`).join("\n")}\n\nSources:\n` +
          input.sources.map((s) => `[${s.id}] ${s.title} (${s.url})\n${s.text.slice(0, SOURCE_CHARS)}`).join("\n\n")
      }
    ]
  }).pipe(Effect.map((response) => {
    const byId = new Map(input.sources.map((s) => [s.id, s]))
    const claims: Array<Claim> = []
    for (const claim of response.value.claims) {
      const cited = [...new Set(claim.source_ids.map((id) => id.trim()).filter((id) => byId.has(id)))]
      if (cited.length === 0 || claim.text.trim() === "") continue
      claims.push({
        text: claim.text.trim(),
        source_ids: cited,
        confidence: confidenceOf(cited.map((id) => byId.get(id)!.site), claim.contested === true)
      })
    }
    return priced<ReadonlyArray<Claim>>(claims, response.usage, cost)
  }))

/** Removes [n] markers that do not name one of `allowed` (the model may invent some). */
export const keepKnownCitations = (markdown: string, allowed: ReadonlySet<number>): string =>
  markdown
    .replace(/\[(\d{1,4})\](?!\()/g, (marker, n: string) => allowed.has(Number(n)) ? marker : "")
    .replace(/[ \t]+([.,;:])/g, "$1")
    .replace(/([^\s]) {2,}/g, "$1 ")

export const writeSection = (
  model: LanguageModel.LanguageModel,
  cost: CostOf,
  input: {
    readonly section: OutlineSection
    readonly claims: ReadonlyArray<Claim>
    /** Citation number of each source id (numbered over the whole report). */
    readonly numbers: ReadonlyMap<string, number>
    readonly audience: string | null
    readonly notes: ReadonlyArray<string>
  } & Derivation
): Effect.Effect<Priced<string>, AiError.AiError> =>
  model.generateText({
    prompt: [
      {
        role: "system",
        content: "You write one section of a research report in Markdown (no heading: it is added for you). " +
          "Use only the claims given; after each sentence that uses a claim put its citation markers exactly as given, like [3]. " +
          "Say plainly when confidence is low. Two to five short paragraphs."
      },
      {
        role: "user",
        content: `Section: ${input.section.title}\nAudience: ${input.audience ?? "a general technical reader"}\n` +
          (input.notes.length > 0 ? `Reviewer notes:\n${input.notes.map((n) => `- ${n}`).join("\n")}\n` : "") +
          `Claims:\n` +
          input.claims.map((c) => `- (${c.confidence}) ${c.text} ${c.source_ids.map((id) => `[${input.numbers.get(id)}]`).join("")}`).join("\n") +
          derivationText(input, "write")
      }
    ]
  }).pipe(Effect.map((response) => {
    const allowed = new Set(input.claims.flatMap((c) => c.source_ids.map((id) => input.numbers.get(id)!)))
    return priced(keepKnownCitations(response.text.trim(), allowed), response.usage, cost)
  }))

/**
 * A section written without the model (after the cost cap): the most relevant sentences of each
 * source, cited.
 */
export const extractiveSection = (
  section: OutlineSection,
  sources: ReadonlyArray<Source>,
  numbers: ReadonlyMap<string, number>
): string =>
  sources
    .map((s) => `${extractiveSummary(s.text, [section.title, ...section.questions].join(" "), 2)} [${numbers.get(s.id)}]`)
    .join("\n\n")
