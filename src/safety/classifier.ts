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
 * - For a generic submit control whose form's words say nothing, the path the form posts to:
 *   payment (/pay, /payment, /purchase, /order, /orders, /charge, /donate, /checkout/complete...),
 *   account_deletion (/account/delete, /delete-account, /close_account...), send_message (/send,
 *   /message(s), /compose, /reply, /comment(s), /contact). Page-initiated submissions (form.submit(),
 *   requestSubmit(), a fetch/XHR POST of a form's data) have no control: they are classified as
 *   a generic submit of their form (page-submits.ts).
 * - The operation a request or socket message names (page-submits.ts reads it from a JSON or
 *   form-encoded body: `type`, `action`, `event`, `op`, `method`, `command`, GraphQL's
 *   `operationName` or mutation, Socket.IO's event name), split into words ("chat.sendMessage" →
 *   "chat send message", also "send message" after the namespace): payment ("pay", "purchase",
 *   "create payment", "place order", "charge"...), account_deletion ("delete account",
 *   "account.close"...), send_message ("send", "message", "chat", "reply", "post", "send message",
 *   "create comment", "message.send"...). Reads ("get messages", "message read", "typing") are not.
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
    /** The path of the URL the form posts to (its action; a fetch/XHR's URL), "" when unknown. */
    readonly action?: string | undefined
  } | undefined
}

export interface Classification {
  readonly category: ConfirmCategory
  /** The words that put it in the category (for the question and the event). */
  readonly because: string
}

/**
 * The rules as plain data (category, regular expression source, flags), so that the same rules
 * classify in Node and, serialised, in the page (page-submits.ts classifies the submissions a
 * page's own script makes with `classifyWith` and these rules).
 */
export interface ClassifierRules {
  /** A control's or a form's words. */
  readonly words: ReadonlyArray<readonly [ConfirmCategory, string]>
  /** The path of the URL a form posts to (its action, or a fetch/XHR's URL), tried after the words. */
  readonly actions: ReadonlyArray<readonly [ConfirmCategory, string]>
  /** Labels that say nothing by themselves: the form they submit decides. */
  readonly generic: string
  /** An operation a request or socket message names, as lower-case words (`classifyOperation`). */
  readonly operations: ReadonlyArray<readonly [ConfirmCategory, string]>
}

export const classifierRules: ClassifierRules = {
  words: [
    ["account_deletion", String.raw`\b(?:(?:delete|close|deactivate|remove|terminate|cancel)\s+(?:my\s+|your\s+|the\s+|this\s+)?account|permanently\s+delete)\b`],
    ["payment", String.raw`^(?:pay|buy|purchase|donate)\b|\b(?:pay\s+now|place\s+(?:my\s+|your\s+|the\s+)?order|buy\s+now|(?:complete|confirm|submit)\s+(?:my\s+|your\s+|the\s+)?(?:purchase|order|payment))\b`],
    ["send_message", String.raw`^(?:send|reply|post|tweet|publish)(?:\s+(?:message|email|e-mail|mail|reply|now|it|comment|invitation|invite|post))?\s*$|\bsubmit\s+(?:comment|message|reply)\b|\bsend\s+(?:message|email|e-mail|reply)\b`]
  ],
  actions: [
    ["account_deletion", String.raw`(?:delete|close|deactivate|remove|terminate|cancel)[-_/]?(?:my[-_])?account|accounts?/(?:[^/]+/)?(?:delete|deletion|close|closure|deactivate|remove|terminate|cancel)\b`],
    ["payment", String.raw`(?:^|[/_.-])(?:pay|payments?|purchases?|place[-_]?order|orders?|charges?|donate|donations?)(?:$|[/_.-])|checkout/(?:complete|confirm|pay|submit)`],
    ["send_message", String.raw`(?:^|[/_.-])(?:send(?![-_.]?(?:code|link|otp|verification|reset))|messages?|compose|reply|replies|comments?|contact)(?:$|[/_.-])`]
  ],
  generic: String.raw`^(?:submit|continue|ok|okay|confirm|next|done|yes|go|save|finish|proceed)?\s*$`,
  operations: [
    ["account_deletion", String.raw`^(?:(?:delete|close|deactivate|remove|terminate|cancel|destroy)\s+(?:my\s+|the\s+|user\s+)?account|accounts?\s+(?:delete|deletion|close|closure|deactivate|remove|terminate|cancel|destroy))\b`],
    ["payment", String.raw`^(?:pay|payment|purchase|buy|charge|donate|donation)$|^(?:pay|buy)\s|^(?:(?:create|submit|confirm|complete|place|make|capture|new)\s+(?:an?\s+|new\s+)?(?:payment|purchase|order|charge|donation)|(?:payments?|purchases?|orders?|charges?)\s+(?:create|submit|confirm|complete|capture|place|pay))\b`],
    ["send_message", String.raw`^(?:send|reply|respond|publish|tweet|post|message|msg|chat|comment)$|^(?:(?:send|post|create|add|submit|publish|new|write)\s+(?:(?:a|an|new|chat|direct|private|text|group|channel)\s+)*(?:messages?|msgs?|comments?|reply|replies|posts?|dms?|e\s?mails?|mail|tweets?|chat)|(?:messages?|msgs?|chat|comments?|dms?|e\s?mails?|mail)\s+(?:send|create|new|post|submit|add|publish|reply))\b|^(?:send|reply)\s+(?:to|all)\b`]
  ]
}

