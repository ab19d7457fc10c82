/**
 * Search engine settings. They are read once at start with every other setting, by AppConfig
 * (src/config/config.ts, which validates them); `searchSettingsFromConfig` turns those fields into the
 * SearchSettings the engines take. Tests and benches build SearchSettings directly.
 *
 * Environment (all optional):
 * - `WA_SEARXNG_URL`                               SearXNG instance (JSON format enabled)
 * - `WA_BRAVE_API_KEY`, `WA_BRAVE_BASE_URL`        Brave Search API (https://api.search.brave.com)
 * - `WA_GOOGLE_API_KEY`, `WA_GOOGLE_CX`, `WA_GOOGLE_BASE_URL`
 *                                                  Custom Search JSON API (https://www.googleapis.com)
 * - `WA_TAVILY_API_KEY`, `WA_TAVILY_BASE_URL`      Tavily (https://api.tavily.com)
 * - `WA_EXA_API_KEY`, `WA_EXA_BASE_URL`            Exa (https://api.exa.ai)
 * - `WA_DUCKDUCKGO_BASE_URL`                       DuckDuckGo HTML endpoint (https://html.duckduckgo.com)
 * - `WA_SEARCH_ENGINE_TIMEOUT_MS` (8000)           per engine call
 * - `WA_SEARCH_BREAKER_FAILURES` (3)               consecutive failures that open an engine's circuit
 * - `WA_SEARCH_BREAKER_COOLDOWN_MS` (30000)        open time before a trial call is let through
 * - `WA_SEARCH_ENGINE_WEIGHTS`                     fusion weights, e.g. `brave=1.5,exa=0.8` (default 1)
 * - `WA_SEARCH_SUMMARIZE_TOP` (5)                  results read and summarized when `summarize` is true
 * - `WA_SEARCH_CONCURRENCY` (64)                   engine calls in flight per run
 */
import { Option, type Redacted } from "effect"
import { type AppConfigShape, searchEngineDefaults } from "../config/config.ts"

export const ENGINE_NAMES = ["searxng", "brave", "google", "tavily", "exa", "duckduckgo"] as const
export type EngineName = typeof ENGINE_NAMES[number]

export interface SearchSettings {
  readonly searxng?: { readonly baseUrl: string } | undefined
  readonly brave?: { readonly apiKey: Redacted.Redacted<string>; readonly baseUrl: string } | undefined
  readonly google?: { readonly apiKey: Redacted.Redacted<string>; readonly cx: string; readonly baseUrl: string } | undefined
  readonly tavily?: { readonly apiKey: Redacted.Redacted<string>; readonly baseUrl: string } | undefined
  readonly exa?: { readonly apiKey: Redacted.Redacted<string>; readonly baseUrl: string } | undefined
  readonly duckduckgo: { readonly baseUrl: string }
  readonly engineTimeoutMs: number
  readonly breakerFailures: number
  readonly breakerCooldownMs: number
  readonly engineWeights: Readonly<Record<string, number>>
  readonly summarizeTop: number
  readonly concurrency: number
  /** Reciprocal Rank Fusion constant. */
  readonly rrfK: number
}

export const DEFAULT_BASE_URLS = {
  brave: searchEngineDefaults.braveBaseUrl,
  google: searchEngineDefaults.googleBaseUrl,
  tavily: searchEngineDefaults.tavilyBaseUrl,
  exa: searchEngineDefaults.exaBaseUrl,
  duckduckgo: searchEngineDefaults.duckduckgoBaseUrl
} as const

/** Settings with every engine unconfigured except DuckDuckGo, and the documented defaults. */
export const defaultSearchSettings: SearchSettings = {
  duckduckgo: { baseUrl: DEFAULT_BASE_URLS.duckduckgo },
  engineTimeoutMs: searchEngineDefaults.engineTimeoutMs,
  breakerFailures: searchEngineDefaults.breakerFailures,
  breakerCooldownMs: searchEngineDefaults.breakerCooldownMs,
  engineWeights: {},
  summarizeTop: searchEngineDefaults.summarizeTop,
  concurrency: searchEngineDefaults.concurrency,
  rrfK: 60
}

