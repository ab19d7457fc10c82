/**
 * The second ranking pass (`rerank: true`): every fused hit is scored against the objective (or
 * the queries) and the final order blends that relevance with the fusion score,
 *
 *   final = (1 - α) · rrf / max(rrf) + α · relevance / max(relevance),   α = 0.7
 *
 * so engine agreement still counts but a hit that actually answers the objective moves up.
 * Relevance comes from the configured model when there is one (top hits only, to bound cost),
 * else from BM25 over title + snippet + URL words.
 */
import { Effect, Schema } from "effect"
import { type AiError, LanguageModel } from "effect/ai"
import { bm25Scores } from "./bm25.ts"
import type { FusedHit } from "./fusion.ts"

export const RERANK_RELEVANCE_WEIGHT = 0.7
/** Hits sent to the model; the rest keep their fusion order below them. */
export const MODEL_RERANK_LIMIT = 30

const documentText = (hit: FusedHit): string => {
  let path = ""
  try {
    const url = new URL(hit.url)
    path = `${url.hostname} ${decodeURIComponent(url.pathname).replace(/[/_\-.]+/g, " ")}`
  } catch {
    path = hit.url
  }
  return `${hit.title}\n${hit.snippet}\n${path}`
}

/** BM25 relevance of each hit to the focus text. */
export const lexicalRelevance = (focus: string, hits: ReadonlyArray<FusedHit>): Array<number> =>
  bm25Scores(focus, hits.map(documentText))

const RelevanceScores = Schema.Struct({
  scores: Schema.Array(Schema.Struct({ id: Schema.Int, score: Schema.Number }))
})

/** Asks the model for a 0..10 relevance per hit; ids the model leaves out score 0. */
export const modelRelevance = (
  model: LanguageModel.LanguageModel,
  focus: string,
  hits: ReadonlyArray<FusedHit>
): Effect.Effect<Array<number>, AiError.AiError> =>
  Effect.map(
    model.generateObject({
      objectName: "relevance_scores",
      schema: RelevanceScores,
      prompt: [
        {
          role: "system",
          content: "You grade web search results. For every result give a relevance score from 0 (irrelevant) " +
            "to 10 (exactly what the objective needs), judging only from its title, snippet and URL. " +
            "Answer with JSON {\"scores\": [{\"id\": <result id>, \"score\": <0-10>}]} covering every result."
        },
        {
          role: "user",
          content: `Objective: ${focus}\n\nResults:\n` +
            hits.map((hit, id) => `[${id}] ${hit.title}\n${hit.snippet.slice(0, 300)}\n${hit.url}`).join("\n\n")
        }
      ]
    }),
    (response) => {
      const scores = hits.map(() => 0)
      for (const { id, score } of response.value.scores) {
        if (id >= 0 && id < scores.length && Number.isFinite(score)) scores[id] = Math.max(0, Math.min(10, score))
      }
      return scores
    }
  )

/** Orders hits by the blend of normalized fusion score and normalized relevance. */
export const blendOrder = (hits: ReadonlyArray<FusedHit>, relevance: ReadonlyArray<number>): Array<FusedHit> => {
  const maxScore = Math.max(...hits.map((hit) => hit.score), 0)
  const maxRelevance = Math.max(...relevance, 0)
  if (maxRelevance <= 0) return [...hits]
  const blended = hits.map((hit, index) => ({
    hit,
    index,
    value: (1 - RERANK_RELEVANCE_WEIGHT) * (maxScore > 0 ? hit.score / maxScore : 0) +
      RERANK_RELEVANCE_WEIGHT * (relevance[index] ?? 0) / maxRelevance
  }))
  return blended.sort((a, b) => b.value - a.value || a.index - b.index).map((entry) => entry.hit)
}

/**
 * Re-ranks with the model when given (falling back to BM25 if it fails), else with BM25.
 * Returns the new order and which method produced it.
 */
export const rerankHits = (
  hits: ReadonlyArray<FusedHit>,
  focus: string,
  model: LanguageModel.LanguageModel | undefined
): Effect.Effect<{ readonly hits: Array<FusedHit>; readonly method: "model" | "bm25" }> => {
  const lexical = Effect.sync(() => ({ hits: blendOrder(hits, lexicalRelevance(focus, hits)), method: "bm25" as const }))
  if (model === undefined || hits.length === 0) return lexical
  const head = hits.slice(0, MODEL_RERANK_LIMIT)
  const tail = hits.slice(MODEL_RERANK_LIMIT)
  return modelRelevance(model, focus, head).pipe(
    Effect.map((relevance) => ({ hits: [...blendOrder(head, relevance), ...tail], method: "model" as const })),
    Effect.catch((error) => Effect.logWarning(`model re-rank failed; using BM25: ${error.message}`).pipe(Effect.andThen(lexical)))
  )
}
