/**
 * Exa: `POST {base}/search` with `x-api-key`. Maps `numResults`, `includeDomains`,
 * `excludeDomains` and freshness as `startPublishedDate`; asks for highlights to use as the
 * snippet (falling back to text or summary). Exa has no language parameter.
 */
import { Effect, Redacted, Schema } from "effect"
import { type HttpClient, HttpClientRequest } from "effect/http"
import { cleanText, type EngineQuery, executeJson, freshnessDays, OptionalText, parseDate, type SearchEngine } from "./engine.ts"

const ExaResponse = Schema.Struct({
  results: Schema.optionalKey(Schema.Array(Schema.Struct({
    title: OptionalText,
    url: Schema.String,
    publishedDate: OptionalText,
    text: OptionalText,
    summary: OptionalText,
    highlights: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String)))
  })))
})

const SNIPPET_CHARS = 400

export const makeExa = (
  client: HttpClient.HttpClient,
  options: { readonly apiKey: Redacted.Redacted<string>; readonly baseUrl: string }
): SearchEngine => ({
  name: "exa",
  search: Effect.fnUntraced(function*(query: EngineQuery) {
    const body: Record<string, unknown> = {
      query: query.query,
      type: "auto",
      numResults: Math.min(query.count, 100),
      contents: { highlights: { maxCharacters: SNIPPET_CHARS } }
    }
    if (query.siteWhitelist.length > 0) body.includeDomains = query.siteWhitelist
    if (query.siteBlacklist.length > 0) body.excludeDomains = query.siteBlacklist
    if (query.freshness !== undefined) {
      body.startPublishedDate = new Date(query.now - freshnessDays[query.freshness] * 86_400_000).toISOString()
    }
    const response = yield* executeJson(
      "exa",
      client,
      HttpClientRequest.post(`${options.baseUrl}/search`).pipe(
        HttpClientRequest.setHeader("x-api-key", Redacted.value(options.apiKey)),
        HttpClientRequest.acceptJson,
        HttpClientRequest.bodyJsonUnsafe(body)
      ),
      ExaResponse
    )
    const hits = (response.results ?? []).slice(0, query.count).map((result) => {
      const highlight = cleanText(result.highlights?.join(" … "))
      const snippet = highlight !== "" ? highlight : cleanText(result.text).slice(0, SNIPPET_CHARS) || cleanText(result.summary)
      return { title: cleanText(result.title), url: result.url, snippet, publishedAt: parseDate(result.publishedDate) }
    })
    return { hits }
  })
})
