/**
 * What every engine adapter implements, and the helpers they share: one HTTP call in that
 * engine's own API, mapped to ranked hits. Adapters map the request's options onto the engine's
 * own parameters where it has them; the WebSearch service enforces the rest on the merged list.
 */
import { Effect, Schema } from "effect"
import type { HttpClient, HttpClientRequest } from "effect/http"
import { EngineError, type Freshness } from "../domain/web-search.ts"
import type { EngineName } from "./search-config.ts"

export interface EngineQuery {
  readonly query: string
  /** Hits wanted; adapters ask for this many where the API allows and never return more. */
  readonly count: number
  readonly freshness: Freshness | undefined
  /** A BCP 47 tag as given by the user ("en", "de-DE"). */
  readonly language: string | undefined
  /** Normalized bare hosts ("example.com"). */
  readonly siteWhitelist: ReadonlyArray<string>
  readonly siteBlacklist: ReadonlyArray<string>
  /** Current time in ms, for engines that take absolute dates. */
  readonly now: number
}

export interface EngineHit {
  readonly title: string
  readonly url: string
  readonly snippet: string
  /** Publication time in ms when the engine reports one (used to enforce freshness). */
  readonly publishedAt?: number | undefined
}

export interface EngineResponse {
  /** In the engine's order; rank = index + 1. */
  readonly hits: ReadonlyArray<EngineHit>
  readonly answer?: string | undefined
}

export interface SearchEngine {
  readonly name: EngineName
  readonly search: (query: EngineQuery) => Effect.Effect<EngineResponse, EngineError>
}

export const freshnessDays: Record<Freshness, number> = { day: 1, week: 7, month: 31, year: 366 }

/** The primary language subtag, lower-case ("de-DE" -> "de"). */
export const primaryLanguage = (language: string | undefined): string | undefined => {
  const primary = language?.trim().toLowerCase().split(/[-_]/, 1)[0]
  return primary === undefined || primary === "" || primary === "all" ? undefined : primary
}

/**
 * `site:` operators for engines that only take sites through the query syntax. Lists longer
 * than a handful would bloat the query; those are enforced on the merged list only.
 */
export const siteOperators = (query: EngineQuery, maxSites = 8): string => {
  const parts: Array<string> = []
  if (query.siteWhitelist.length > 0 && query.siteWhitelist.length <= maxSites) {
    parts.push(
      query.siteWhitelist.length === 1
        ? `site:${query.siteWhitelist[0]}`
        : `(${query.siteWhitelist.map((site) => `site:${site}`).join(" OR ")})`
    )
  }
  if (query.siteBlacklist.length <= maxSites) {
    for (const site of query.siteBlacklist) parts.push(`-site:${site}`)
  }
  return parts.length === 0 ? query.query : `${query.query} ${parts.join(" ")}`
}

/** Parses a date the engine reports; undefined when absent or unparseable. */
export const parseDate = (value: string | null | undefined): number | undefined => {
  if (value === null || value === undefined || value.trim() === "") return undefined
  const time = Date.parse(value)
  return Number.isFinite(time) ? time : undefined
}

const whitespace = /\s+/g
export const cleanText = (value: string | null | undefined): string => (value ?? "").replace(whitespace, " ").trim()

/** A browser-like User-Agent: several engines answer non-browser agents with an error page. */
export const USER_AGENT =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

/**
 * Sends the request and returns the response body as text when the status is 2xx; any other
 * status, or a transport failure, is an EngineError naming the engine.
 */
export const executeText = Effect.fnUntraced(function*(
  engine: EngineName,
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest
): Effect.fn.Return<string, EngineError> {
  const failed = (error: { readonly message: string }) =>
    new EngineError({ engine, message: `${engine} request failed: ${error.message}` })
  const response = yield* Effect.mapError(client.execute(request), failed)
  if (response.status < 200 || response.status >= 300) {
    const body = yield* Effect.orElseSucceed(response.text, () => "")
    return yield* new EngineError({
      engine,
      status: response.status,
      message: `${engine} answered HTTP ${response.status}${body ? `: ${body.slice(0, 200)}` : ""}`
    })
  }
  return yield* Effect.mapError(response.text, failed)
})

/** Decoders built once per response schema (building one walks the schema). */
const decoders = new WeakMap<object, (input: unknown) => Effect.Effect<unknown, Schema.SchemaError>>()

/** Like executeText, then decodes the JSON body with the engine's response schema. */
export const executeJson = <S extends Schema.Constraint & { readonly DecodingServices: never }>(
  engine: EngineName,
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest,
  schema: S
): Effect.Effect<S["Type"], EngineError> => {
  let decode = decoders.get(schema)
  if (decode === undefined) {
    decode = Schema.decodeUnknownEffect(Schema.fromJsonString(schema)) as (input: unknown) => Effect.Effect<unknown, Schema.SchemaError>
    decoders.set(schema, decode)
  }
  return Effect.flatMap(
    executeText(engine, client, request),
    (body) =>
      Effect.mapError(
        decode!(body) as Effect.Effect<S["Type"], Schema.SchemaError>,
        (error) => new EngineError({ engine, message: `${engine} response unusable: ${error.message.slice(0, 300)}` })
      )
  )
}

/** An optional string field that engines sometimes send as null. */
export const OptionalText = Schema.optionalKey(Schema.NullOr(Schema.String))
