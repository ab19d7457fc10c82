/**
 * Google Programmable Search (Custom Search JSON API): `GET {base}/customsearch/v1?key=…&cx=…&q=…`.
 * `num` is at most 10 per call, so larger counts are fetched as consecutive pages (`start`).
 * Maps `dateRestrict` (d1|w1|m1|y1), `lr` (lang_xx), one whitelisted or one blacklisted site
 * through `siteSearch`/`siteSearchFilter` and longer lists through the query syntax.
 */
import { Effect, Redacted, Schema } from "effect"
import { type HttpClient, HttpClientRequest } from "effect/http"
import type { Freshness } from "../domain/web-search.ts"
import { cleanText, type EngineQuery, executeJson, OptionalText, primaryLanguage, type SearchEngine, siteOperators } from "./engine.ts"

const GoogleResponse = Schema.Struct({
  items: Schema.optionalKey(Schema.Array(Schema.Struct({
    title: OptionalText,
    link: Schema.String,
    snippet: OptionalText
  })))
})

const googleFreshness: Record<Freshness, string> = { day: "d1", week: "w1", month: "m1", year: "y1" }

export const makeGoogle = (
  client: HttpClient.HttpClient,
  options: { readonly apiKey: Redacted.Redacted<string>; readonly cx: string; readonly baseUrl: string }
): SearchEngine => ({
  name: "google",
  search: Effect.fnUntraced(function*(query: EngineQuery) {
    const base: Record<string, string> = { key: Redacted.value(options.apiKey), cx: options.cx }
    const whitelist = query.siteWhitelist
    const blacklist = query.siteBlacklist
    if (whitelist.length === 1 && blacklist.length === 0) {
      base.q = query.query
      base.siteSearch = whitelist[0]!
      base.siteSearchFilter = "i"
    } else if (whitelist.length === 0 && blacklist.length === 1) {
      base.q = query.query
      base.siteSearch = blacklist[0]!
      base.siteSearchFilter = "e"
    } else {
      base.q = siteOperators(query)
    }
    if (query.freshness !== undefined) base.dateRestrict = googleFreshness[query.freshness]
    const language = primaryLanguage(query.language)
    if (language !== undefined) {
      base.lr = `lang_${language}`
      base.hl = language
    }
    // The API serves at most 100 results, 10 per page.
    const wanted = Math.min(query.count, 100)
    const pages = Array.from({ length: Math.ceil(wanted / 10) }, (_, index) => index)
    const responses = yield* Effect.forEach(pages, (page) =>
      executeJson(
        "google",
        client,
        HttpClientRequest.get(`${options.baseUrl}/customsearch/v1`).pipe(
          HttpClientRequest.setUrlParams({
            ...base,
            num: String(Math.min(10, wanted - page * 10)),
            ...(page > 0 ? { start: String(page * 10 + 1) } : {})
          }),
          HttpClientRequest.acceptJson
        ),
        GoogleResponse
      ), { concurrency: "unbounded" })
    const hits = responses.flatMap((response) => response.items ?? []).slice(0, query.count).map((item) => ({
      title: cleanText(item.title),
      url: item.link,
      snippet: cleanText(item.snippet)
    }))
    return { hits }
  })
})
