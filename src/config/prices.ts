/**
 * The price table: what every cost is charged, in USD. It is configuration, not code: the file
 * shipped in the repository (config/prices.json), or the file WA_PRICES_FILE names, read and
 * validated once at start (src/config/config.ts), so a bad file stops start-up with one line.
 *
 * - `models`: USD per million input and output tokens per model name. A model that is not in the
 *   table (self-hosted ones, mostly) uses WA_MODEL_PRICE_PER_MTOK ("input,output", default 1,3),
 *   so model costs are never silently zero.
 * - `browser_per_minute`: DoAnything browser time, per minute a run holds the session's browser.
 * - `proxy_per_gb`: proxied traffic (the service has no paid upstream proxy yet: nothing uses it).
 * - `deep_research_per_run`, `web_search_per_query`, `track_per_tick`: product fees on top of the
 *   model tokens those products spend.
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Schema } from "effect"

const Usd = Schema.Number.check(Schema.isFinite(), Schema.isGreaterThanOrEqualTo(0))

export const ModelPrice = Schema.Struct({
  input_per_mtok: Usd,
  output_per_mtok: Usd
})

export const PriceTable = Schema.Struct({
  description: Schema.optional(Schema.String),
  models: Schema.Record(Schema.String, ModelPrice),
  browser_per_minute: Usd,
  proxy_per_gb: Usd,
  deep_research_per_run: Usd,
  web_search_per_query: Usd,
  track_per_tick: Usd
})
export type PriceTable = typeof PriceTable.Type

/** The price file shipped in the repository. */
// A function, not a constant: the SDK's browser build imports this module (through the config
// schema) and must not resolve file paths when it loads.
export const defaultPricesFile = () => fileURLToPath(new URL("../../config/prices.json", import.meta.url))

const decodeTable = Schema.decodeUnknownSync(PriceTable, { errors: "all", onExcessProperty: "error" })

/**
 * Reads and validates a price file; throws an Error whose message says what is wrong, for the
 * configuration's one-line start-up error.
 */
export const loadPriceTable = (file: string): PriceTable => {
  let text: string
  try {
    text = readFileSync(file, "utf8")
  } catch (cause) {
    throw new Error(`WA_PRICES_FILE ${file} cannot be read: ${(cause as Error).message}`)
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (cause) {
    throw new Error(`WA_PRICES_FILE ${file} is not JSON: ${(cause as Error).message}`)
  }
  try {
    return decodeTable(json)
  } catch (cause) {
    throw new Error(`WA_PRICES_FILE ${file} is not a valid price table: ${String((cause as Error).message).replace(/\s*\n\s*/g, " ")}`)
  }
}

/** Parses WA_MODEL_PRICE_PER_MTOK ("input,output", validated by the config). */
export const parsePricePerMtok = (spec: string) => {
  const [input = 1, output = 3] = spec.split(",").map(Number)
  return { input, output }
}

/** USD for the tokens of one model call; unknown models use the configured fallback price. */
export const costUsd = (
  prices: PriceTable,
  model: string,
  inputTokens: number,
  outputTokens: number,
  fallback: { readonly input: number; readonly output: number }
): number => {
  const known = prices.models[model]
  const price = known === undefined ? fallback : { input: known.input_per_mtok, output: known.output_per_mtok }
  return (inputTokens * price.input + outputTokens * price.output) / 1_000_000
}

/** USD for `ms` of browser time. */
export const browserUsd = (prices: PriceTable, ms: number): number => prices.browser_per_minute * Math.max(0, ms) / 60_000
