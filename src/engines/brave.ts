/**
 * Brave Search API: `GET {base}/res/v1/web/search` with the key in `X-Subscription-Token`.
 * Maps `count` (at most 20), `freshness` (pd|pw|pm|py), `search_lang` (Brave's own codes; an
 * unknown code would be rejected with 422, so only known ones are sent) and sites through the query.
 */
import { Effect, Redacted, Schema } from "effect"
import { type HttpClient, HttpClientRequest } from "effect/http"
import type { Freshness } from "../domain/web-search.ts"
import { cleanText, type EngineQuery, executeJson, OptionalText, parseDate, type SearchEngine, siteOperators } from "./engine.ts"

const BraveResponse = Schema.Struct({
  web: Schema.optionalKey(Schema.Struct({
    results: Schema.optionalKey(Schema.Array(Schema.Struct({
      title: OptionalText,
      url: Schema.String,
      description: OptionalText,
      age: OptionalText,
      page_age: OptionalText,
      extra_snippets: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String)))
    })))
  }))
})

const braveFreshness: Record<Freshness, string> = { day: "pd", week: "pw", month: "pm", year: "py" }

const braveLanguages = new Set([
  "ar", "eu", "bn", "bg", "ca", "zh-hans", "zh-hant", "hr", "cs", "da", "nl", "en", "en-gb", "et", "fi", "fr", "gl",
  "de", "gu", "he", "hi", "hu", "is", "it", "jp", "kn", "ko", "lv", "lt", "ms", "ml", "mr", "nb", "pl", "pt-br",
  "pt-pt", "pa", "ro", "ru", "sr", "sk", "sl", "es", "sv", "ta", "te", "th", "tr", "uk", "vi"
])

/** Brave's `search_lang` for a BCP 47 tag, or undefined when Brave has no such language. */
export const braveLanguage = (language: string | undefined): string | undefined => {
  if (language === undefined) return undefined
  const tag = language.trim().toLowerCase().replace(/_/g, "-")
  const primary = tag.split("-", 1)[0]!
  const candidates = primary === "ja"
    ? ["jp"]
    : primary === "zh"
    ? [tag.includes("tw") || tag.includes("hk") || tag.includes("hant") ? "zh-hant" : "zh-hans"]
    : primary === "pt"
    ? [tag.includes("pt-pt") ? "pt-pt" : "pt-br"]
    : primary === "no" || primary === "nn"
    ? ["nb"]
    : [tag, primary]
  return candidates.find((candidate) => braveLanguages.has(candidate))
}

export const makeBrave = (
  client: HttpClient.HttpClient,
  options: { readonly apiKey: Redacted.Redacted<string>; readonly baseUrl: string }
): SearchEngine => ({
  name: "brave",
  search: Effect.fnUntraced(function*(query: EngineQuery) {
    const params: Record<string, string> = { q: siteOperators(query), count: String(Math.min(query.count, 20)) }
    if (query.freshness !== undefined) params.freshness = braveFreshness[query.freshness]
    const language = braveLanguage(query.language)
    if (language !== undefined) params.search_lang = language
    const body = yield* executeJson(
      "brave",
      client,
      HttpClientRequest.get(`${options.baseUrl}/res/v1/web/search`).pipe(
        HttpClientRequest.setUrlParams(params),
        HttpClientRequest.acceptJson,
        HttpClientRequest.setHeader("X-Subscription-Token", Redacted.value(options.apiKey))
      ),
      BraveResponse
    )
    const hits = (body.web?.results ?? []).slice(0, query.count).map((result) => ({
      title: cleanText(result.title),
      url: result.url,
      snippet: cleanText(result.description),
      publishedAt: parseDate(result.page_age) ?? parseDate(result.age)
    }))
    return { hits }
  })
})
