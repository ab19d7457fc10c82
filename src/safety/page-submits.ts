/**
 * Submissions a page makes by itself. The click tools classify the control the agent clicks
 * (confirm.ts), but a page's own script can submit a payment, deletion or message form after an
 * innocuous click, or as the agent types: `form.submit()`, `form.requestSubmit()`, a submit
 * event of a control the agent did not press, a fetch/XMLHttpRequest POST of a form's data, a
 * `navigator.sendBeacon`, or a WebSocket message.
 *
 * A structural guard, in every document of the run's browser context (an init script, so pop-ups
 * and frames have it from their first line of script): a capturing `submit` listener on the
 * window and on every shadow root (submit events do not leave a shadow tree: roots made by
 * `attachShadow` are hooked as they are made, others, declarative ones, when a click or key
 * press passes through them), and wrappers of `HTMLFormElement.prototype.submit/requestSubmit`,
 * `fetch` and `XMLHttpRequest.prototype.send` (non-GET requests only), `Navigator.prototype.sendBeacon`
 * and `WebSocket.prototype.send` (text messages). Each submission is classified with the
 * classifier's own rules (classifier.ts `classifyWith` and `classifyOperation`, serialised into the
 * page): a form with a card number field, the form's words, the path it posts to; a request body
 * built with `new FormData(form)` counts as that form, any other body by its card number keys, its
 * URL's path and the operation it names (a JSON or form-encoded `type`/`action`/`event`/`op`/
 * `method`/`command`, GraphQL's operation, Socket.IO's event); a socket message by its card number
 * keys and the operation it names (not the socket's URL: one socket carries reads and writes).
 * When the category is one the project confirms and no person confirmed it for the action under
 * way, the submission does not reach the site and is recorded in the document:
 * - a form or fetch/XHR is stopped (the event is cancelled before the page's own listeners run,
 *   submit() does nothing, fetch rejects, the XHR fires `error`); after a person's yes the agent
 *   repeats its action, so the page's own script runs again as for a person;
 * - a beacon or socket message is held in the page with its payload (sendBeacon returns true, as
 *   queued; send returns as usual): the page has usually moved on (cleared its input, shows the
 *   message as sent), so repeating the action would send something else. A yes sends the held
 *   payload once, as it was (`settlePageSubmits`); a no drops it.
 *
 * It costs nothing per request: no round trip to the service; the service reads the records
 * (and arms confirmed categories) with one evaluation per frame around each agent action, and
 * only for a run whose policy has confirm categories.
 *
 * Limits: binary socket messages and Blob/ArrayBuffer beacon bodies are classified by their URL
 * only (a socket message by nothing); other messages a page sends meanwhile on a socket go before
 * the held one; a held payload is lost when its document navigates away (or its socket closes)
 * before the person answers (the tool then says it was not sent); a record is lost when its
 * document navigates away before the service reads it (the submission itself was stopped all the
 * same); a closed shadow root made before the guard was set up, and a Worker's fetch or socket,
 * are not looked at.
 */
import { Effect } from "effect"
import type { BrowserContext, Disposable, Frame } from "playwright-core"
import { attempt, type ContextLease } from "../browser/pool.ts"
import { type ActionTarget, classifierRules, type ClassifierRules, type Classification, classifyOperation, classifyWith } from "./classifier.ts"
import type { ConfirmCategory } from "./policy.ts"

/** A submission the page tried that the guard stopped. */
export interface BlockedSubmit {
  readonly category: ConfirmCategory
  /** What put it in the category (the classifier's words). */
  readonly because: string
  /**
   * How the page submitted: "a submit event", "form.submit()", "requestSubmit()", "fetch POST /path",
   * "XMLHttpRequest POST /path", "navigator.sendBeacon /path", "a WebSocket message to /path".
   */
  readonly how: string
  /** The document that tried. */
  readonly url: string
  /** A beacon or socket message held in the page (its id for `settlePageSubmits`); a stopped submission has none. */
  readonly held?: string | undefined
}

/** What a document reports: the submissions stopped, the categories let through because armed. */
interface Taken {
  readonly blocked: ReadonlyArray<BlockedSubmit>
  readonly used: ReadonlyArray<string>
}

/**
 * Installed in every document (and in documents already open when the guard is first set up).
 * Self-contained: it is serialised into the page with `classify` and `classifyOp` (classifier.ts
 * classifyWith, classifyOperation).
 */
