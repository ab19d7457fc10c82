/**
 * Confirmation of an action in a confirm category (classifier.ts):
 *
 * - A click (or Enter in a form): before it, the agent asks a person through the run's ask_human
 *   mechanism ("The agent wants to click 'Place order' (payment). Allow? yes/no"); a yes lets the
 *   click go ahead, and the page's own submissions of that category during the action go through
 *   too; any other answer declines it and the tool fails with "the user declined ...".
 * - A submission the page makes by itself (page-submits.ts: form.submit(), requestSubmit(), a
 *   submit event, a fetch/XHR POST of a form's data) in a confirm category that nobody confirmed
 *   is stopped in the page. After the action the tool asks a person the same way ("The page wants
 *   to submit a payment form ... Allow? yes/no"); the tool's result says what the page tried and
 *   that nothing was submitted. A yes arms that category for the agent's next actions, until a
 *   submission of it goes through once: the second attempt goes through. A no fails the tool with
 *   "the user declined ...", as for a click.
 * - A beacon or socket message the page sends (page-submits.ts) in such a category is held in the
 *   page with its payload and asked about the same way ("The page tried to make a send message
 *   request by itself (a WebSocket message to /chat; ...). It is held: nothing was sent. Allow it?").
 *   A yes sends it then, once, as it was, and the action goes on as if nothing was stopped (the page
 *   has usually moved on, so the agent must not repeat it); a no drops it and fails the tool with
 *   "the user declined ...". A held payload whose document or socket went away meanwhile is not
 *   sent: the tool says so, and the category is confirmed for the repeated action, as for a form.
 *   When the same action also had a form or request of that category stopped, the held payloads
 *   are dropped and the agent repeats the action (which makes them again).
 */
import { Effect } from "effect"
import type { ContextLease } from "../browser/pool.ts"
import { type ActionTarget, classifyAction, confirmationPrompt, isApproval } from "./classifier.ts"
import { armPageSubmits, type BlockedSubmit, configurePageSubmits, hasPageSubmitGuard, settlePageSubmits, takePageSubmits } from "./page-submits.ts"
import type { ConfirmCategory } from "./policy.ts"
import type { RunSafety } from "./service.ts"

/** The input request's JSON schema: a yes/no answer. */
export const confirmationSchema = {
  type: "string",
  enum: ["yes", "no"],
  description: "yes lets the agent click; anything else declines"
} as const

/** A click's outcome: declined (the message for the model), or approved in a category, or nothing to confirm (both undefined). */
export interface ClickDecision {
  readonly declined?: string | undefined
  readonly approved?: ConfirmCategory | undefined
}

/**
 * Whether the click may go ahead: `{}` when no confirm category applies, `approved` when a person
 * said yes, `declined` (the message for the model) when they did not.
 */
export const confirmClick = <R>(
  safety: RunSafety,
  read: Effect.Effect<ActionTarget | undefined, never, R>,
  ask: (prompt: string, schema: unknown) => Effect.Effect<unknown>
): Effect.Effect<ClickDecision, never, R> =>
  Effect.gen(function*() {
    if (safety.policy.confirm_actions.length === 0) return {}
    const target = yield* read
    if (target === undefined) return {}
    const classified = classifyAction(target)
    if (classified === undefined || !safety.confirms(classified.category)) return {}
    const answer = yield* ask(confirmationPrompt(target, classified), confirmationSchema)
    if (isApproval(answer)) return { approved: classified.category }
    return {
      declined: `the user declined: clicking ${JSON.stringify(target.name || classified.because)} (${classified.category}) needs a person's confirmation ` +
        `and they answered ${shownAnswer(answer)}; nothing was clicked. Do not try it another way.`
    }
  })

const shownAnswer = (answer: unknown) => JSON.stringify(typeof answer === "string" ? answer.slice(0, 100) : answer)

const label = (category: ConfirmCategory) => category.replace("_", " ")

/** What the page tried, for the question and the tool's result. */
const tried = (blocked: BlockedSubmit) =>
  blocked.held === undefined
    ? `the page tried to submit a ${label(blocked.category)} form by itself (${blocked.how}; ${blocked.because})`
    : `the page tried to make ${blocked.category === "account_deletion" ? "an" : "a"} ${label(blocked.category)} request by itself (${blocked.how}; ${blocked.because})`

