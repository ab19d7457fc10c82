/**
 * Model prices in USD per million tokens, used to turn token usage into the run and session cost
 * fields. Unknown models (self-hosted ones, mostly) use WA_MODEL_PRICE_PER_MTOK ("input,output",
 * default 1,3), so costs are never silently zero.
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

/** Parses WA_MODEL_PRICE_PER_MTOK ("input,output", validated by the config). */
export const parsePricePerMtok = (spec: string) => {
  const [input = 1, output = 3] = spec.split(",").map(Number)
  return { input, output }
}

/** USD for the tokens of one model call; unknown models use the configured fallback price. */
export const costUsd = (
  model: string,
  inputTokens: number,
  outputTokens: number,
  fallback: { readonly input: number; readonly output: number }
): number => {
  const price = table[model] ?? fallback
  return (inputTokens * price.input + outputTokens * price.output) / 1_000_000
}
