/**
 * Okapi BM25, the lexical relevance used to re-rank hits and to pick summary sentences when no
 * model is configured. Tokens are Unicode letters/digits, lower-cased, with a light English
 * stemming and stop-word list so "engines" meets "engine" and "the" counts for nothing.
 */

const stopWords = new Set([
  "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "has", "have", "he", "her", "his", "how",
  "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "she", "so", "than",
  "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "was", "we", "were",
  "what", "when", "where", "which", "who", "why", "will", "with", "would", "you", "your", "do", "does", "did", "can",
  "about", "also", "been", "being", "more", "most", "some", "such", "only", "other", "any", "all", "up", "out"
])

/** Strips the commonest English inflections; good enough to match plural and verb forms. */
const stem = (word: string): string => {
  if (word.length <= 3 || /\d/.test(word)) return word
  if (word.endsWith("ies") && word.length > 4) return `${word.slice(0, -3)}y`
  if (word.endsWith("sses")) return word.slice(0, -2)
  if (word.endsWith("ing") && word.length > 5) return word.slice(0, -3)
  if (word.endsWith("ed") && word.length > 4) return word.slice(0, -2)
  if (word.endsWith("es") && /(ch|sh|x|z|ss)es$/.test(word)) return word.slice(0, -2)
  if (word.endsWith("s") && !word.endsWith("ss") && !word.endsWith("us") && !word.endsWith("is")) return word.slice(0, -1)
  return word
}

const tokenPattern = /[\p{L}\p{N}]+/gu

export const tokenize = (text: string): Array<string> => {
  const tokens: Array<string> = []
  for (const match of text.toLowerCase().matchAll(tokenPattern)) {
    const word = match[0]
    if (!stopWords.has(word)) tokens.push(stem(word))
  }
  return tokens
}

export interface Bm25Options {
  readonly k1?: number
  readonly b?: number
}

/**
 * BM25 score of every document against the query (same order as `documents`). The collection
 * statistics (document frequency, average length) come from `documents` themselves.
 */
export const bm25Scores = (query: string, documents: ReadonlyArray<string>, options: Bm25Options = {}): Array<number> => {
  const k1 = options.k1 ?? 1.2
  const b = options.b ?? 0.75
  const queryTerms = [...new Set(tokenize(query))]
  const docs = documents.map((document) => {
    const counts = new Map<string, number>()
    const tokens = tokenize(document)
    for (const token of tokens) counts.set(token, (counts.get(token) ?? 0) + 1)
    return { counts, length: tokens.length }
  })
  if (docs.length === 0 || queryTerms.length === 0) return docs.map(() => 0)
  const averageLength = docs.reduce((sum, doc) => sum + doc.length, 0) / docs.length || 1
  const idf = new Map<string, number>()
  for (const term of queryTerms) {
    const df = docs.reduce((n, doc) => n + (doc.counts.has(term) ? 1 : 0), 0)
    // The "+1" form keeps idf positive for terms present in most documents.
    idf.set(term, Math.log(1 + (docs.length - df + 0.5) / (df + 0.5)))
  }
  return docs.map((doc) => {
    let score = 0
    for (const term of queryTerms) {
      const tf = doc.counts.get(term)
      if (tf === undefined) continue
      score += idf.get(term)! * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * doc.length / averageLength))
    }
    return score
  })
}
