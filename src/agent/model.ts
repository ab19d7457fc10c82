/**
 * The language model the agent uses, from WA_MODEL_PROVIDER / WA_MODEL_BASE_URL / WA_MODEL_API_KEY /
 * WA_MODEL: an OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, Ollama, llama.cpp,
 * OpenRouter) or Anthropic. Without a model the service still runs; runs fail with
 * `model_not_configured`.
 */
import { Context, Effect, Layer, Option } from "effect"
import { LanguageModel } from "effect/ai"
import { FetchHttpClient } from "effect/http"
import { costUsd, parsePricePerMtok } from "../billing/prices.ts"
import { AppConfig, modelApiKey } from "../config/config.ts"
import { makeAnthropic } from "./providers/anthropic.ts"
import { makeOpenAiCompatible } from "./providers/openai-compatible.ts"

export interface ConfiguredModel {
  readonly provider: "openai-compatible" | "anthropic"
  readonly name: string
  readonly layer: Layer.Layer<LanguageModel.LanguageModel>
  /** USD for the tokens of one call of this model. */
  readonly costUsd: (inputTokens: number, outputTokens: number) => number
}

const defaults = {
  "openai-compatible": { model: "gpt-4.1-mini", baseUrl: "https://api.openai.com/v1" },
  anthropic: { model: "claude-sonnet-4-5", baseUrl: "https://api.anthropic.com" }
} as const

/** The configured model, or none when neither a base URL nor an API key was given. */
export class AgentModel extends Context.Service<AgentModel, Option.Option<ConfiguredModel>>()("wa/agent/AgentModel") {
  static readonly layer = Layer.effect(
    AgentModel,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const apiKey = modelApiKey(config)
      if (Option.isNone(config.modelBaseUrl) && Option.isNone(apiKey)) return Option.none<ConfiguredModel>()
      const provider = config.modelProvider
      const name = Option.getOrElse(config.model, () => defaults[provider].model)
      const apiUrl = Option.getOrElse(config.modelBaseUrl, () => defaults[provider].baseUrl)
      const key = Option.getOrUndefined(apiKey)
      const options = { baseUrl: apiUrl, apiKey: key, model: name }
      const layer = Layer.effect(
        LanguageModel.LanguageModel,
        provider === "anthropic" ? makeAnthropic(options) : makeOpenAiCompatible(options)
      ).pipe(Layer.provide(FetchHttpClient.layer))
      const fallbackPrice = parsePricePerMtok(config.modelPricePerMtok)
      return Option.some<ConfiguredModel>({
        provider,
        name,
        layer,
        costUsd: (inputTokens, outputTokens) => costUsd(config.prices, name, inputTokens, outputTokens, fallbackPrice)
      })
    })
  )
}
