/**
 * DuckDuckGo's HTML endpoint (no key): `POST {base}/html/` with form fields `q`, `kl` (region)
 * and `df` (d|w|m|y). Results are read from its markup: `a.result__a` (whose href is a redirect
 * `//duckduckgo.com/l/?uddg=<encoded target>`) and `.result__snippet`; ads (`result--ad`, links
 * through `/y.js`) are skipped. One page (about ten results); cut to `count`.
 */
import { Effect } from "effect"
import { type HttpClient, HttpClientRequest } from "effect/http"
import { EngineError, type Freshness } from "../domain/web-search.ts"
import { cleanText, type EngineHit, type EngineQuery, executeText, primaryLanguage, type SearchEngine, siteOperators, USER_AGENT } from "./engine.ts"

const ddgFreshness: Record<Freshness, string> = { day: "d", week: "w", month: "m", year: "y" }

/** DuckDuckGo regions (`kl`) for common languages; others fall back to no region. */
const ddgRegions: Record<string, string> = {
  en: "us-en", de: "de-de", fr: "fr-fr", es: "es-es", it: "it-it", nl: "nl-nl", pt: "br-pt", ru: "ru-ru",
  ja: "jp-jp", zh: "cn-zh", ko: "kr-kr", pl: "pl-pl", sv: "se-sv", da: "dk-da", fi: "fi-fi", nb: "no-no",
  no: "no-no", tr: "tr-tr", cs: "cz-cs", el: "gr-el", hu: "hu-hu", ro: "ro-ro", uk: "ua-uk", ar: "xa-ar",
  he: "il-he", vi: "vn-vi", th: "th-th", id: "id-id"
}

export const ddgRegion = (language: string | undefined): string => {
  if (language === undefined) return "wt-wt"
  const [primary, region] = language.trim().toLowerCase().split(/[-_]/, 2)
  if (primary !== undefined && region !== undefined && region.length === 2) return `${region}-${primary}`
  return (primary !== undefined ? ddgRegions[primary] : undefined) ?? "wt-wt"
}

const entities: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: " ", "#39": "'" }

export const decodeEntities = (text: string): string =>
  text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+\d*);/gi, (whole, name: string) => {
    if (name[0] === "#") {
      const code = name[1] === "x" || name[1] === "X" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10)
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
    }
    return entities[name.toLowerCase()] ?? whole
  })

const stripTags = (html: string): string => cleanText(decodeEntities(html.replace(/<[^>]*>/g, " ")))

const attribute = (tag: string, name: string): string | undefined => {
  const match = new RegExp(`\\b${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)')`, "i").exec(tag)
  return match === null ? undefined : decodeEntities(match[1] ?? match[2] ?? "")
}

/** The target of a result link: the `uddg` parameter of a redirect link, else the link itself. */
export const resultTarget = (href: string): string | undefined => {
  let url: URL
  try {
    url = new URL(href.startsWith("//") ? `https:${href}` : href, "https://duckduckgo.com")
  } catch {
    return undefined
  }
  const isDdg = url.hostname === "duckduckgo.com" || url.hostname.endsWith(".duckduckgo.com")
  if (isDdg && url.pathname === "/y.js") return undefined // an ad
  if (isDdg && url.pathname.startsWith("/l/")) {
    const target = url.searchParams.get("uddg")
    return target === null || target === "" ? undefined : target
  }
  if (isDdg) return undefined
  return url.protocol === "http:" || url.protocol === "https:" ? url.toString() : undefined
}

const resultLink = /<a\b([^>]*\bclass\s*=\s*"[^"]*\bresult__a\b[^"]*"[^>]*)>([\s\S]*?)<\/a>/gi
const snippetElement = /<(a|div|td|span)\b[^>]*\bclass\s*=\s*"[^"]*\bresult__snippet\b[^"]*"[^>]*>([\s\S]*?)<\/\1>/i

/** Reads the organic results out of a DuckDuckGo HTML result page. */
export const parseDuckDuckGoHtml = (html: string): Array<EngineHit> => {
  const links = [...html.matchAll(resultLink)]
  const hits: Array<EngineHit> = []
  links.forEach((match, index) => {
    const start = match.index
    const end = links[index + 1]?.index ?? html.length
    // This result's container opens between the previous result link and this one; ads are marked on it.
    const previous = links[index - 1]
    const opening = html.slice(previous === undefined ? 0 : previous.index + previous[0].length, start)
    if (/\bresult--ad\b/.test(opening)) return
    const href = attribute(match[1]!, "href")
    const url = href === undefined ? undefined : resultTarget(href)
    if (url === undefined) return
    const snippet = snippetElement.exec(html.slice(start + match[0].length, end))
    hits.push({ title: stripTags(match[2]!), url, snippet: snippet === null ? "" : stripTags(snippet[2]!) })
  })
  return hits
}

export const makeDuckDuckGo = (client: HttpClient.HttpClient, options: { readonly baseUrl: string }): SearchEngine => ({
  name: "duckduckgo",
  search: Effect.fnUntraced(function*(query: EngineQuery) {
    const form: Record<string, string> = { q: siteOperators(query), b: "", kl: ddgRegion(query.language) }
    if (query.freshness !== undefined) form.df = ddgFreshness[query.freshness]
    const language = primaryLanguage(query.language)
    const html = yield* executeText(
      "duckduckgo",
      client,
      HttpClientRequest.post(`${options.baseUrl}/html/`).pipe(
        HttpClientRequest.bodyUrlParams(form),
        HttpClientRequest.setHeaders({
          "User-Agent": USER_AGENT,
          Accept: "text/html,application/xhtml+xml",
          ...(language !== undefined ? { "Accept-Language": language } : {})
        })
      )
    )
    const hits = parseDuckDuckGoHtml(html)
    // A bot challenge comes back as 200 with no results and an "anomaly" form.
    if (hits.length === 0 && /anomaly-modal|challenge-form|\/anomaly\.js/i.test(html)) {
      return yield* new EngineError({ engine: "duckduckgo", message: "duckduckgo answered with a bot challenge" })
    }
    return { hits: hits.slice(0, query.count) }
  })
})