/** The question put to a person about a submission the page tried by itself. */
export const pageSubmitPrompt = (tool: string, blocked: BlockedSubmit): string => {
  const what = tried(blocked)
  return `T${what.slice(1)} during the agent's ${tool}. ` +
    (blocked.held === undefined ? `Nothing was submitted. Allow it? yes/no` : `It is held: nothing was sent. Allow it? yes/no`)
}

/** A tool's result when the page's submission was stopped: the code and the message for the model. */
export interface SubmitStopped {
  readonly code: "UserDeclined" | "PageSubmitStopped"
  readonly message: string
}

/** The page-submission side of one run's boundary: around each agent action that touches the page. */
export interface SubmitGate {
  /** Before an action: the guard configured with the run's categories, earlier confirmations armed. */
  readonly before: Effect.Effect<void>
  /** Right before the action, after a person approved its click: the page's submissions of this category go through too. */
  readonly approve: (category: ConfirmCategory) => Effect.Effect<void>
  /** After the action: the submissions the page tried and that were stopped, each asked about; undefined when none. */
  readonly after: (tool: string) => Effect.Effect<SubmitStopped | undefined>
}

export const submitGate = (
  safety: RunSafety,
  lease: ContextLease,
  ask: (prompt: string, schema: unknown) => Effect.Effect<unknown>
): SubmitGate => {
  /** Categories a person confirmed after the page's submission was stopped, until one goes through. */
  const confirmed = new Set<ConfirmCategory>()
  const active = () => safety.policy.confirm_actions.length > 0 || hasPageSubmitGuard(lease)
  return {
    before: Effect.suspend(() => {
      if (!active()) return Effect.void
      return configurePageSubmits(lease, safety.policy.confirm_actions).pipe(
        Effect.andThen(confirmed.size === 0 ? Effect.void : armPageSubmits(lease, [...confirmed]))
      )
    }),
    approve: (category) => active() ? armPageSubmits(lease, [...confirmed, category]) : Effect.void,
    after: (tool) =>
      Effect.gen(function*() {
        if (!active()) return undefined
        const { blocked, used } = yield* takePageSubmits(lease)
        for (const category of used) confirmed.delete(category as ConfirmCategory)
        const first = new Map<ConfirmCategory, BlockedSubmit>()
        for (const item of blocked) if (!first.has(item.category)) first.set(item.category, item)
        if (first.size === 0) return undefined
        const declined: Array<string> = []
        /** Stopped submissions a person allowed: the agent repeats its action. */
        const repeat: Array<string> = []
        const release: Array<BlockedSubmit> = []
        const drop: Array<string> = []
        for (const item of first.values()) {
          const what = tried(item)
          const answer = yield* ask(pageSubmitPrompt(tool, item), confirmationSchema)
          const all = blocked.filter((other) => other.category === item.category)
          if (isApproval(answer)) {
            if (all.some((other) => other.held === undefined)) {
              // A stopped form or request too: the repeated action makes it all again, held payloads included.
              confirmed.add(item.category)
              repeat.push(what)
              drop.push(...all.flatMap((other) => other.held === undefined ? [] : [other.held]))
            } else {
              release.push(...all)
            }
          } else {
            drop.push(...all.flatMap((other) => other.held === undefined ? [] : [other.held]))
            declined.push(`${what}, which needs a person's confirmation, and they answered ${shownAnswer(answer)}`)
          }
        }
        const sent = new Set(yield* settlePageSubmits(lease, release.map((item) => item.held!), drop))
        const lost = release.filter((item) => !sent.has(item.held!))
        const lostCategories = new Map(lost.map((item) => [item.category, item] as const))
        for (const category of lostCategories.keys()) confirmed.add(category)
        const sentText = sent.size === 0 ? "" :
          ` What a person allowed (${release.filter((item) => sent.has(item.held!)).map((item) => item.how).join(", ")}) was sent once, as the page made it; do not repeat that.`
        if (declined.length > 0) {
          return {
            code: "UserDeclined",
            message: `the user declined: ${declined.join("; ")}. Nothing of that was submitted. Do not try it another way.${sentText}`
          }
        }
        if (repeat.length === 0 && lostCategories.size === 0) return undefined
        const stopped = [
          ...repeat,
          ...[...lostCategories.values()].map((item) => `${tried(item)}, held until a person allowed it, but its page or connection went away before it could be sent`)
        ]
        return {
          code: "PageSubmitStopped",
          message: `${stopped.join("; ")}. That needs a person's confirmation through ask_human, so it was stopped and nothing was submitted. ` +
            `A person has now confirmed it: repeat the action (the same click or typing) and the submission will go through.${sentText}`
        }
      })
  }
}
