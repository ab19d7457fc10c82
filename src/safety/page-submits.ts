/**
 * Submissions a page makes by itself. The click tools classify the control the agent clicks
 * (confirm.ts), but a page's own script can submit a payment, deletion or message form after an
 * innocuous click, or as the agent types: `form.submit()`, `form.requestSubmit()`, a submit
 * event of a control the agent did not press, or a fetch/XMLHttpRequest POST of a form's data.
 *
 * A structural guard, in every document of the run's browser context (an init script, so pop-ups
 * and frames have it from their first line of script): a capturing `submit` listener on the
 * window, and wrappers of `HTMLFormElement.prototype.submit/requestSubmit`, `fetch` and
 * `XMLHttpRequest.prototype.send` (non-GET requests only). Each submission is classified with the
 * classifier's own rules (classifier.ts `classifyWith`, serialised into the page): a form with a
 * card number field, the form's words, the path it posts to; a fetch/XHR body built with
 * `new FormData(form)` counts as that form, any other body by its card number keys and its URL's path.
 * When the category is one the project confirms and no person confirmed it for the action under
 * way, the submission is stopped there (the event is cancelled before the page's own listeners
 * run, submit() does nothing, fetch rejects, the XHR fires `error`) and recorded in the document.
 *
 * It costs nothing per request: no round trip to the service; the service reads the records
 * (and arms confirmed categories) with one evaluation per frame around each agent action, and
 * only for a run whose policy has confirm categories.
 *
 * Limits: a form inside a shadow root submitted by a plain click is seen through submit() or
 * requestSubmit() only (submit events do not leave a shadow tree); navigator.sendBeacon and
 * WebSockets are not looked at; a record is lost when its document navigates away before the
 * service reads it (the submission itself was stopped all the same).
 */
import { Effect } from "effect"
import type { BrowserContext, Disposable, Frame } from "playwright-core"
import { attempt, type ContextLease } from "../browser/pool.ts"
import { type ActionTarget, classifierRules, type ClassifierRules, classifyWith } from "./classifier.ts"
import type { ConfirmCategory } from "./policy.ts"

/** A submission the page tried that the guard stopped. */
export interface BlockedSubmit {
  readonly category: ConfirmCategory
  /** What put it in the category (the classifier's words). */
  readonly because: string
  /** How the page submitted: "a submit event", "form.submit()", "requestSubmit()", "fetch POST /path", "XMLHttpRequest POST /path". */
  readonly how: string
  /** The document that tried. */
  readonly url: string
}

/** What a document reports: the submissions stopped, the categories let through because armed. */
interface Taken {
  readonly blocked: ReadonlyArray<BlockedSubmit>
  readonly used: ReadonlyArray<string>
}

/**
 * Installed in every document (and in documents already open when the guard is first set up).
 * Self-contained: it is serialised into the page with `classify` (classifier.ts classifyWith).
 */