function installSubmitGuard(key: string, rules: ClassifierRules, classify: typeof classifyWith, classifyOp: typeof classifyOperation): void {
  const w = window as unknown as Record<string, unknown>
  if (Object.prototype.hasOwnProperty.call(w, key)) return
  const allowed = new Set<string>()
  const used = new Set<string>()
  const blocked: Array<{ category: string; because: string; how: string; url: string; held?: string }> = []
  /** Held beacons and socket messages: each sends its payload, true when it went. */
  const held = new Map<string, () => boolean>()
  let heldCount = 0
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
  /**
   * True when the submission may go; otherwise it is recorded and the caller stops it, or, with
   * `hold`, keeps its payload until the service settles it.
   */
  const decide = (classifyIt: () => Classification | undefined, how: string, hold?: () => boolean): boolean => {
    const active = categories()
    if (active.length === 0) return true
    let found: Classification | undefined
    try {
      found = classifyIt()
    } catch {
      return true
    }
    if (found === undefined || !active.includes(found.category)) return true
    if (allowed.has(found.category)) {
      used.add(found.category)
      return true
    }
    const record: { category: string; because: string; how: string; url: string; held?: string } = { category: found.category, because: found.because, how, url: location.href }
    if (hold !== undefined) {
      record.held = `${key}_${++heldCount}`
      held.set(record.held, hold)
    }
    blocked.push(record)
    return false
  }

  const onSubmit = (event: Event) => {
    const form = event.target
    if (!(form instanceof HTMLFormElement)) return
    if (decide(() => classify(describeForm(form, (event as SubmitEvent).submitter), rules), "a submit event")) return
    event.preventDefault()
    event.stopImmediatePropagation()
  }
  window.addEventListener("submit", onSubmit, true)
  // Submit events stay in their shadow tree: each shadow root gets the listener too.
  const hooked = new WeakSet<ShadowRoot>()
  const hook = (root: ShadowRoot) => {
    if (hooked.has(root)) return
    hooked.add(root)
    root.addEventListener("submit", onSubmit, true)
  }
  const nativeAttachShadow = Element.prototype.attachShadow
  Element.prototype.attachShadow = function(this: Element, init: ShadowRootInit) {
    const root = nativeAttachShadow.call(this, init)
    hook(root)
    return root
  }
  // Roots not made by attachShadow (declarative, or made before the guard): hooked on the way of
  // the click or key press that could submit their form, before its default action.
  const hookPath = (event: Event) => {
    for (const node of event.composedPath()) if (node instanceof ShadowRoot) hook(node)
  }
  window.addEventListener("click", hookPath, true)
  window.addEventListener("keydown", hookPath, true)

  const proto = HTMLFormElement.prototype
  const nativeSubmit = proto.submit
  proto.submit = function(this: HTMLFormElement) {
    if (decide(() => classify(describeForm(this, null), rules), "form.submit()")) nativeSubmit.call(this)
  }
  const nativeRequestSubmit = proto.requestSubmit
  proto.requestSubmit = function(this: HTMLFormElement, submitter?: HTMLElement | null) {
    if (decide(() => classify(describeForm(this, submitter), rules), "requestSubmit()")) nativeRequestSubmit.call(this, submitter)
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
  /** The operations a body names: JSON or form-encoded type/action/event/op/method/command, GraphQL's, Socket.IO's event. */
  const operationKeys = ["type", "action", "event", "op", "operation", "operationName", "method", "cmd", "command"]
  const operationsOf = (body: unknown): Array<string> => {
    const names: Array<string> = []
    // An HTTP method is not an operation: in capitals anywhere, and in any case as a `method` field
    // ({"method": "post"} is how a request is forwarded, not a post being published).
    const take = (value: unknown, key?: string) => {
      if (typeof value !== "string" || value.length > 100) return
      if (new RegExp("^(?:GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)$", key === "method" ? "i" : "").test(value)) return
      names.push(value)
    }
    const fromRecord = (record: unknown) => {
      if (record instanceof FormData || record instanceof URLSearchParams) {
        for (const name of operationKeys) take(record.get(name), name)
      } else if (typeof record === "object" && record !== null && !Array.isArray(record)) {
        const fields = record as Record<string, unknown>
        for (const name of operationKeys) take(fields[name], name)
        const query = fields["query"]
        if (typeof query === "string") {
          const mutation = /^\s*mutation\b\s*(\w*)[^{]*\{\s*(\w+)/.exec(query)
          if (mutation !== null) names.push(mutation[1] ?? "", mutation[2] ?? "")
        }
      }
    }
    if (typeof body !== "string") {
      fromRecord(body)
      return names.filter((name) => name !== "")
    }
    const text = body.trim().slice(0, 100_000)
    let parsed: unknown
    try {
      // Socket.IO frames a JSON array after a packet type: 42["send_message", {...}].
      parsed = JSON.parse(text.replace(/^\d+(?=[[{])/, ""))
    } catch {
      parsed = /^[^\s{}[\]]*=[^\s]*$/.test(text) ? new URLSearchParams(text) : undefined
    }
    if (Array.isArray(parsed)) {
      take(parsed[0])
      for (const item of parsed.slice(0, 10)) fromRecord(item)
    } else {
      fromRecord(parsed)
    }
    return names.filter((name) => name !== "")
  }
  const byOperations = (body: unknown): Classification | undefined => {
    for (const name of operationsOf(body)) {
      const found = classifyOp(name, rules)
      if (found !== undefined) return found
    }
    return undefined
  }
  const requestFound = (url: string, body: unknown): Classification | undefined => {
    const form = typeof body === "object" && body !== null ? formOf.get(body) : undefined
    if (form !== undefined) return classify(describeForm(form, null, url), rules)
    const keys = body instanceof FormData || body instanceof URLSearchParams
      ? Array.from(body.keys()).join(" ")
      : typeof body === "string" ? body.slice(0, 10_000) : ""
    return classify({ name: "", tag: "button", type: "submit", form: { label: "", hasCardField: cardKey.test(keys), action: pathOf(url) } }, rules) ??
      byOperations(body)
  }
  const nativeFetch = window.fetch
  window.fetch = function(input: RequestInfo | URL, init?: RequestInit) {
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase()
    if (method !== "GET" && method !== "HEAD") {
      const url = input instanceof Request ? input.url : String(input)
      if (!decide(() => requestFound(url, init?.body), `fetch ${method} ${pathOf(url)}`)) {
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
      !decide(() => requestFound(request.url, body), `XMLHttpRequest ${request.method} ${pathOf(request.url)}`)) {
      setTimeout(() => this.dispatchEvent(new ProgressEvent("error")), 0)
      return
    }
    return Reflect.apply(nativeSend, this, [body])
  }
  // A beacon or socket message is held with its payload: sent as it was on a person's yes.
  const nativeBeacon = Navigator.prototype.sendBeacon
  Navigator.prototype.sendBeacon = function(this: Navigator, url: string | URL, data?: BodyInit | null) {
    const send = () => Reflect.apply(nativeBeacon, this, [url, data]) as boolean
    return decide(() => requestFound(String(url), data), `navigator.sendBeacon ${pathOf(String(url))}`, send) ? send() : true
  }
  const socket = WebSocket.prototype
  const nativeSocketSend = socket.send
  socket.send = function(this: WebSocket, data: string | ArrayBufferLike | Blob | ArrayBufferView) {
    const send = () => {
      if (this.readyState !== WebSocket.OPEN) return false
      Reflect.apply(nativeSocketSend, this, [data])
      return true
    }
    if (typeof data !== "string" || decide(() => {
      const card = classify({ name: "", tag: "button", type: "submit", form: { label: "", hasCardField: cardKey.test(data.slice(0, 10_000)) } }, rules)
      return card ?? byOperations(data)
    }, `a WebSocket message to ${pathOf(this.url)}`, send)) {
      return Reflect.apply(nativeSocketSend, this, [data])
    }
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
      },
      /** Sends the held payloads of `release` (in the order held), drops those of `drop`; the ids sent. */
      settle: (release: ReadonlyArray<string>, drop: ReadonlyArray<string>) => {
        const sent: Array<string> = []
        for (const id of [...release].sort((a, b) => Number(a.slice(a.lastIndexOf("_") + 1)) - Number(b.slice(b.lastIndexOf("_") + 1)))) {
          const send = held.get(id)
          held.delete(id)
          try {
            if (send !== undefined && send()) sent.push(id)
          } catch {
            // Not sent (a closed socket): the service says so.
          }
        }
        for (const id of drop) held.delete(id)
        return sent
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

const guardSource = (key: string) => `(${installSubmitGuard.toString()})(${JSON.stringify(key)}, ${JSON.stringify(classifierRules)}, ${classifyWith.toString()}, ${classifyOperation.toString()});`

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

/**
 * Sends the held beacons and socket messages of `release` (a person said yes), each once, and
 * drops those of `drop`; the ids that were sent (a held payload whose document or socket is gone
 * is not).
 */
export const settlePageSubmits = (lease: ContextLease, release: ReadonlyArray<string>, drop: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>> =>
  Effect.suspend(() => {
    const state = guarded.get(lease.context)
    if (state === undefined || release.length + drop.length === 0) return Effect.succeed([])
    const source = `const guard = window[${JSON.stringify(state.key)}]; return guard ? guard.settle(${JSON.stringify(release)}, ${JSON.stringify(drop)}) : [];`
    return attempt(lease, "settle the held submissions", 5_000, async () => {
      const sent = await Promise.all(framesOf(lease).map((frame) => runIn(frame, source) as Promise<ReadonlyArray<string> | undefined>))
      return sent.flatMap((ids) => ids ?? [])
    }).pipe(Effect.orElseSucceed((): ReadonlyArray<string> => []))
  })
