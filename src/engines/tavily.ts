/**
 * Tavily: `POST {base}/search` with `Authorization: Bearer <key>`. Maps `max_results` (at most
 * 20), `time_range`, `include_domains` and `exclude_domains`; asks for the short `answer`.
 * Tavily has no language parameter.
 */
import { Effect, Redacted, Schema } from "effect"
import { type HttpClient, HttpClientRequest } from "effect/http"
import { cleanText, type EngineQuery, executeJson, OptionalText, parseDate, type SearchEngine } from "./engine.ts"

const TavilyResponse = Schema.Struct({
  answer: OptionalText,
  results: Schema.optionalKey(Schema.Array(Schema.Struct({
    title: OptionalText,
    url: Schema.String,
    content: OptionalText,
    published_date: OptionalText
  })))
})

export const makeTavily = (
  client: HttpClient.HttpClient,
  options: { readonly apiKey: Redacted.Redacted<string>; readonly baseUrl: string }
): SearchEngine => ({
  name: "tavily",
  search: Effect.fnUntraced(function*(query: EngineQuery) {
    const body: Record<string, unknown> = {
      query: query.query,
      max_results: Math.min(query.count, 20),
      search_depth: "basic",
      topic: "general",
      include_answer: true
    }
    if (query.freshness !== undefined) body.time_range = query.freshness
    if (query.siteWhitelist.length > 0) body.include_domains = query.siteWhitelist
    if (query.siteBlacklist.length > 0) body.exclude_domains = query.siteBlacklist
    const response = yield* executeJson(
      "tavily",
      client,
      HttpClientRequest.post(`${options.baseUrl}/search`).pipe(
        HttpClientRequest.bearerToken(Redacted.value(options.apiKey)),
        HttpClientRequest.acceptJson,
        HttpClientRequest.bodyJsonUnsafe(body)
      ),
      TavilyResponse
    )
    const hits = (response.results ?? []).slice(0, query.count).map((result) => ({
      title: cleanText(result.title),
      url: result.url,
      snippet: cleanText(result.content),
      publishedAt: parseDate(result.published_date)
    }))
    const answer = cleanText(response.answer)
    return { hits, answer: answer === "" ? undefined : answer }
  })
})
