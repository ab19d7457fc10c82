/**
 * Token metering of a language model: a LanguageModel that forwards every call to the configured
 * one and adds each response's token usage to a meter, so work that calls a model through code
 * which does not report usage (WebSearch's re-rank and summaries) can still be charged.
 */
import { Effect, Layer } from "effect"
import { LanguageModel } from "effect/ai"

export interface TokenMeter {
  inputTokens: number
  outputTokens: number
}

export const newMeter = (): TokenMeter => ({ inputTokens: 0, outputTokens: 0 })

interface WithUsage {
  readonly usage: { readonly inputTokens: { readonly total?: number | undefined }; readonly outputTokens: { readonly total?: number | undefined } }
}

/** The model of `layer`, with every generateText / generateObject response's usage added to `meter`. */
export const meteredModel = (layer: Layer.Layer<LanguageModel.LanguageModel>, meter: TokenMeter): Layer.Layer<LanguageModel.LanguageModel> =>
  Layer.effect(
    LanguageModel.LanguageModel,
    Effect.gen(function*() {
      const inner = yield* LanguageModel.LanguageModel
      const count = (response: WithUsage) => {
        meter.inputTokens += response.usage.inputTokens.total ?? 0
        meter.outputTokens += response.usage.outputTokens.total ?? 0
      }
      // The methods are generic over their options; forwarding keeps each call's own types.
      const forward = <F extends (options: never) => Effect.Effect<WithUsage, unknown, unknown>>(method: F): F =>
        ((options: never) => Effect.tap(method(options), (response) => Effect.sync(() => count(response)))) as unknown as F
      return {
        ...inner,
        generateText: forward(inner.generateText as (options: never) => Effect.Effect<WithUsage, unknown, unknown>) as typeof inner.generateText,
        generateObject: forward(inner.generateObject as (options: never) => Effect.Effect<WithUsage, unknown, unknown>) as typeof inner.generateObject
      }
    })
  ).pipe(Layer.provide(layer))
