/**
 * Structured extraction for monitors with an `extraction_schema`: the model reads the pages'
 * text and answers one JSON object, which is validated against the schema (one repair round with
 * the validator's errors, then the tick fails with `extraction_failed`).
 *
 * The reply is asked for as plain JSON text rather than a tool call: the user's schema is any
 * JSON Schema, and every provider (and every small local model) can answer text.
 */
import { Effect, Schema } from "effect"
import { LanguageModel } from "effect/ai"
import { Ajv } from "ajv"
import type { ConfiguredModel } from "../agent/model.ts"

const ajv = new Ajv({ allErrors: true, strict: false })

/** Text of the pages sent to the model, at most this many characters in all. */
const MAX_PROMPT_TEXT = 48_000

export class ExtractionFailed extends Schema.TaggedError<ExtractionFailed>()("ExtractionFailed", {
  detail: Schema.String,
  costUsd: Schema.Number
}) {}

/** The first JSON object in a reply (code fences and prose around it are ignored). */
export const parseJsonObject = (text: string): unknown => {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(text)
  const body = (fenced?.[1] ?? text).trim()
  const start = body.indexOf("{")
  const end = body.lastIndexOf("}")
  if (start === -1 || end < start) throw new Error("the reply holds no JSON object")
  return JSON.parse(body.slice(start, end + 1))
}

export const extractStructured = Effect.fn("Track.extract")(function*(
  model: ConfiguredModel,
  input: { readonly intent: string; readonly schema: Record<string, unknown>; readonly text: string }
) {
  const validate = yield* Effect.try({ try: () => ajv.compile(input.schema), catch: (cause) => new ExtractionFailed({ detail: `extraction_schema does not compile: ${String(cause)}`, costUsd: 0 }) })
  let costUsd = 0
  const messages: Array<{ role: "system" | "user" | "assistant"; content: string }> = [
    {
      role: "system",
      content: "You extract data from web pages for a monitoring service. Answer with exactly one JSON object that " +
        "matches the JSON Schema given, and nothing else. Use null for values the pages do not state."
    },
    {
      role: "user",
      content: `What the user watches: ${input.intent}\n\nJSON Schema:\n${JSON.stringify(input.schema)}\n\nPages:\n${input.text.slice(0, MAX_PROMPT_TEXT)}`
    }
  ]
  for (let attempt = 0; attempt < 2; attempt++) {
    const response = yield* LanguageModel.generateText({ prompt: messages }).pipe(
      Effect.provide(model.layer),
      Effect.mapError((error) => new ExtractionFailed({ detail: `the model failed: ${error.message}`, costUsd }))
    )
    costUsd += model.costUsd(response.usage.inputTokens.total ?? 0, response.usage.outputTokens.total ?? 0)
    let value: unknown
    let problem: string
    try {
      value = parseJsonObject(response.text)
      if (validate(value)) return { value, costUsd }
      problem = `it does not match the schema: ${ajv.errorsText(validate.errors)}`
    } catch (error) {
      problem = `it is not a JSON object: ${error instanceof Error ? error.message : String(error)}`
    }
    messages.push({ role: "assistant", content: response.text }, { role: "user", content: `Your answer was rejected: ${problem}. Answer again with only the JSON object.` })
    if (attempt === 1) return yield* new ExtractionFailed({ detail: `the model's answer was rejected twice; last: ${problem}`.slice(0, 500), costUsd })
  }
  return yield* new ExtractionFailed({ detail: "unreachable", costUsd })
})
