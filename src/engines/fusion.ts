/**
 * Merging the ranked lists of every (engine, query) pair into one list: de-duplication by
 * canonical URL, then weighted Reciprocal Rank Fusion,
 *
 *   score(page) = Σ over lists L that contain the page  weight(engine of L) / (k + rank_L(page))
 *
 * with k = 60, so a page several engines (or several queries) agree on rises above a page only
 * one list ranks slightly higher.
 */
import type { EngineHit } from "./engine.ts"
import { canonicalUrl, urlMatchesAnySite } from "./canonical-url.ts"

/** A hit with the 1-based rank its engine gave it (kept when filters drop hits above it). */
export interface RankedHit extends EngineHit {
  readonly rank: number
}

export interface RankedList {
  readonly engine: string
  readonly query: string
  /** In the engine's order. */
  readonly hits: ReadonlyArray<RankedHit>
}

/** Ranks hits in the order the engine returned them (rank = index + 1). */
export const rankInOrder = (hits: ReadonlyArray<EngineHit>): Array<RankedHit> =>
  hits.map((hit, index) => ({ ...hit, rank: index + 1 }))

export interface FusedHit {
  readonly canonicalUrl: string
  /** The URL as the engine gave it, from the best-ranked copy. */
  readonly url: string
  /** The longest title and snippet among the copies ("richest"). */
  readonly title: string
  readonly snippet: string
  readonly score: number
  /** Best rank any engine gave, and the engine and query of that rank. */
  readonly originalRank: number
  readonly sourceEngine: string
  readonly sourceQuery: string
  /** Engine hits merged into this one (1 when only one list had it). */
  readonly dedupCount: number
  readonly engines: ReadonlyArray<string>
}

export interface FilterOptions {
  /** Normalized sites; when non-empty only their pages (and subdomains) are kept. */
  readonly siteWhitelist: ReadonlyArray<string>
  /** Normalized sites whose pages (and subdomains) never appear. */
  readonly siteBlacklist: ReadonlyArray<string>
  /** Hits with a known publication time older than this (ms) are dropped. */
  readonly publishedAfter: number | undefined
}

/**
 * Whether a browser would open the URL as a web page: it parses (the WHATWG parser a browser
 * uses, so `java\tscript:` and leading controls read as they would there) with scheme http or
 * https. Anything else (javascript:, data:, vbscript:, file:, relative) must not reach a client
 * that renders results as links.
 */
const isWebUrl = (url: string): boolean => {
  if (!URL.canParse(url)) return false
  const protocol = new URL(url).protocol
  return protocol === "http:" || protocol === "https:"
}

/** Keeps web pages only (isWebUrl), then the site and freshness rules, for engines that could not apply them themselves. */
export const keepHit = (hit: EngineHit, options: FilterOptions): boolean => {
  if (!isWebUrl(hit.url)) return false
  if (options.siteBlacklist.length > 0 && urlMatchesAnySite(hit.url, options.siteBlacklist)) return false
  if (options.siteWhitelist.length > 0 && !urlMatchesAnySite(hit.url, options.siteWhitelist)) return false
  if (options.publishedAfter !== undefined && hit.publishedAt !== undefined && hit.publishedAt < options.publishedAfter) {
    return false
  }
  return true
}

interface Accumulator {
  canonicalUrl: string
  url: string
  title: string
  snippet: string
  score: number
  originalRank: number
  sourceEngine: string
  sourceQuery: string
  /** Position of the list of the best rank, to break rank ties by engine and query order. */
  sourceOrder: number
  dedupCount: number
  engines: Set<string>
  firstSeen: number
}

/**
 * De-duplicates and fuses. `lists` should be in a stable order (queries in request order,
 * engines in request order) because it breaks ties. Returns hits by descending score; equal
 * scores keep the better original rank, then first appearance.
 */
export const fuseRankedLists = (
  lists: ReadonlyArray<RankedList>,
  options: { readonly k: number; readonly weights: Readonly<Record<string, number>> }
): Array<FusedHit> => {
  const byKey = new Map<string, Accumulator>()
  let seen = 0
  lists.forEach((list, listIndex) => {
    const weight = options.weights[list.engine] ?? 1
    // An engine that lists the same page twice counts once per list, at its best rank.
    const seenInList = new Set<string>()
    list.hits.forEach((hit) => {
      const rank = hit.rank
      const key = canonicalUrl(hit.url)
      const existing = byKey.get(key)
      const contributes = !seenInList.has(key)
      seenInList.add(key)
      const score = contributes ? weight / (options.k + rank) : 0
      if (existing === undefined) {
        byKey.set(key, {
          canonicalUrl: key,
          url: hit.url,
          title: hit.title,
          snippet: hit.snippet,
          score,
          originalRank: rank,
          sourceEngine: list.engine,
          sourceQuery: list.query,
          sourceOrder: listIndex,
          dedupCount: 1,
          engines: new Set([list.engine]),
          firstSeen: seen++
        })
        return
      }
      existing.score += score
      existing.dedupCount += 1
      existing.engines.add(list.engine)
      if (hit.title.length > existing.title.length) existing.title = hit.title
      if (hit.snippet.length > existing.snippet.length) existing.snippet = hit.snippet
      if (rank < existing.originalRank || (rank === existing.originalRank && listIndex < existing.sourceOrder)) {
        existing.originalRank = rank
        existing.sourceEngine = list.engine
        existing.sourceQuery = list.query
        existing.sourceOrder = listIndex
        existing.url = hit.url
      }
    })
  })
  return [...byKey.values()]
    .sort((a, b) => b.score - a.score || a.originalRank - b.originalRank || a.firstSeen - b.firstSeen)
    .map((acc) => ({
      canonicalUrl: acc.canonicalUrl,
      url: acc.url,
      title: acc.title,
      snippet: acc.snippet,
      score: acc.score,
      originalRank: acc.originalRank,
      sourceEngine: acc.sourceEngine,
      sourceQuery: acc.sourceQuery,
      dedupCount: acc.dedupCount,
      engines: [...acc.engines]
    }))
}
