/**
 * Alignment: a monitor created with only an intent and a channel is set up by the supervisor (the
 * model). Each step the supervisor reads the intent and the conversation so far and answers one
 * JSON object: `{"ask": "<question>"}` (an `alignment.input_request` event with a `request_id`,
 * answered through intervene or messages) or `{"configure": {...}}` with the monitor's schedule,
 * target_urls, extraction_schema, trigger_dsl and stop_condition_dsl, validated by the same rules
 * as a direct-mode create. A configuration that does not validate goes back to the supervisor
 * with the reasons (twice at most, then it asks the user).
 */
import { Effect } from "effect"
import { LanguageModel } from "effect/ai"
import type { ConfiguredModel } from "../agent/model.ts"
import type { Monitor } from "../domain/monitor.ts"
import { parseJsonObject } from "./extraction.ts"
import { RULES_DOCUMENTATION } from "../domain/track-rules.ts"

/** Questions the supervisor may ask before it must configure with what it has. */
export const MAX_QUESTIONS = 5

export type SupervisorAnswer =
  | { readonly kind: "ask"; readonly question: string }
  | { readonly kind: "configure"; readonly settings: Record<string, unknown> }

const system = (questionsLeft: number) =>
  "You set up a web monitor for a user of a monitoring service. From the user's intent and the conversation, decide " +
  "what to watch. Answer with exactly one JSON object and nothing else, either\n" +
  '{"ask": "<one short clarifying question>"}\n' +
  "or, when you know enough,\n" +
  '{"configure": {"schedule": {"kind": "interval", "interval_seconds": 3600} or {"kind": "cron", "expr": "0 9 * * *", "tz": "UTC"}, ' +
  '"target_urls": ["https://..."] or null (null: search the web for the intent each tick), ' +
  '"extraction_schema": <a JSON Schema of the values to extract> or null (null: watch the page text), ' +
  '"trigger_dsl": <rule> or null (null: notify on any change), "stop_condition_dsl": <rule> or null}}\n' +
  `You may ask ${questionsLeft} more question(s).\n\n${RULES_DOCUMENTATION}`

export const supervisorStep = Effect.fn("Track.supervisor")(function*(
  model: ConfiguredModel,
  monitor: Monitor,
  rejected: ReadonlyArray<string>
) {
  const asked = monitor.alignment.filter((turn) => turn.role === "supervisor" && turn.request_id !== undefined).length
  const questionsLeft = Math.max(0, MAX_QUESTIONS - asked)
  const conversation = monitor.alignment.map((turn) =>
    turn.role === "supervisor" ? `You asked: ${turn.content}` : `User (${turn.kind ?? "message"}): ${turn.content}`
  )
  const prompt = [
    { role: "system" as const, content: system(questionsLeft) },
    {
      role: "user" as const,
      content: `Intent: ${monitor.intent_text}\n` +
        (conversation.length > 0 ? `\nConversation so far:\n${conversation.join("\n")}\n` : "") +
        (rejected.length > 0 ? `\nYour last configuration was rejected: ${rejected.join("; ")}. Fix it.\n` : "")
    }
  ]
  const response = yield* LanguageModel.generateText({ prompt }).pipe(Effect.provide(model.layer))
  const costUsd = model.costUsd(response.usage.inputTokens.total ?? 0, response.usage.outputTokens.total ?? 0)
  let answer: SupervisorAnswer
  try {
    const parsed = parseJsonObject(response.text) as Record<string, unknown>
    if (typeof parsed.ask === "string" && parsed.ask.trim() !== "" && questionsLeft > 0) {
      answer = { kind: "ask", question: parsed.ask.trim().slice(0, 4000) }
    } else if (typeof parsed.configure === "object" && parsed.configure !== null && !Array.isArray(parsed.configure)) {
      answer = { kind: "configure", settings: parsed.configure as Record<string, unknown> }
    } else {
      answer = { kind: "ask", question: "How often should I check, and which pages should I watch?" }
    }
  } catch {
    // Not JSON: take the text as a question to the user (it is what a chat model does).
    answer = { kind: "ask", question: response.text.trim().slice(0, 4000) || "What exactly should I watch?" }
  }
  return { answer, costUsd }
})
