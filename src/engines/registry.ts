/**
 * Builds the adapters of the configured engines. DuckDuckGo needs no key, so it is always there.
 */
import type { HttpClient } from "effect/http"
import type { EngineName, SearchSettings } from "./search-config.ts"
import { makeBrave } from "./brave.ts"
import { makeDuckDuckGo } from "./duckduckgo.ts"
import type { SearchEngine } from "./engine.ts"
import { makeExa } from "./exa.ts"
import { makeGoogle } from "./google.ts"
import { makeSearxng } from "./searxng.ts"
import { makeTavily } from "./tavily.ts"

export const makeEngines = (
  client: HttpClient.HttpClient,
  settings: SearchSettings
): ReadonlyMap<EngineName, SearchEngine> => {
  const engines = new Map<EngineName, SearchEngine>()
  if (settings.searxng) engines.set("searxng", makeSearxng(client, settings.searxng))
  if (settings.brave) engines.set("brave", makeBrave(client, settings.brave))
  if (settings.google) engines.set("google", makeGoogle(client, settings.google))
  if (settings.tavily) engines.set("tavily", makeTavily(client, settings.tavily))
  if (settings.exa) engines.set("exa", makeExa(client, settings.exa))
  engines.set("duckduckgo", makeDuckDuckGo(client, settings.duckduckgo))
  return engines
}
