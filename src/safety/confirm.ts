/**
 * Confirmation of a click in a confirm category (classifier.ts): before the click, the agent asks
 * a person through the run's ask_human mechanism ("The agent wants to click 'Place order'
 * (payment). Allow? yes/no"); a yes (classifier.ts isApproval) lets the click go ahead, any
 * other answer declines it and the tool fails with "the user declined ...", which the model reads.
 */
import { Effect } from "effect"
import { type ActionTarget, classifyAction, confirmationPrompt, isApproval } from "./classifier.ts"
import type { RunSafety } from "./service.ts"

/** The input request's JSON schema: a yes/no answer. */
export const confirmationSchema = {
  type: "string",
  enum: ["yes", "no"],
  description: "yes lets the agent click; anything else declines"
} as const

/**
 * Undefined when the click may go ahead (no confirm category applies, or a person said yes);
 * the message for the model when the person declined.
 */
export const confirmClick = <R>(
  safety: RunSafety,
  read: Effect.Effect<ActionTarget | undefined, never, R>,
  ask: (prompt: string, schema: unknown) => Effect.Effect<unknown>
): Effect.Effect<string | undefined, never, R> =>
  Effect.gen(function*() {
    if (safety.policy.confirm_actions.length === 0) return undefined
    const target = yield* read
    if (target === undefined) return undefined
    const classified = classifyAction(target)
    if (classified === undefined || !safety.confirms(classified.category)) return undefined
    const answer = yield* ask(confirmationPrompt(target, classified), confirmationSchema)
    if (isApproval(answer)) return undefined
    return `the user declined: clicking ${JSON.stringify(target.name || classified.because)} (${classified.category}) needs a person's confirmation ` +
      `and they answered ${JSON.stringify(typeof answer === "string" ? answer.slice(0, 100) : answer)}; nothing was clicked. Do not try it another way.`
  })