function installSubmitGuard(key: string, rules: ClassifierRules, classify: typeof classifyWith): void {
  const w = window as unknown as Record<string, unknown>
  if (Object.prototype.hasOwnProperty.call(w, key)) return
  const allowed = new Set<string>()
  const used = new Set<string>()
  const blocked: Array<{ category: string; because: string; how: string; url: string }> = []
  const categories = (): ReadonlyArray<string> => {
    const configured = w[`${key}_categories`]
    return Array.isArray(configured) ? configured as Array<string> : []
  }
  const collapse = (text: string | null | undefined) => (text ?? "").replace(/\s+/g, " ").trim().slice(0, 200)
  const pathOf = (url: string): string => {
    try {
      return new URL(url, location.href).pathname
    } catch {
      return ""
    }
  }
  const cardKey = /card[\s_-]*(?:number|no)\b|cardnumber|\bcc[\s_-]*num/i
  const cardField = (field: Element) =>
    (field.getAttribute("autocomplete") ?? "").toLowerCase().includes("cc-number") ||
    cardKey.test(`${field.getAttribute("name") ?? ""} ${field.getAttribute("id") ?? ""} ${field.getAttribute("aria-label") ?? ""} ${field.getAttribute("placeholder") ?? ""}`)
  const nameOf = (el: Element): string =>
    collapse(el.getAttribute("aria-label")) ||
    (el instanceof HTMLInputElement ? collapse(el.value) : collapse((el as HTMLElement).innerText ?? el.textContent)) ||
    collapse(el.getAttribute("title"))
  const describeForm = (form: HTMLFormElement, submitter: Element | null | undefined, url?: string): ActionTarget => {
    const action = url ?? form.getAttribute("action")
    return {
      name: submitter ? nameOf(submitter) : "",
      tag: submitter ? submitter.tagName.toLowerCase() : "button",
      type: submitter ? (submitter.getAttribute("type") ?? "").toLowerCase() : "submit",
      form: {
        label: [
          form.getAttribute("aria-label"),
          form.querySelector("legend")?.textContent,
          form.querySelector("h1, h2, h3, h4")?.textContent,
          form.getAttribute("name"),
          form.getAttribute("id")
        ].map(collapse).filter((part) => part !== "").join(" / "),
        hasCardField: Array.from(form.querySelectorAll("input")).some(cardField),
        action: action === null || action === undefined ? "" : pathOf(action)
      }
    }
  }
  /** True when the submission may go; otherwise it is recorded and the caller stops it. */
  const decide = (target: ActionTarget, how: string): boolean => {
    const active = categories()
    if (active.length === 0) return true
    let found: ReturnType<typeof classifyWith>
    try {
      found = classify(target, rules)
    } catch {
      return true
    }
    if (found === undefined || !active.includes(found.category)) return true
    if (allowed.has(found.category)) {
      used.add(found.category)
      return true
    }
    blocked.push({ category: found.category, because: found.because, how, url: location.href })
    return false
  }

  window.addEventListener("submit", (event) => {
    const form = event.target
    if (!(form instanceof HTMLFormElement)) return
    if (decide(describeForm(form, (event as SubmitEvent).submitter), "a submit event")) return
    event.preventDefault()
    event.stopImmediatePropagation()
  }, true)

  const proto = HTMLFormElement.prototype
  const nativeSubmit = proto.submit
  proto.submit = function(this: HTMLFormElement) {
    if (decide(describeForm(this, null), "form.submit()")) nativeSubmit.call(this)
  }
  const nativeRequestSubmit = proto.requestSubmit
  proto.requestSubmit = function(this: HTMLFormElement, submitter?: HTMLElement | null) {
    if (decide(describeForm(this, submitter), "requestSubmit()")) nativeRequestSubmit.call(this, submitter)
  }

  // A request body built from a form counts as that form's submission.
  const formOf = new WeakMap<object, HTMLFormElement>()
  window.FormData = new Proxy(window.FormData, {
    construct(target, args, newTarget) {
      const data = Reflect.construct(target, args, newTarget) as FormData
      if (args[0] instanceof HTMLFormElement) formOf.set(data, args[0])
      return data
    }
  })
  const requestTarget = (url: string, body: unknown): ActionTarget => {
    const form = typeof body === "object" && body !== null ? formOf.get(body) : undefined
    if (form !== undefined) return describeForm(form, null, url)
    const keys = body instanceof FormData || body instanceof URLSearchParams
      ? Array.from(body.keys()).join(" ")
      : typeof body === "string" ? body.slice(0, 10_000) : ""
    return { name: "", tag: "button", type: "submit", form: { label: "", hasCardField: cardKey.test(keys), action: pathOf(url) } }
  }
  const nativeFetch = window.fetch
  window.fetch = function(input: RequestInfo | URL, init?: RequestInit) {
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase()
    if (method !== "GET" && method !== "HEAD") {
      const url = input instanceof Request ? input.url : String(input)
      if (!decide(requestTarget(url, init?.body), `fetch ${method} ${pathOf(url)}`)) {
        return Promise.reject(new TypeError("Failed to fetch: this submission needs a person's confirmation"))
      }
    }
    return Reflect.apply(nativeFetch, window, [input, init]) as Promise<Response>
  } as typeof fetch
  const opened = new WeakMap<XMLHttpRequest, { method: string; url: string }>()
  const xhr = XMLHttpRequest.prototype
  const nativeOpen = xhr.open
  xhr.open = function(this: XMLHttpRequest, ...args: Array<unknown>) {
    opened.set(this, { method: String(args[0]).toUpperCase(), url: String(args[1]) })
    return Reflect.apply(nativeOpen, this, args)
  } as typeof xhr.open
  const nativeSend = xhr.send
  xhr.send = function(this: XMLHttpRequest, body?: Document | XMLHttpRequestBodyInit | null) {
    const request = opened.get(this)
    if (request !== undefined && request.method !== "GET" && request.method !== "HEAD" &&
      !decide(requestTarget(request.url, body), `XMLHttpRequest ${request.method} ${pathOf(request.url)}`)) {
      setTimeout(() => this.dispatchEvent(new ProgressEvent("error")), 0)
      return
    }
    return Reflect.apply(nativeSend, this, [body])
  }

  Object.defineProperty(w, key, {
    value: {
      arm: (list: ReadonlyArray<string>) => {
        allowed.clear()
        for (const category of list) allowed.add(category)
      },
      take: () => {
        const taken = { blocked: blocked.splice(0, blocked.length), used: Array.from(used) }
        used.clear()
        allowed.clear()
        return taken
      }
    },
    enumerable: false,
    configurable: false,
    writable: false
  })
}

