/**
 * Which confirm category (policy.ts CONFIRM_CATEGORIES) a click or a form submission falls in,
 * from what a person would read: the control's accessible name or text, and for a generic
 * submit control ("Submit", "Continue", "OK") the form it submits. Deliberately small and
 * predictable; English wording only. It errs towards asking: a false positive costs one
 * question to a person, a false negative a purchase nobody confirmed.
 *
 * - payment: "Pay", "Pay $12", "Pay now", "Place order", "Buy", "Buy now", "Purchase", "Complete
 *   purchase/order/payment", "Confirm purchase/order/payment", "Submit order/payment", "Donate";
 *   or any submit control of a form holding a card number field (autocomplete cc-number, a
 *   field named or labelled card number). Not "Checkout" or "Add to cart" (they lead to a page
 *   where the payment is still to be confirmed), not "PayPal" or "Payment options".
 * - account_deletion: "Delete account", "Delete my account", "Close account", "Deactivate account",
 *   "Remove account", "Terminate account", "Cancel account", "Permanently delete".
 * - send_message: "Send", "Send message/email/reply/now/invitation", "Reply", "Post", "Post comment",
 *   "Tweet", "Publish", "Submit comment/message/reply"; not "Send code", "Send link" or "Resend" (a
 *   sign-in step that messages only the user).
 */
import type { ConfirmCategory } from "./policy.ts"

/** What the page says about the control the agent is about to click (src/safety/target.ts reads it). */
export interface ActionTarget {
  /** The control's accessible name, else its text, value, title or alt (whitespace collapsed). */
  readonly name: string
  /** The element's tag, lower case (button, a, input, div...). */
  readonly tag: string
  /** input/button type (submit, button, ...), "" otherwise. */
  readonly type: string
  /** The form the control submits, if any. */
  readonly form?: {
    /** The form's aria-label, legend or first heading, name and id (whitespace collapsed). */
    readonly label: string
    /** A field of the form takes a card number. */
    readonly hasCardField: boolean
  } | undefined
}

export interface Classification {
  readonly category: ConfirmCategory
  /** The words that put it in the category (for the question and the event). */
  readonly because: string
}

const patterns: ReadonlyArray<readonly [ConfirmCategory, RegExp]> = [
  ["account_deletion", /\b(?:(?:delete|close|deactivate|remove|terminate|cancel)\s+(?:my\s+|your\s+|the\s+|this\s+)?account|permanently\s+delete)\b/i],
  ["payment", /^(?:pay|buy|purchase|donate)\b|\b(?:pay\s+now|place\s+(?:my\s+|your\s+|the\s+)?order|buy\s+now|(?:complete|confirm|submit)\s+(?:my\s+|your\s+|the\s+)?(?:purchase|order|payment))\b/i],
  ["send_message", /^(?:send|reply|post|tweet|publish)(?:\s+(?:message|email|e-mail|mail|reply|now|it|comment|invitation|invite|post))?\s*$|\bsubmit\s+(?:comment|message|reply)\b|\bsend\s+(?:message|email|e-mail|reply)\b/i]
]

/** Labels that say nothing by themselves: the form they submit decides. */
const generic = /^(?:submit|continue|ok|okay|confirm|next|done|yes|go|save|finish|proceed)?\s*$/i

const collapse = (text: string): string => text.replace(/\s+/g, " ").trim()

const byWords = (text: string): Classification | undefined => {
  const words = collapse(text)
  if (words === "") return undefined
  for (const [category, pattern] of patterns) {
    const match = pattern.exec(words)
    if (match !== null) return { category, because: words.length > 60 ? `${words.slice(0, 60)}…` : words }
  }
  return undefined
}

const submits = (target: ActionTarget): boolean =>
  (target.tag === "button" && (target.type === "" || target.type === "submit")) ||
  (target.tag === "input" && (target.type === "submit" || target.type === "image"))

/** The category of clicking (or submitting with) `target`, or undefined when none applies. */
export const classifyAction = (target: ActionTarget): Classification | undefined => {
  const own = byWords(target.name)
  if (own !== undefined) return own
  if (target.form === undefined || !submits(target)) return undefined
  if (target.form.hasCardField) return { category: "payment", because: `${collapse(target.name) || "submit"} (a form with a card number)` }
  if (!generic.test(collapse(target.name))) return undefined
  const byForm = byWords(target.form.label)
  return byForm === undefined ? undefined : { category: byForm.category, because: `${collapse(target.name) || "submit"} (form ${byForm.because})` }
}

/** The question put to a person. */
export const confirmationPrompt = (target: ActionTarget, classification: Classification): string =>
  `The agent wants to click ${JSON.stringify(collapse(target.name) || classification.because)} (${classification.category.replace("_", " ")}). Allow? yes/no`

/** Whether an answer to the question allows the action: yes, y, allow, ok, true (any case); anything else declines. */
export const isApproval = (answer: unknown): boolean => {
  if (answer === true) return true
  const text = typeof answer === "string"
    ? answer
    : typeof answer === "object" && answer !== null
    ? String((answer as Record<string, unknown>)["answer"] ?? (answer as Record<string, unknown>)["text"] ?? (answer as Record<string, unknown>)["value"] ?? "")
    : ""
  return /^\s*(?:yes|y|allow|allowed|ok|okay|approve|approved|true)\s*[.!]?\s*$/i.test(text)
}