/**
 * The category of clicking (or submitting with) `target` under `rules`, or undefined when none
 * applies. Self-contained (it is also serialised into pages): it refers to nothing outside itself.
 */
export function classifyWith(target: ActionTarget, rules: ClassifierRules): Classification | undefined {
  const collapse = (text: string): string => text.replace(/\s+/g, " ").trim()
  const byWords = (text: string): Classification | undefined => {
    const words = collapse(text)
    if (words === "") return undefined
    for (const [category, source] of rules.words) {
      if (new RegExp(source, "i").test(words)) return { category, because: words.length > 60 ? `${words.slice(0, 60)}…` : words }
    }
    return undefined
  }
  const own = byWords(target.name)
  if (own !== undefined) return own
  const submits = (target.tag === "button" && (target.type === "" || target.type === "submit")) ||
    (target.tag === "input" && (target.type === "submit" || target.type === "image"))
  if (target.form === undefined || !submits) return undefined
  const shown = collapse(target.name) || "submit"
  if (target.form.hasCardField) return { category: "payment", because: `${shown} (a form with a card number)` }
  if (!new RegExp(rules.generic, "i").test(collapse(target.name))) return undefined
  const byForm = byWords(target.form.label)
  if (byForm !== undefined) return { category: byForm.category, because: `${shown} (form ${byForm.because})` }
  const path = (target.form.action ?? "").toLowerCase()
  if (path === "" || path === "/") return undefined
  for (const [category, source] of rules.actions) {
    if (new RegExp(source, "i").test(path)) return { category, because: `${shown} (form posting to ${path.length > 60 ? `${path.slice(0, 60)}…` : path})` }
  }
  return undefined
}

/**
 * The category of an operation a request or socket message names (`sendMessage`, `chat.post_message`,
 * `payment:create`), or undefined. Its words are tried whole and from each namespace segment on
 * (after `.`, `:` or `/`). Self-contained (serialised into pages).
 */
export function classifyOperation(operation: string, rules: ClassifierRules): Classification | undefined {
  const segments = operation.slice(0, 100).split(/[.:/]+/).map((segment) =>
    segment.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase().split(/[^a-z0-9]+/).filter((word) => word !== "").join(" ")
  ).filter((segment) => segment !== "")
  for (let from = 0; from < segments.length; from++) {
    const words = segments.slice(from).join(" ")
    for (const [category, source] of rules.operations) {
      if (new RegExp(source).test(words)) return { category, because: `operation ${JSON.stringify(operation.slice(0, 60))}` }
    }
  }
  return undefined
}

const collapse = (text: string): string => text.replace(/\s+/g, " ").trim()

/** The category of clicking (or submitting with) `target`, or undefined when none applies. */
export const classifyAction = (target: ActionTarget): Classification | undefined => classifyWith(target, classifierRules)

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