interface Guarded {
  /** The window property the page's guard answers under (random per context). */
  readonly key: string
  /** The categories configured last (JSON), and the init script that sets them in new documents. */
  configured: string
  config: Disposable | undefined
}

const guarded = new WeakMap<BrowserContext, Guarded>()

const configSource = (key: string, categories: ReadonlyArray<string>) =>
  `Object.defineProperty(window, ${JSON.stringify(`${key}_categories`)}, { value: ${JSON.stringify(categories)}, configurable: true, enumerable: false, writable: false });`

const guardSource = (key: string) => `(${installSubmitGuard.toString()})(${JSON.stringify(key)}, ${JSON.stringify(classifierRules)}, ${classifyWith.toString()});`

const framesOf = (lease: ContextLease): ReadonlyArray<Frame> => lease.pages().flatMap((page) => page.frames())

/** Runs `source` (statements) in a frame as a function: evaluate's callFunctionOn, which a page's CSP does not block. */
const runIn = (frame: Frame, source: string): Promise<unknown> =>
  frame.evaluate(new Function(source) as () => unknown).catch(() => undefined)

/**
 * Sets the categories whose page-initiated submissions are stopped (the run's confirm
 * categories). A lease never configured and given none is left untouched (no script at all).
 */
export const configurePageSubmits = (lease: ContextLease, categories: ReadonlyArray<ConfirmCategory>): Effect.Effect<void> =>
  Effect.suspend(() => {
    const existing = guarded.get(lease.context)
    const wanted = JSON.stringify([...categories].sort())
    if (existing === undefined && categories.length === 0) return Effect.void
    if (existing !== undefined && existing.configured === wanted) return Effect.void
    return attempt(lease, "set up the submission guard", 10_000, async () => {
      let state = guarded.get(lease.context)
      if (state === undefined) {
        state = { key: `__wa_submits_${Math.random().toString(36).slice(2, 12)}`, configured: "", config: undefined }
        guarded.set(lease.context, state)
        await lease.context.addInitScript({ content: guardSource(state.key) })
      }
      const previous = state.config
      state.configured = wanted
      state.config = await lease.context.addInitScript({ content: configSource(state.key, categories) })
      await previous?.dispose().catch(() => undefined)
      const source = `${configSource(state.key, categories)}\n${guardSource(state.key)}`
      await Promise.all(framesOf(lease).map((frame) => runIn(frame, source)))
    }).pipe(Effect.ignore)
  })

/** Lets the page's submissions of `categories` through until the next `takePageSubmits` (a person confirmed them). */
export const armPageSubmits = (lease: ContextLease, categories: ReadonlyArray<ConfirmCategory>): Effect.Effect<void> =>
  Effect.suspend(() => {
    const state = guarded.get(lease.context)
    if (state === undefined) return Effect.void
    const source = `const guard = window[${JSON.stringify(state.key)}]; if (guard) guard.arm(${JSON.stringify(categories)});`
    return attempt(lease, "arm the submission guard", 5_000, () => Promise.all(framesOf(lease).map((frame) => runIn(frame, source)))).pipe(Effect.ignore)
  })

/** The submissions the pages stopped since the last call, and the armed categories that went through; disarms every document. */
export const takePageSubmits = (lease: ContextLease): Effect.Effect<Taken> =>
  Effect.suspend(() => {
    const state = guarded.get(lease.context)
    const none: Taken = { blocked: [], used: [] }
    if (state === undefined) return Effect.succeed(none)
    const source = `const guard = window[${JSON.stringify(state.key)}]; return guard ? guard.take() : undefined;`
    return attempt(lease, "read the submission guard", 5_000, async () => {
      const taken = await Promise.all(framesOf(lease).map((frame) => runIn(frame, source) as Promise<Taken | undefined>))
      return {
        blocked: taken.flatMap((t) => t?.blocked ?? []),
        used: taken.flatMap((t) => t?.used ?? [])
      }
    }).pipe(Effect.orElseSucceed(() => none))
  })

/** Whether the lease has the guard (a run without confirm categories on a fresh context has none). */
export const hasPageSubmitGuard = (lease: ContextLease): boolean => guarded.has(lease.context)