/** Parses `brave=1.5,exa:0.8` into a weight per engine name; malformed entries are skipped. */
export const parseEngineWeights = (text: string): Record<string, number> => {
  const weights: Record<string, number> = {}
  for (const entry of text.split(",")) {
    const [name, value] = entry.split(/[=:]/, 2).map((part) => part.trim())
    const weight = Number(value)
    if (name && value !== undefined && value !== "" && Number.isFinite(weight) && weight >= 0) {
      weights[name.toLowerCase()] = weight
    }
  }
  return weights
}

const stripSlash = (url: string) => url.replace(/\/+$/, "")

/** The AppConfig fields the search settings come from. */
export type SearchConfigFields = Pick<
  AppConfigShape,
  | "searxngUrl"
  | "braveApiKey"
  | "braveBaseUrl"
  | "googleApiKey"
  | "googleCx"
  | "googleBaseUrl"
  | "tavilyApiKey"
  | "tavilyBaseUrl"
  | "exaApiKey"
  | "exaBaseUrl"
  | "duckduckgoBaseUrl"
  | "searchEngineTimeoutMs"
  | "searchBreakerFailures"
  | "searchBreakerCooldownMs"
  | "searchEngineWeights"
  | "searchSummarizeTop"
  | "searchConcurrency"
>

/** The search settings of the application's config (AppConfig has read and validated them at start). */
export const searchSettingsFromConfig = (c: SearchConfigFields): SearchSettings => ({
  searxng: Option.match(c.searxngUrl, { onNone: () => undefined, onSome: (url) => ({ baseUrl: stripSlash(url) }) }),
  brave: Option.match(c.braveApiKey, {
    onNone: () => undefined,
    onSome: (apiKey) => ({ apiKey, baseUrl: stripSlash(c.braveBaseUrl) })
  }),
  google: Option.isSome(c.googleApiKey) && Option.isSome(c.googleCx)
    ? { apiKey: c.googleApiKey.value, cx: c.googleCx.value, baseUrl: stripSlash(c.googleBaseUrl) }
    : undefined,
  tavily: Option.match(c.tavilyApiKey, {
    onNone: () => undefined,
    onSome: (apiKey) => ({ apiKey, baseUrl: stripSlash(c.tavilyBaseUrl) })
  }),
  exa: Option.match(c.exaApiKey, { onNone: () => undefined, onSome: (apiKey) => ({ apiKey, baseUrl: stripSlash(c.exaBaseUrl) }) }),
  duckduckgo: { baseUrl: stripSlash(c.duckduckgoBaseUrl) },
  engineTimeoutMs: c.searchEngineTimeoutMs,
  breakerFailures: c.searchBreakerFailures,
  breakerCooldownMs: c.searchBreakerCooldownMs,
  engineWeights: parseEngineWeights(c.searchEngineWeights),
  summarizeTop: c.searchSummarizeTop,
  concurrency: c.searchConcurrency,
  rrfK: defaultSearchSettings.rrfK
})

/** Names of the engines these settings configure (DuckDuckGo needs no key and is always available). */
export const configuredEngineNames = (settings: SearchSettings): ReadonlyArray<EngineName> =>
  ENGINE_NAMES.filter((name) => name === "duckduckgo" || settings[name] !== undefined)

/** The default engine set: every configured engine; DuckDuckGo alone when none is configured. */
export const defaultEngineNames = (settings: SearchSettings): ReadonlyArray<EngineName> => {
  const configured = ENGINE_NAMES.filter((name) => name !== "duckduckgo" && settings[name] !== undefined)
  return configured.length === 0 ? ["duckduckgo"] : configured
}
