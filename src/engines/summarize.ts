/**
 * Summaries of the top results (`summarize: true`): each page is read with the shared Reader and
 * summarized for the objective (or the queries) by the configured model; without a model, or
 * when the model fails on a page, an extractive summary is used: the page's sentences most
 * relevant to the focus by BM25, in page order.
 */
import { Effect } from "effect"
import { type AiError, LanguageModel } from "effect/ai"
import type { ReadResult } from "../reader/reader.ts"
import { bm25Scores, tokenize } from "./bm25.ts"

export const EXTRACTIVE_SENTENCES = 3
/** Characters of page text given to the model. */
const MODEL_INPUT_CHARS = 12_000

/** Splits text into sentences: at line breaks, and after . ! ? followed by a space and an upper-case letter, digit or quote. */
export const splitSentences = (text: string): Array<string> =>
  text
    .split(/\n+/)
    .flatMap((line) => line.split(/(?<=[.!?…。！？])\s+(?=[\p{Lu}\p{N}"“'(\[])/u))
    .map((sentence) => sentence.replace(/\s+/g, " ").trim())
    .filter((sentence) => sentence.length >= 20 && tokenize(sentence).length >= 4)

/**
 * The `maxSentences` sentences of `text` that score highest against `focus` (BM25), joined in
 * their original order. With no overlap at all, the first sentences (the lead) are used.
 */
export const extractiveSummary = (text: string, focus: string, maxSentences = EXTRACTIVE_SENTENCES): string => {
  const sentences = splitSentences(text)
  if (sentences.length === 0) return text.replace(/\s+/g, " ").trim().slice(0, 400)
  const scores = bm25Scores(focus, sentences)
  const ranked = sentences
    .map((sentence, index) => ({ sentence, index, score: scores[index] ?? 0 }))
    .sort((a, b) => b.score - a.score || a.index - b.index)
  const picked = ranked[0] !== undefined && ranked[0].score > 0
    ? ranked.slice(0, maxSentences).filter((entry) => entry.score > 0)
    : ranked.slice().sort((a, b) => a.index - b.index).slice(0, maxSentences)
  return picked
    .sort((a, b) => a.index - b.index)
    .map((entry) => entry.sentence.length > 600 ? `${entry.sentence.slice(0, 600)}…` : entry.sentence)
    .join(" ")
}

/** A short summary of the page for the focus, written by the model. */
export const modelSummary = (
  model: LanguageModel.LanguageModel,
  page: ReadResult,
  focus: string
): Effect.Effect<string, AiError.AiError> =>
  Effect.map(
    model.generateText({
      prompt: [
        {
          role: "system",
          content: "You summarize web pages for a search result list. Write at most three sentences, " +
            "plain text, no preamble, using only facts stated on the page, focused on the objective."
        },
        {
          role: "user",
          content: `Objective: ${focus}\n\nPage title: ${page.title}\nURL: ${page.finalUrl}\n\nPage content:\n` +
            page.text.slice(0, MODEL_INPUT_CHARS)
        }
      ]
    }),
    (response) => response.text.trim()
  )

export interface PageSummary {
  readonly summary: string
  readonly method: "model" | "extractive"
}

/** Summarizes one page: the model if given and it answers with text, else extractively. */
export const summarizePage = (
  page: ReadResult,
  focus: string,
  model: LanguageModel.LanguageModel | undefined
): Effect.Effect<PageSummary> => {
  const extractive = Effect.sync((): PageSummary => ({ summary: extractiveSummary(page.text, focus), method: "extractive" }))
  if (model === undefined) return extractive
  return modelSummary(model, page, focus).pipe(
    Effect.flatMap((summary) => summary === "" ? extractive : Effect.succeed<PageSummary>({ summary, method: "model" })),
    Effect.catch((error) =>
      Effect.logWarning(`model summary failed for ${page.finalUrl}; using an extractive one: ${error.message}`).pipe(
        Effect.andThen(extractive)
      )
    )
  )
}
