/**
 * Reads, in the page, what the classifier (classifier.ts) needs about the control a click is
 * about to hit: by ref (click) or at a point of the viewport (click_at). The clickable ancestor
 * (a button or link around an icon or a span) stands for what was hit.
 */
import { Effect } from "effect"
import { elementAt, locateRef } from "../browser/observe.ts"
import { attempt, type ContextLease } from "../browser/pool.ts"
import type { ActionTarget } from "./classifier.ts"

/** Evaluated in the page: the control's name and its form. Self-contained. */
function describeTarget(start: Element | null): ActionTarget | null {
  if (start === null) return null
  const el = start.closest("button, a, input, [role=button], [role=link], [role=menuitem], summary, label") ?? start
  const collapse = (text: string | null | undefined) => (text ?? "").replace(/\s+/g, " ").trim().slice(0, 200)
  const labelled = el.getAttribute("aria-labelledby")
  const byIds = labelled === null ? "" : labelled.split(/\s+/).map((id) => el.ownerDocument.getElementById(id)?.textContent ?? "").join(" ")
  const input = el instanceof HTMLInputElement ? el : null
  const name = collapse(el.getAttribute("aria-label")) || collapse(byIds) ||
    (input !== null ? collapse(input.value) || collapse(input.getAttribute("alt")) : collapse((el as HTMLElement).innerText ?? el.textContent)) ||
    collapse(el.getAttribute("title")) || collapse(el.querySelector("img[alt]")?.getAttribute("alt"))
  const form = el instanceof HTMLButtonElement || el instanceof HTMLInputElement ? el.form : el.closest("form")
  const cardField = (field: Element) => {
    const autocomplete = (field.getAttribute("autocomplete") ?? "").toLowerCase()
    const named = `${field.getAttribute("name") ?? ""} ${field.getAttribute("id") ?? ""} ${field.getAttribute("aria-label") ?? ""} ${field.getAttribute("placeholder") ?? ""}`
    return autocomplete.includes("cc-number") || /card[\s_-]*(?:number|no)\b|cardnumber|\bcc[\s_-]*num/i.test(named)
  }
  return {
    name,
    tag: el.tagName.toLowerCase(),
    type: (el.getAttribute("type") ?? "").toLowerCase(),
    form: form === null ? undefined : {
      label: [
        form.getAttribute("aria-label"),
        form.querySelector("legend")?.textContent,
        form.querySelector("h1, h2, h3, h4")?.textContent,
        form.getAttribute("name"),
        form.getAttribute("id")
      ].map(collapse).filter((part) => part !== "").join(" / "),
      hasCardField: Array.from(form.querySelectorAll("input")).some(cardField),
      action: (() => {
        try {
          const action = form.getAttribute("action")
          return action === null ? "" : new URL(action, location.href).pathname
        } catch {
          return ""
        }
      })()
    }
  }
}

/** The control of a ref; undefined when the ref is gone (the click itself then fails and says so). */
export const targetOfRef = (lease: ContextLease, ref: string): Effect.Effect<ActionTarget | undefined> => {
  const page = lease.page()
  if (page === undefined) return Effect.succeed(undefined)
  return attempt(lease, `read ${ref}`, 5_000, async () => {
    const location = await locateRef(page, ref)
    const element = location === undefined ? undefined : await elementAt(location)
    if (element === undefined) return undefined
    try {
      return (await element.evaluate(describeTarget)) ?? undefined
    } finally {
      void element.dispose().catch(() => undefined)
    }
  }).pipe(Effect.orElseSucceed(() => undefined))
}

/** The control at a point of the viewport (top document; a frame there is not looked into). */
export const targetAt = (lease: ContextLease, x: number, y: number): Effect.Effect<ActionTarget | undefined> => {
  const page = lease.page()
  if (page === undefined) return Effect.succeed(undefined)
  return attempt(lease, "read the point", 5_000, async () => {
    const handle = await page.mainFrame().evaluateHandle(({ x, y }) => document.elementFromPoint(x, y), { x, y })
    const element = handle.asElement()
    try {
      return element === null ? undefined : (await element.evaluate(describeTarget)) ?? undefined
    } finally {
      void handle.dispose().catch(() => undefined)
    }
  }).pipe(Effect.orElseSucceed(() => undefined))
}

/** Evaluated in the page: the button a form submission from this field presses (its form's default button). */
function defaultButtonOf(field: Element | null): Element | null {
  const el = field ?? document.activeElement
  if (el === null) return null
  const form = el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement || el instanceof HTMLButtonElement
    ? el.form
    : el.closest("form")
  if (form === null) return null
  return form.querySelector("button:not([type]), button[type=submit], input[type=submit], input[type=image]")
}

/**
 * The control a submission presses: for `type ... submit` (Enter in the field of a ref),
 * `type_at ... submit` (Enter in the field at a point of the viewport) or `press_key Enter` (the
 * focused field: field undefined), its form's default button.
 */
export const submitTargetOf = (
  lease: ContextLease,
  field: string | { readonly x: number; readonly y: number } | undefined
): Effect.Effect<ActionTarget | undefined> => {
  const page = lease.page()
  if (page === undefined) return Effect.succeed(undefined)
  return attempt(lease, "read the form", 5_000, async () => {
    const element = field === undefined
      ? undefined
      : typeof field === "string"
      ? await locateRef(page, field).then((location) => location === undefined ? undefined : elementAt(location))
      : await page.mainFrame().evaluateHandle(({ x, y }) => document.elementFromPoint(x, y), field).then((handle) => handle.asElement() ?? undefined)
    if (field !== undefined && element === undefined) return undefined
    const handle = element === undefined
      ? await page.mainFrame().evaluateHandle(defaultButtonOf, null)
      : await element.evaluateHandle(defaultButtonOf)
    const button = handle.asElement()
    try {
      return button === null ? undefined : (await button.evaluate(describeTarget)) ?? undefined
    } finally {
      void handle.dispose().catch(() => undefined)
      if (element !== undefined) void element.dispose().catch(() => undefined)
    }
  }).pipe(Effect.orElseSucceed(() => undefined))
}
