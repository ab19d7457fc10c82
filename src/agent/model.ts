/**
 * The language model the agent uses, from WA_MODEL_PROVIDER / WA_MODEL_BASE_URL / WA_MODEL_API_KEY /
 * WA_MODEL: an OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, Ollama, llama.cpp,
 * OpenRouter) or Anthropic. Without a model the service still runs; runs fail with
 * `model_not_configured`.
 */
import { Context, Effect, Layer, Option } from "effect"
import { LanguageModel } from "effect/ai"
import { FetchHttpClient, HttpClient } from "effect/http"
import { costUsd, parsePricePerMtok } from "../config/prices.ts"
import { AppConfig, modelApiKey } from "../config/config.ts"
import { makeAnthropic } from "./providers/anthropic.ts"
import { makeOpenAiCompatible } from "./providers/openai-compatible.ts"
import { fairModelClient } from "../fairness/fair-queue.ts"

export interface ConfiguredModel {
  readonly provider: "openai-compatible" | "anthropic"
  readonly name: string
  readonly layer: Layer.Layer<LanguageModel.LanguageModel>
  /** Whether each observation carries a marked screenshot (WA_MODEL_VISION, see visionCapable). */
  readonly vision: boolean
  /** USD for the tokens of one call of this model. */
  readonly costUsd: (inputTokens: number, outputTokens: number) => number
}

const defaults = {
  "openai-compatible": { model: "gpt-4.1-mini", baseUrl: "https://api.openai.com/v1" },
  anthropic: { model: "claude-sonnet-4-5", baseUrl: "https://api.anthropic.com" }
} as const

/**
 * Models known to accept images, by name, for WA_MODEL_VISION=auto. Anthropic: every Claude 3 or
 * later (not claude-2 or claude-instant). OpenAI-compatible: OpenAI's multimodal families (gpt-4o,
 * gpt-4.1, gpt-4-turbo, gpt-5, o1/o3/o4 but not o1-mini/o3-mini), Claude and Gemini behind a proxy, and open models
 * whose name says so (llava, *-vl, *vision*, pixtral, gemma3, llama4, minicpm-v, internvl, qvq,
 * moondream, mistral-small-3.1/3.2). Anything else is text-only unless WA_MODEL_VISION=on.
 */
export const visionCapable = (provider: ConfiguredModel["provider"], name: string): boolean => {
  const model = name.toLowerCase()
  if (provider === "anthropic") return !/claude-(2|instant)/.test(model)
  if (/\b(o1|o3)-mini\b/.test(model)) return false
  return /gpt-4o|gpt-4\.1|gpt-4-turbo|gpt-4-vision|gpt-5|chatgpt-4o|\bo[134](\b|-)|claude-(3|sonnet|opus|haiku)|claude-[a-z]+-4|gemini|llava|vision|[-_.]vl\b|[-_.]vl[-_:.]|qwen\d?(\.\d)?-?vl|qvq|pixtral|gemma-?3(?!.*\b1b\b)|llama-?4|minicpm-v|internvl|moondream|mistral-small-3\.[12]/
    .test(model)
}

/** Fetch, each request a unit of the model lane of the fair queue (src/fairness/fair-queue.ts). */
const FairModelHttpClient = Layer.effect(HttpClient.HttpClient, Effect.map(HttpClient.HttpClient, fairModelClient)).pipe(
  Layer.provide(FetchHttpClient.layer)
)

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
      ).pipe(Layer.provide(FairModelHttpClient))
      const fallbackPrice = parsePricePerMtok(config.modelPricePerMtok)
      return Option.some<ConfiguredModel>({
        provider,
        name,
        layer,
        vision: config.modelVision === "auto" ? visionCapable(provider, name) : config.modelVision === "on",
        costUsd: (inputTokens, outputTokens) => costUsd(config.prices, name, inputTokens, outputTokens, fallbackPrice)
      })
    })
  )
}
