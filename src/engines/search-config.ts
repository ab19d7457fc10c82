/**
 * Search engine settings, read from the environment with effect `Config`. `SearchConfig` is
 * exported so the application's central config can include it and fail at start on a bad value.
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
import { Config, Option, Redacted } from "effect"

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
  brave: "https://api.search.brave.com",
  google: "https://www.googleapis.com",
  tavily: "https://api.tavily.com",
  exa: "https://api.exa.ai",
  duckduckgo: "https://html.duckduckgo.com"
} as const

/** Settings with every engine unconfigured except DuckDuckGo, and the documented defaults. */
export const defaultSearchSettings: SearchSettings = {
  duckduckgo: { baseUrl: DEFAULT_BASE_URLS.duckduckgo },
  engineTimeoutMs: 8_000,
  breakerFailures: 3,
  breakerCooldownMs: 30_000,
  engineWeights: {},
  summarizeTop: 5,
  concurrency: 64,
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

/** An unset or blank variable is None (a blank key in a .env file means "not configured"). */
const optionalString = (name: string) =>
  Config.option(Config.String(name)).pipe(
    Config.map(Option.flatMap((value) => value.trim() === "" ? Option.none() : Option.some(value.trim())))
  )
const optionalSecret = (name: string) => optionalString(name).pipe(Config.map(Option.map((value) => Redacted.make(value))))
const stripSlash = (url: string) => url.replace(/\/+$/, "")
const positiveInt = (name: string, fallback: number) =>
  Config.Int(name).pipe(
    Config.withDefault(fallback),
    Config.map((value) => value < 1 ? fallback : value)
  )

export const SearchConfig: Config.Config<SearchSettings> = Config.all({
  searxngUrl: optionalString("WA_SEARXNG_URL"),
  braveApiKey: optionalSecret("WA_BRAVE_API_KEY"),
  braveBaseUrl: Config.NonEmptyString("WA_BRAVE_BASE_URL").pipe(Config.withDefault(DEFAULT_BASE_URLS.brave)),
  googleApiKey: optionalSecret("WA_GOOGLE_API_KEY"),
  googleCx: optionalString("WA_GOOGLE_CX"),
  googleBaseUrl: Config.NonEmptyString("WA_GOOGLE_BASE_URL").pipe(Config.withDefault(DEFAULT_BASE_URLS.google)),
  tavilyApiKey: optionalSecret("WA_TAVILY_API_KEY"),
  tavilyBaseUrl: Config.NonEmptyString("WA_TAVILY_BASE_URL").pipe(Config.withDefault(DEFAULT_BASE_URLS.tavily)),
  exaApiKey: optionalSecret("WA_EXA_API_KEY"),
  exaBaseUrl: Config.NonEmptyString("WA_EXA_BASE_URL").pipe(Config.withDefault(DEFAULT_BASE_URLS.exa)),
  duckduckgoBaseUrl: Config.NonEmptyString("WA_DUCKDUCKGO_BASE_URL").pipe(
    Config.withDefault(DEFAULT_BASE_URLS.duckduckgo)
  ),
  engineTimeoutMs: positiveInt("WA_SEARCH_ENGINE_TIMEOUT_MS", defaultSearchSettings.engineTimeoutMs),
  breakerFailures: positiveInt("WA_SEARCH_BREAKER_FAILURES", defaultSearchSettings.breakerFailures),
  breakerCooldownMs: positiveInt("WA_SEARCH_BREAKER_COOLDOWN_MS", defaultSearchSettings.breakerCooldownMs),
  engineWeights: Config.String("WA_SEARCH_ENGINE_WEIGHTS").pipe(Config.withDefault("")),
  summarizeTop: positiveInt("WA_SEARCH_SUMMARIZE_TOP", defaultSearchSettings.summarizeTop),
  concurrency: positiveInt("WA_SEARCH_CONCURRENCY", defaultSearchSettings.concurrency)
}).pipe(Config.map((c): SearchSettings => ({
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
  engineTimeoutMs: c.engineTimeoutMs,
  breakerFailures: c.breakerFailures,
  breakerCooldownMs: c.breakerCooldownMs,
  engineWeights: parseEngineWeights(c.engineWeights),
  summarizeTop: c.summarizeTop,
  concurrency: c.concurrency,
  rrfK: defaultSearchSettings.rrfK
})))

/** Names of the engines these settings configure (DuckDuckGo needs no key and is always available). */
export const configuredEngineNames = (settings: SearchSettings): ReadonlyArray<EngineName> =>
  ENGINE_NAMES.filter((name) => name === "duckduckgo" || settings[name] !== undefined)

/** The default engine set: every configured engine; DuckDuckGo alone when none is configured. */
export const defaultEngineNames = (settings: SearchSettings): ReadonlyArray<EngineName> => {
  const configured = ENGINE_NAMES.filter((name) => name !== "duckduckgo" && settings[name] !== undefined)
  return configured.length === 0 ? ["duckduckgo"] : configured
}
