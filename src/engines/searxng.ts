/**
 * SearXNG over its JSON search API: `GET {base}/search?q=…&format=json` (the instance must have
 * the json format enabled). Maps `language`, `time_range` (day|week|month|year) and sites through
 * the query syntax; SearXNG has no result-count parameter, so its page is cut to `count`.
 * `answers` (strings in older releases, objects with `answer` in newer ones) become the engine answer.
 */
import { Effect, Schema } from "effect"
import { type HttpClient, HttpClientRequest } from "effect/http"
import { cleanText, type EngineQuery, executeJson, OptionalText, parseDate, primaryLanguage, type SearchEngine, siteOperators } from "./engine.ts"

const SearxngResponse = Schema.Struct({
  results: Schema.optionalKey(Schema.Array(Schema.Struct({
    url: Schema.String,
    title: OptionalText,
    content: OptionalText,
    publishedDate: OptionalText
  }))),
  answers: Schema.optionalKey(Schema.Array(Schema.Union([
    Schema.String,
    Schema.Struct({ answer: Schema.String })
  ])))
})

export const makeSearxng = (client: HttpClient.HttpClient, options: { readonly baseUrl: string }): SearchEngine => ({
  name: "searxng",
  search: Effect.fnUntraced(function*(query: EngineQuery) {
    const params: Record<string, string> = { q: siteOperators(query), format: "json", pageno: "1", categories: "general" }
    const language = primaryLanguage(query.language)
    if (language !== undefined) params.language = language
    if (query.freshness !== undefined) params.time_range = query.freshness
    const body = yield* executeJson(
      "searxng",
      client,
      HttpClientRequest.get(`${options.baseUrl}/search`).pipe(
        HttpClientRequest.setUrlParams(params),
        HttpClientRequest.acceptJson
      ),
      SearxngResponse
    )
    const hits = (body.results ?? []).slice(0, query.count).map((result) => ({
      title: cleanText(result.title),
      url: result.url,
      snippet: cleanText(result.content),
      publishedAt: parseDate(result.publishedDate)
    }))
    const first = body.answers?.[0]
    const answer = first === undefined ? undefined : cleanText(typeof first === "string" ? first : first.answer)
    return { hits, answer: answer === "" ? undefined : answer }
  })
})
