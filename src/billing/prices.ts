/**
 * Model prices in USD per million tokens, used to turn token usage into the run and session cost
 * fields. Unknown models (self-hosted ones, mostly) use WA_MODEL_PRICE_PER_MTOK ("input,output"),
 * else the default below, so costs are never silently zero.
 */
const table: Record<string, { readonly input: number; readonly output: number }> = {
  "gpt-4.1": { input: 2, output: 8 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4 },
  "gpt-4o": { input: 2.5, output: 10 },
  "gpt-4o-mini": { input: 0.15, output: 0.6 },
  "claude-sonnet-4-5": { input: 3, output: 15 },
  "claude-haiku-4-5": { input: 1, output: 5 },
  "claude-opus-4-1": { input: 15, output: 75 }
}

const fallback = (() => {
  const [input, output] = (process.env["WA_MODEL_PRICE_PER_MTOK"] ?? "").split(",").map(Number)
  return input !== undefined && output !== undefined && Number.isFinite(input) && Number.isFinite(output)
    ? { input, output }
    : { input: 1, output: 3 }
})()

export const priceOf = (model: string) => table[model] ?? fallback

export const costUsd = (model: string, inputTokens: number, outputTokens: number): number => {
  const price = priceOf(model)
  return (inputTokens * price.input + outputTokens * price.output) / 1_000_000
}
