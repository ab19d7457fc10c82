/**
 * The agent's browser tools, as Effects over a leased context and element refs from
 * `observe`. Every action is bounded in time, fails with a typed error the model can read, and
 * waits briefly afterwards for the page to settle (navigation committed, load fired, network
 * quiet - each with a short cap) so the next observation sees the result.
 */
import { Effect } from "effect"
import type { ElementHandle, Frame, Page, Request } from "playwright-core"
import { isPlaywrightTimeout } from "./playwright.ts"
import { type ActionError, ActionFailed, ActionTimeout, BrowserCrashed, ElementNotFound, NavigationRefused } from "./errors.ts"
import { elementAt, locateRef, type RefLocation, resolveRefHandle, screenshot as takeScreenshot } from "./observe.ts"
import { focusRefForTyping, settleState, valueOfRef } from "./page-script.ts"
import { attempt, type ContextLease } from "./pool.ts"

/** What happened, in words the model can use, plus where the tab is now. */
export interface ActionOutcome {
  readonly url: string
  readonly navigated: boolean
  /** Indexes of tabs opened by the action (see switchTab). */
  readonly newTabs: ReadonlyArray<number>
  readonly message: string
}

export interface ActionTimeouts {
  /** Budget of one element action (click, type, ...), actionability waits included. */
  readonly actionMs: number
  /** Budget of a navigation (goto, back) up to DOMContentLoaded. */
  readonly navigationMs: number
  /** Cap of the settle phase after an action. */
  readonly settleMs: number
}

export const defaultTimeouts: ActionTimeouts = { actionMs: 10_000, navigationMs: 30_000, settleMs: 3_000 }

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref())

/**
 * Watches one tab while an action runs: main-frame navigations, requests in flight and
 * new tabs, so `settle` knows what to wait for and the outcome can say what happened.
 */
const watch = (lease: ContextLease, page: Page) => {
  let navigationRequested = false
  let committed = false
  let inFlight = 0
  let lastActivity = 0
  const newPages: Array<Page> = []
  const onRequest = (r: Request) => {
    inFlight++
    lastActivity = Date.now()
    if (r.isNavigationRequest() && r.frame() === page.mainFrame()) navigationRequested = true
  }
  const onDone = () => {
    inFlight = Math.max(0, inFlight - 1)
    lastActivity = Date.now()
  }
  const onNavigated = (frame: unknown) => {
    if (frame === page.mainFrame()) committed = true
  }
  let tabExpected = false
  const onPage = (p: Page) => newPages.push(p)
  page.on("request", onRequest)
  page.on("requestfinished", onDone)
  page.on("requestfailed", onDone)
  page.on("framenavigated", onNavigated)
  lease.context.on("page", onPage)
  const stop = () => {
    page.off("request", onRequest)
    page.off("requestfinished", onDone)
    page.off("requestfailed", onDone)
    page.off("framenavigated", onNavigated)
    lease.context.off("page", onPage)
  }

  /**
   * Waits until a started navigation commits and loads, and the network is quiet, all capped.
   * With `dom` (after a click, a keystroke, a choice) also until the page's reaction is over:
   * the short timers it set since `startedAt` fired (a debounce before suggestions) and the DOM
   * has not changed for 50 ms (not asked of a document the action loaded: its load passed); the
   * quiet phase is capped at 1 s (beyond it only for the action's own late timers, up to `capMs`).
   */
  const settlePage = async (capMs: number, dom?: { readonly startedAt: number }): Promise<void> => {
    const settleStartedAt = Date.now()
    const deadline = settleStartedAt + capMs
    const left = () => Math.max(0, deadline - Date.now())
    // A click's fetch (or a navigation Playwright did not wait for) starts a moment after the
    // action resolves; a committed navigation needs no such grace.
    if (!committed) await sleep(15)
    // A target=_blank link's tab is announced shortly after the click resolves.
    while (tabExpected && newPages.length === 0 && left() > 0 && Date.now() < deadline - capMs + 2_000) await sleep(10)
    if (navigationRequested && !committed) {
      await page.waitForEvent("framenavigated", { predicate: (f) => f === page.mainFrame(), timeout: left() })
        .catch(() => undefined)
    }
    let loadedAt = 0
    if (navigationRequested || committed) {
      await page.waitForLoadState("domcontentloaded", { timeout: left() }).catch(() => undefined)
      await page.waitForLoadState("load", { timeout: Math.min(left(), 1_500) }).catch(() => undefined)
      loadedAt = Date.now()
    }
    // Then network quiet for 50 ms, when the action caused requests that the load did not cover;
    // capped at 1 s, since long polls and event streams never finish.
    const quiet = () => inFlight === 0 && (lastActivity === 0 || lastActivity <= loadedAt || Date.now() - lastActivity >= 50)
    const quietDeadline = Date.now() + Math.min(left(), 1_000)
    while (!quiet() && Date.now() < quietDeadline) await sleep(10)
    if (dom === undefined) return
    // Past the 1 s cap, only a timer the action itself set (a debounce) that has not fired yet
    // keeps the wait going, up to the settle's cap: on a busy host the page's timers fire late,
    // and an observation taken before the debounce fired would miss the suggestions it shows.
    // Timers the page sets later (animation chains) never extend the wait.
    while (Date.now() < deadline) {
      const beyond = Date.now() >= quietDeadline
      const state = quiet()
        ? await page.evaluate(settleState, {
          since: dom.startedAt - 20,
          horizon: beyond ? deadline : quietDeadline,
          actionEnded: settleStartedAt
        }).catch(() => undefined)
        : undefined
      // After the action loaded a new document its load event has passed: its short timers (a
      // render deferred by a timer) are still waited for, not 50 ms of DOM quiet besides.
      if (quiet() && (state === undefined || !state.tracked || (state.pending === 0 && (committed || state.quietMs >= 50)))) return
      if (beyond && (state === undefined || state.pendingFromAction === 0)) return
      await sleep(15)
    }
  }

  /**
   * The tab settles as above; then a tab the action opened has its first load committed (its
   * document, or the navigation guard's refusal of it, a redirect hop included), capped at 1.5 s
   * within the settle's cap: the outcome names the tab as loaded, and a refusal is this action's.
   */
  const settle = async (capMs: number, dom?: { readonly startedAt: number }): Promise<void> => {
    const deadline = Date.now() + capMs
    await settlePage(capMs, dom)
    const timeout = Math.min(Math.max(0, deadline - Date.now()), 1_500)
    if (newPages.length > 0 && timeout > 0) {
      await Promise.all(newPages.map((p) => p.waitForLoadState("domcontentloaded", { timeout }).catch(() => undefined)))
    }
  }

  return {
    stop,
    settle,
    expectTab: () => {
      tabExpected = true
    },
    navigated: () => committed,
    newTabs: () => newPages.map((p) => lease.pages().indexOf(p)).filter((i) => i >= 0)
  }
}

const activePage = (lease: ContextLease) =>
  attempt(lease, "open tab", 10_000, async () => {
    const current = lease.page()
    if (current !== undefined) return current
    const page = await lease.context.newPage()
    lease.setActivePage(page)
    return page
  })

/** The distinct messages of refusals, at most five (what the agent is told). */
export const refusedMessages = (refusals: ReadonlyArray<NavigationRefused>): ReadonlyArray<string> =>
  [...new Set(refusals.map((refusal) => refusal.message))].slice(0, 5)

/** The guard's refusal recorded during an action wins over the browser's generic error. */
const refusalOr = <A>(lease: ContextLease, effect: Effect.Effect<A, ActionError>): Effect.Effect<A, ActionError> =>
  effect.pipe(
    Effect.catch((error) => {
      const refusal = lease.guard.takeRefusals().at(-1)
      return Effect.fail(refusal ?? error)
    }),
    Effect.flatMap((value) => {
      const refusal = lease.guard.takeRefusals().at(-1)
      return refusal === undefined ? Effect.succeed(value) : Effect.fail(refusal)
    })
  )

/**
 * Runs `f` on the active tab under a watch, then settles and reports. Refusals recorded by the
 * navigation guard during the action turn it into NavigationRefused.
 */
const act = (
  lease: ContextLease,
  action: string,
  timeoutMs: number,
  settleMs: number,
  f: (page: Page, expectTab: () => void) => Promise<string>,
  /** Wait for the page's reaction (timers, DOM) too: interactions, not navigations. */
  settleDom = false
): Effect.Effect<ActionOutcome, ActionError> =>
  refusalOr(
    lease,
    Effect.flatMap(activePage(lease), (page) => {
      // Refused while no action ran (a pop-up a late timer opened while the model was thinking):
      // not this action's failure, but said in its outcome rather than dropped.
      const earlier = refusedMessages([...lease.guard.takeRefusals(), ...lease.takeBlockedConnections()])
      lease.takeDialogs()
      const watcher = watch(lease, page)
      // Playwright's own timeout (timeoutMs) is the one to report, with its reason in plain words.
      let playwrightTimeout: string | undefined
      return attempt(lease, action, timeoutMs + settleMs + 1_000, async () => {
        const startedAt = Date.now()
        let message: string
        try {
          message = await f(page, watcher.expectTab)
        } catch (error) {
          if (isPlaywrightTimeout(error)) playwrightTimeout = timeoutReason(error.message)
          throw error
        }
        await watcher.settle(settleMs, settleDom ? { startedAt } : undefined)
        const newTabs = watcher.newTabs()
        const dialogs = lease.takeDialogs()
        const blockedHosts = [...new Set(lease.takeBlockedConnections().map((b) => {
          try {
            return new URL(b.url).host
          } catch {
            return b.url
          }
        }))]
        return {
          url: page.url(),
          navigated: watcher.navigated(),
          newTabs,
          message: message +
            (watcher.navigated() ? `; now at ${page.url()}` : "") +
            (newTabs.length > 0 ? `; opened tab ${newTabs.join(", ")} (use switch_tab)` : "") +
            (dialogs.length > 0 ? `; the page showed and we accepted: ${dialogs.join(", ")}` : "") +
            (blockedHosts.length > 0 ? `; blocked the page's requests to private addresses: ${blockedHosts.slice(0, 5).join(", ")}` : "") +
            (earlier.length > 0 ? `; before this action the browser refused what the page tried to open: ${earlier.join("; ")}` : "")
        }
      }).pipe(
        Effect.mapError((error) =>
          playwrightTimeout !== undefined && error._tag === "ActionTimeout"
            ? new ActionTimeout({ action, timeoutMs, message: `${action} did not finish within ${timeoutMs} ms${playwrightTimeout}` })
            : plainError(error)
        ),
        Effect.ensuring(Effect.sync(watcher.stop))
      )
    })
  )

// Playwright's messages carry terminal colour codes in their call logs.
const colourCodes = /\u001b\[[0-9;]*m/g

/** The last line of a Playwright call log that says why an action timed out (", element is not visible"). */
const timeoutReason = (message: string): string => {
  const why = message.replace(colourCodes, "").split("\n").map((l) => l.trim().replace(/^- /, "")).filter((l) =>
    /intercepts pointer events|not visible|not enabled|not stable|not editable|detached|waiting for/.test(l)
  ).at(-1)
  return why === undefined ? "" : `: ${why}`
}

/** The error with its message as plain text (no colour codes, no Playwright method prefix). */
const plainError = (error: ActionError): ActionError => {
  if (error._tag !== "ActionFailed" && error._tag !== "ActionTimeout") return error
  const message = error.message.replace(colourCodes, "").replace(/\b(?:elementHandle|locator|page|frame|mouse|keyboard)\.\w+: /g, "")
  if (message === error.message) return error
  return error._tag === "ActionFailed"
    ? new ActionFailed({ action: error.action, message })
    : new ActionTimeout({ action: error.action, timeoutMs: error.timeoutMs, message })
}

/**
 * Resolves a ref to its element handle (or fails with ElementNotFound) and runs `f` on it.
 * `pre` runs in the element's frame at the same time as the lookup, saving a round trip.
 */
const withElement = <P = undefined>(
  lease: ContextLease,
  ref: string,
  action: string,
  timeouts: ActionTimeouts,
  f: (element: ElementHandle<Element>, page: Page, expectTab: () => void, pre: P | undefined, location: RefLocation) => Promise<string>,
  pre?: (location: RefLocation) => Promise<P>,
  settleDom = true
): Effect.Effect<ActionOutcome, ActionError> =>
  Effect.flatMap(activePage(lease), (page) =>
    attempt(lease, `${action} ${ref}`, 5_000, async () => {
      const location = await locateRef(page, ref)
      if (location === undefined) return undefined
      const [element, preResult] = await Promise.all([
        elementAt(location),
        pre === undefined ? Promise.resolve(undefined) : pre(location).catch(() => undefined)
      ])
      return element === undefined ? undefined : { element, preResult, location }
    }).pipe(
      Effect.flatMap((found) =>
        found === undefined
          ? Effect.fail(
            new ElementNotFound({
              ref,
              message: `no element ${ref} on the page any more (it changed or navigated); observe again for fresh refs`
            })
          )
          : act(lease, `${action} ${ref}`, timeouts.actionMs, timeouts.settleMs, (p, expectTab) =>
            f(found.element, p, expectTab, found.preResult, found.location), settleDom).pipe(
              // Released in the background: nobody needs to wait for the handle's disposal.
              Effect.ensuring(Effect.sync(() => void found.element.dispose().catch(() => undefined)))
            )
      )
    ))

export const navigate = (lease: ContextLease, url: string, timeouts: ActionTimeouts = defaultTimeouts) =>
  Effect.gen(function*() {
    let target = url.trim()
    if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) target = `https://${target}`
    yield* lease.guard.check(target)
    return yield* act(lease, "navigate", timeouts.navigationMs, timeouts.settleMs, async (page) => {
      const response = await page.goto(target, { waitUntil: "domcontentloaded", timeout: timeouts.navigationMs })
      const status = response?.status()
      return `navigated to ${page.url()}${status !== undefined && status >= 400 ? ` (HTTP ${status})` : ""}`
    })
  })

/** What covers an element: the covering element and the controls inside it, with their ref numbers. */
interface Cover {
  readonly element: string
  readonly id: number | null
  readonly controls: ReadonlyArray<{ readonly id: number; readonly name: string }>
}

/**
 * Evaluated in the element's frame (by ref number, alongside the ref lookup): is the element
 * clickable right now (enabled, visible, in view, not covered at its centre), will the click
 * open a new tab, and, when another element is on top, what covers it (with refs for the
 * cover's controls, given now if the last snapshot did not have them, so the agent can close
 * it). Self-contained: it reads and extends the ref table page-script.ts keeps.
 *
 * Given an iframe element and a point in that frame's viewport instead, it tells the same of
 * the point in this (the parent) document: whether the iframe is on top there, or what covers
 * it. A frame's own probe cannot see an overlay of the page around the frame.
 */
function probeClick(arg: number | { readonly frameElement: Element; readonly x: number; readonly y: number }): {
  ready: boolean
  opensTab: boolean
  cover?: Cover
  x?: number
  y?: number
} {
  const table = (window as unknown as Record<symbol, { next: number; ids: WeakMap<Element, number>; els: Map<number, WeakRef<Element>> } | undefined>)[
    Symbol.for("web-agent-service.refs")
  ]
  if (table === undefined) return { ready: false, opensTab: false }
  let el: Element
  let opensTab = false
  let x: number
  let y: number
  if (typeof arg === "number") {
    const found = table.els.get(arg)?.deref()
    if (found === undefined || !found.isConnected) return { ready: false, opensTab: false }
    el = found
    const link = el.closest("a[href], area[href]")
    const form = (el as HTMLButtonElement).form ?? null
    const target = (link?.getAttribute("target") ?? form?.getAttribute("target") ?? "").toLowerCase()
    opensTab = target !== "" && target !== "_self" && target !== "_parent" && target !== "_top"
    if ((el as HTMLButtonElement).disabled === true || el.getAttribute("aria-disabled") === "true") {
      return { ready: false, opensTab }
    }
    if (!el.checkVisibility({ visibilityProperty: true, opacityProperty: true })) return { ready: false, opensTab }
    let r = el.getBoundingClientRect()
    if (r.bottom < 0 || r.right < 0 || r.top > window.innerHeight || r.left > window.innerWidth) {
      el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" })
      r = el.getBoundingClientRect()
    }
    if (r.width < 1 || r.height < 1) return { ready: false, opensTab }
    x = r.left + r.width / 2
    y = r.top + r.height / 2
  } else {
    // The frame's content box starts inside its border and padding.
    el = arg.frameElement
    const r = el.getBoundingClientRect()
    const style = getComputedStyle(el)
    x = r.left + el.clientLeft + parseFloat(style.paddingLeft) + arg.x
    y = r.top + el.clientTop + parseFloat(style.paddingTop) + arg.y
  }
  let hit: Element | null = document.elementFromPoint(x, y)
  while (hit?.shadowRoot) {
    const inner: Element | null = hit.shadowRoot.elementFromPoint(x, y)
    if (inner === null || inner === hit) break
    hit = inner
  }
  const parentOf = (n: Element): Element | null => n.parentElement ?? ((n.getRootNode() as ShadowRoot).host ?? null)
  for (let n: Element | null = hit; n !== null; n = parentOf(n)) {
    if (n === el) return { ready: true, opensTab, x, y }
  }
  // A control's own label on top of it (a tile, a styled radio) takes the click for it.
  const labels = (el as HTMLInputElement).labels
  if (hit !== null && labels !== undefined && labels !== null) {
    for (const label of Array.from(labels)) if (label.contains(hit)) return { ready: true, opensTab, x, y }
  }
  if (hit === null || hit.contains(el)) return { ready: false, opensTab }
  // The cover: the outermost ancestor of the hit element that does not hold the target.
  let cover: Element = hit
  for (let p = parentOf(cover); p !== null && !p.contains(el) && p !== document.body; p = parentOf(p)) cover = p
  const refOf = (n: Element): number => {
    let ref = table.ids.get(n)
    if (ref === undefined) {
      ref = table.next++
      table.ids.set(n, ref)
      table.els.set(ref, new WeakRef(n))
    }
    return ref
  }
  const text = (n: Element) => (n.getAttribute("aria-label") ?? n.getAttribute("title") ?? (n as HTMLElement).innerText ?? n.textContent ?? "")
    .replace(/\s+/g, " ").trim()
  const short = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s)
  const controls = Array.from(cover.querySelectorAll("button, a[href], input:not([type=hidden]), select, [role=button], [role=link], [onclick], [aria-label], [title]"))
    .filter((n) => n.checkVisibility() && (n.tagName === "INPUT" || text(n) !== ""))
    .slice(0, 5)
    .map((n) => ({ id: refOf(n), name: short(text(n) || (n as HTMLInputElement).value || n.tagName.toLowerCase(), 30) }))
  const classes = Array.from(cover.classList).slice(0, 2).map((c) => `.${c}`).join("")
  return {
    ready: false,
    opensTab,
    cover: {
      element: `<${cover.tagName.toLowerCase()}${cover.id ? `#${cover.id}` : ""}${classes}> "${short(text(cover), 60)}"`,
      // A cover with no control of its own (a backdrop beside its dialog) gets a ref: clicking
      // a backdrop closes many dialogs.
      id: controls.length === 0 ? refOf(cover) : table.ids.get(cover) ?? null,
      controls
    }
  }
}

/** A cover and the ref prefix of the frame it is in. */
interface FoundCover {
  readonly cover: Cover
  readonly prefix: string
}

/**
 * For an element in a frame that its own frame sees on top at (x, y), in that frame's viewport:
 * whether the page around the frame covers that point, in any frame up to the top document.
 * Undefined when nothing does (or it cannot tell).
 */
const coverAroundFrame = async (frame: Frame, prefix: string, x: number, y: number): Promise<FoundCover | undefined> => {
  for (let child = frame, parent = frame.parentFrame(); parent !== null; child = parent, parent = parent.parentFrame()) {
    const frameElement = (await child.frameElement()) as ElementHandle<Element>
    prefix = prefix.replace(/f\d+$/, "")
    const probe = await parent.evaluate(probeClick, { frameElement, x, y }).finally(() => void frameElement.dispose().catch(() => undefined))
    if (probe.cover !== undefined) return { cover: probe.cover, prefix }
    if (!probe.ready || probe.x === undefined || probe.y === undefined) return undefined
    x = probe.x
    y = probe.y
  }
  return undefined
}

/** How long a covered element may stay covered before the click fails (a fading toast clears sooner). */
const coveredGraceMs = 500

export const click = (lease: ContextLease, ref: string, timeouts: ActionTimeouts = defaultTimeouts) =>
  withElement<ReturnType<typeof probeClick>>(lease, ref, "click", timeouts, async (element, page, expectTab, first, location) => {
    let probe = first
    const ownPrefix = ref.replace(/e\d+$/, "")
    // Covered in its own frame, or (in an iframe) by the page around the frame.
    const coverOf = async (p: typeof probe): Promise<FoundCover | undefined> =>
      p?.cover !== undefined
        ? { cover: p.cover, prefix: ownPrefix }
        : p?.ready === true && p.x !== undefined && p.y !== undefined && location.frame !== page.mainFrame()
        ? await coverAroundFrame(location.frame, ownPrefix, p.x, p.y).catch(() => undefined)
        : undefined
    // A covered element fails fast, naming the cover, rather than waiting the whole timeout.
    const coveredUntil = Date.now() + coveredGraceMs
    let covered = await coverOf(probe)
    while (covered !== undefined && Date.now() < coveredUntil) {
      await sleep(50)
      probe = await location.frame.evaluate(probeClick, location.id).catch(() => undefined)
      covered = await coverOf(probe)
    }
    if (covered !== undefined) throw new Error(coveredMessage(ref, covered))
    if (probe?.opensTab === true) expectTab()
    // Playwright waits for a navigation the click scheduled to commit (it knows from the
    // browser, no timing guess); settle then waits for load. When the probe saw the element
    // enabled, visible and on top at its centre, the click skips Playwright's actionability
    // polling (~40 ms of animation frames); otherwise Playwright waits for the element to become
    // clickable and explains why when it does not.
    if (probe?.ready === true && probe.x !== undefined && probe.y !== undefined && location.frame === page.mainFrame()) {
      // On top at its centre in the top document: the mouse goes there and clicks, as Playwright's
      // forced click would, without building Playwright's injected script in a new document
      // (100–200 ms on the first click of each page).
      await page.mouse.click(probe.x, probe.y)
    } else {
      await element.click({ timeout: timeouts.actionMs, force: probe?.ready === true })
    }
    return `clicked ${ref}`
  }, (location) => location.frame.evaluate(probeClick, location.id))

const coveredMessage = (ref: string, { cover, prefix }: FoundCover): string => {
  const own = cover.id === null ? "" : ` [${prefix}e${cover.id}]`
  const controls = cover.controls.map((c) => `${JSON.stringify(c.name)} [${prefix}e${c.id}]`).join(", ")
  return `${ref} is covered by ${cover.element}${own}` +
    (controls !== "" ? `, which holds ${controls}` : "") +
    (controls !== ""
      ? `; close or dismiss that first (or act on it), then click ${ref} again`
      : `; close or dismiss that first (click it, or press Escape), then click ${ref} again`)
}

export interface TypeOptions {
  /** Press Enter afterwards (submits most forms and search boxes). */
  readonly submit?: boolean
  /** Replace the current value (default) or append to it. */
  readonly clear?: boolean
  /**
   * The text holds secret values (src/secrets/, substituted by the agent's tools): they go only
   * into a text field whose document still has `origin` (checked in the page right before
   * typing), the field is concealed first (concealField), and the outcome says `shown` (the
   * placeholders) instead of the text.
   */
  readonly secret?: { readonly shown: string; readonly origin: string }
}

/**
 * Evaluated in the page on a field about to receive a secret: masks it on screen (screenshots,
 * live view), in recordings (rrweb treats `data-rr-is-password` fields as passwords and records
 * no value) and in observations (page-script.ts shows a `data-wa-secret` field's value as dots).
 * Returns the field's document origin and whether it takes text; only such a field is marked.
 * Self-contained: it runs in the page.
 */
function concealField(target: Element | null): { readonly origin: string; readonly editable: boolean; readonly frame: boolean } {
  // type_at passes null: the field is the one the click focused.
  const el = target ?? document.activeElement
  const frame = el !== null && (el.tagName === "IFRAME" || el.tagName === "FRAME")
  const editable = el !== null && (
    (el instanceof HTMLInputElement && !["checkbox", "radio", "button", "submit", "reset", "image", "file", "hidden", "range", "color"].includes(el.type)) ||
    el instanceof HTMLTextAreaElement || (el as HTMLElement).isContentEditable === true
  )
  if (el !== null && editable) {
    el.setAttribute("data-wa-secret", "")
    el.setAttribute("data-rr-is-password", "")
    ;(el as HTMLElement).style.setProperty("-webkit-text-security", "disc", "important")
  }
  return { origin: (el?.ownerDocument ?? document).location.origin, editable, frame }
}

/** Checks a concealField answer against the origin a secret was released for; the reason to refuse otherwise. */
const secretFieldProblem = (
  state: ReturnType<typeof concealField>,
  what: string,
  origin: string
): string | undefined =>
  state.frame
    ? `${what} is inside a frame; type the secret with type and the field's ref`
    : !state.editable
    ? `${what} is not a text field (input, textarea or contenteditable); a secret is typed only into a field`
    : state.origin !== origin
    ? `${what} is now on ${state.origin}, not ${origin}; observe the page again`
    : undefined

/** The origin of the document holding the element of a ref (where a secret typed into it would go). */
export const fieldOrigin = (lease: ContextLease, ref: string) =>
  Effect.flatMap(activePage(lease), (page) =>
    attempt(lease, `locate ${ref}`, 5_000, async () => {
      const location = await locateRef(page, ref)
      const element = location === undefined ? undefined : await elementAt(location)
      if (element === undefined) return undefined
      try {
        return await element.evaluate((el) => el.ownerDocument.location.origin)
      } finally {
        void element.dispose().catch(() => undefined)
      }
    }).pipe(Effect.flatMap((origin) =>
      origin === undefined
        ? Effect.fail(new ElementNotFound({ ref, message: `no element ${ref} on the page any more (it changed or navigated); observe again for fresh refs` }))
        : Effect.succeed(origin)
    )))

/** The origin of the active tab's top document (where type_at types, unless the point is in a frame). */
export const pageOrigin = (lease: ContextLease) =>
  Effect.flatMap(activePage(lease), (page) => attempt(lease, "read the page's origin", 5_000, () => page.mainFrame().evaluate(() => location.origin)))

const typedText = (text: string, options: TypeOptions) => {
  const shown = options.secret?.shown ?? text
  return JSON.stringify(shown.length > 40 ? `${shown.slice(0, 40)}…` : shown)
}

export const type = (
  lease: ContextLease,
  ref: string,
  text: string,
  options: TypeOptions = {},
  timeouts: ActionTimeouts = defaultTimeouts
) =>
  withElement<ReturnType<typeof focusRefForTyping>>(lease, ref, "type", timeouts, async (element, page, _expectTab, prepared, location) => {
    if (options.secret !== undefined) {
      const problem = secretFieldProblem(await element.evaluate(concealField), ref, options.secret.origin)
      if (problem !== undefined) throw new Error(problem)
    }
    const state = prepared !== undefined && prepared !== "gone" ? prepared : await element.evaluate((el) =>
      el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || (el as HTMLElement).isContentEditable ? "editable" : "other"
    )
    const editable = state !== "other"
    if (state === "ready") {
      // Focused, its text selected: the new text replaces it, as a paste would (fill's own way).
      await page.keyboard.insertText(text)
      // The browser answers before the page has handled the insertion; the settle that follows
      // must see the page's reaction (a debounce timer set by its input event), so wait until
      // the field holds the text (bounded: a page may rewrite what was typed).
      for (let tries = 0; tries < 20; tries++) {
        const value = await location.frame.evaluate(valueOfRef, location.id).catch(() => undefined)
        if (value === undefined || value.includes(text)) break
        await sleep(10)
      }
    } else if (editable && options.clear !== false) {
      await element.fill(text, { timeout: timeouts.actionMs })
    } else {
      // Custom widgets and append mode: focus it like a user and type the keys.
      await element.click({ timeout: timeouts.actionMs })
      if (editable) await element.press("End", { timeout: timeouts.actionMs })
      await page.keyboard.type(text)
    }
    if (options.submit === true) await element.press("Enter", { timeout: timeouts.actionMs })
    return `typed ${typedText(text, options)} into ${ref}${options.submit === true ? " and pressed Enter" : ""}`
  }, options.clear !== false && text !== ""
    // Replacing the text: the field is focused with its text selected alongside the ref lookup.
    ? (location) => location.frame.evaluate(focusRefForTyping, location.id)
    : undefined)

export const pressKey = (lease: ContextLease, key: string, timeouts: ActionTimeouts = defaultTimeouts) =>
  act(lease, `press ${key}`, timeouts.actionMs, timeouts.settleMs, async (page) => {
    await page.keyboard.press(key)
    return `pressed ${key}`
  }, true)

export const selectOption = (
  lease: ContextLease,
  ref: string,
  values: ReadonlyArray<string>,
  timeouts: ActionTimeouts = defaultTimeouts
) =>
  withElement(lease, ref, "select_option", timeouts, async (element) => {
    const isSelect = await element.evaluate((el) => el instanceof HTMLSelectElement)
    if (!isSelect) throw new Error(`${ref} is not a <select>; click it and then click the option instead`)
    // Playwright matches each value against option values and labels.
    const chosen = await element.selectOption([...values], { timeout: timeouts.actionMs })
    return `selected ${chosen.join(", ")} in ${ref}`
  })

export type ScrollTarget =
  | { readonly direction: "up" | "down" | "left" | "right"; readonly amount?: number }
  | { readonly ref: string }

export const scroll = (lease: ContextLease, target: ScrollTarget, timeouts: ActionTimeouts = defaultTimeouts) =>
  "ref" in target
    ? withElement(lease, target.ref, "scroll", timeouts, async (element) => {
      await element.scrollIntoViewIfNeeded({ timeout: timeouts.actionMs })
      return `scrolled ${target.ref} into view`
    })
    : act(lease, `scroll ${target.direction}`, timeouts.actionMs, timeouts.settleMs, async (page) => {
      const viewport = page.viewportSize() ?? { width: 1280, height: 800 }
      const vertical = target.direction === "up" || target.direction === "down"
      const amount = target.amount ?? Math.round((vertical ? viewport.height : viewport.width) * 0.8)
      const sign = target.direction === "up" || target.direction === "left" ? -1 : 1
      // Wheel over the middle of the viewport scrolls whatever a user would scroll there.
      await page.mouse.move(viewport.width / 2, viewport.height / 2)
      await page.mouse.wheel(vertical ? 0 : sign * amount, vertical ? sign * amount : 0)
      await sleep(50)
      const position = await page.evaluate(() => ({
        y: Math.round(window.scrollY),
        max: Math.max(0, Math.round(document.documentElement.scrollHeight - window.innerHeight))
      }))
      return `scrolled ${target.direction} by ${amount}px (page at ${position.y}/${position.max}px)`
    })

export const hover = (lease: ContextLease, ref: string, timeouts: ActionTimeouts = defaultTimeouts) =>
  withElement(lease, ref, "hover", timeouts, async (element) => {
    await element.hover({ timeout: timeouts.actionMs })
    return `hovering over ${ref}`
  })

/** Where a drag ends: on the element of another ref, or an offset in CSS pixels from where it starts. */
export type DragTarget = { readonly ref: string } | { readonly dx: number; readonly dy: number }

const centre = (box: { x: number; y: number; width: number; height: number }) => ({ x: box.x + box.width / 2, y: box.y + box.height / 2 })

/**
 * Drags the element of a ref like a person does: press on its centre, move a few pixels (past
 * the activation distance of pointer-event libraries, which also starts an HTML5 drag:
 * Playwright's Chromium input carries dragstart / dragover / drop), glide to the target in
 * steps, release. The target's box is read after the drag started, as sortable lists move their
 * items aside when it does.
 */
export const drag = (lease: ContextLease, ref: string, target: DragTarget, timeouts: ActionTimeouts = defaultTimeouts) =>
  withElement(lease, ref, "drag", timeouts, async (source, page) => {
    await source.scrollIntoViewIfNeeded({ timeout: timeouts.actionMs })
    const from = await source.boundingBox()
    if (from === null) throw new Error(`${ref} has no box on the page (it is hidden); observe again`)
    const onto = "ref" in target ? await resolveRefHandle(page, target.ref) : undefined
    if ("ref" in target && onto === undefined) {
      throw new Error(`no element ${target.ref} on the page any more (it changed or navigated); observe again for fresh refs`)
    }
    try {
      const start = centre(from)
      const targetBox = onto === undefined ? null : await onto.boundingBox()
      if (onto !== undefined && targetBox === null) throw new Error(`${"ref" in target ? target.ref : ""} has no box on the page (it is hidden)`)
      const aim = targetBox !== null ? centre(targetBox) : { x: start.x + ("dx" in target ? target.dx : 0), y: start.y + ("dy" in target ? target.dy : 0) }
      const distance = Math.hypot(aim.x - start.x, aim.y - start.y)
      const unit = distance < 1 ? { x: 1, y: 0 } : { x: (aim.x - start.x) / distance, y: (aim.y - start.y) / distance }
      const nudge = Math.min(10, Math.max(distance, 1))
      await page.mouse.move(start.x, start.y)
      await page.mouse.down()
      await page.mouse.move(start.x + unit.x * nudge, start.y + unit.y * nudge, { steps: 3 })
      await sleep(60)
      const moved = onto === undefined ? null : await onto.boundingBox()
      const end = moved !== null ? centre(moved) : aim
      await page.mouse.move(end.x, end.y, { steps: Math.max(8, Math.min(25, Math.round(distance / 20))) })
      await sleep(60)
      // One more event over the target: libraries decide the drop position on the latest move.
      await page.mouse.move(end.x, end.y + 1)
      await page.mouse.up()
      return "ref" in target
        ? `dragged ${ref} onto ${target.ref}`
        : `dragged ${ref} by (${Math.round(target.dx)}, ${Math.round(target.dy)}) px`
    } finally {
      void onto?.dispose().catch(() => undefined)
    }
  })

/** Evaluated in the page: a short description of the element at viewport point (x, y), with its ref when it has one. */
function describePoint(point: { x: number; y: number }): string {
  const table = (window as unknown as Record<symbol, { ids: WeakMap<Element, number> } | undefined>)[Symbol.for("web-agent-service.refs")]
  let hit = document.elementFromPoint(point.x, point.y)
  while (hit?.shadowRoot) {
    const inner = hit.shadowRoot.elementFromPoint(point.x, point.y)
    if (inner === null || inner === hit) break
    hit = inner
  }
  if (hit === null) return "nothing"
  let ref: number | undefined
  for (let n: Element | null = hit; n !== null && ref === undefined; n = n.parentElement) ref = table?.ids.get(n)
  const text = (hit.getAttribute("aria-label") ?? (hit as HTMLElement).innerText ?? "").replace(/\s+/g, " ").trim()
  return `<${hit.tagName.toLowerCase()}>${text ? ` ${JSON.stringify(text.length > 40 ? `${text.slice(0, 39)}…` : text)}` : ""}${ref === undefined ? "" : ` (in [e${ref}])`}`
}

const pointAction = (
  lease: ContextLease,
  label: string,
  x: number,
  y: number,
  timeouts: ActionTimeouts,
  f: (page: Page, what: string) => Promise<string>
) =>
  act(lease, label, timeouts.actionMs, timeouts.settleMs, async (page) => {
    const viewport = page.viewportSize() ?? await page.evaluate(() => ({ width: window.innerWidth, height: window.innerHeight }))
    if (!Number.isFinite(x) || !Number.isFinite(y) || x < 0 || y < 0 || x >= viewport.width || y >= viewport.height) {
      throw new Error(`(${x}, ${y}) is outside the viewport (${viewport.width}×${viewport.height} CSS px); scroll to bring the spot into view`)
    }
    const what = await page.evaluate(describePoint, { x, y }).catch(() => "an element")
    return f(page, what)
  }, true)

/** Clicks at a point of the viewport (CSS pixels from its top-left corner, as in a screenshot). */
export const clickAt = (lease: ContextLease, x: number, y: number, timeouts: ActionTimeouts = defaultTimeouts) =>
  pointAction(lease, `click_at (${x}, ${y})`, x, y, timeouts, async (page, what) => {
    await page.mouse.click(x, y)
    return `clicked at (${x}, ${y}) on ${what}`
  })

/**
 * Clicks at a point of the viewport and types there: a field that takes the focus has its value
 * replaced (as `type` does); a canvas or custom widget just receives the keys.
 */
export const typeAt = (
  lease: ContextLease,
  x: number,
  y: number,
  text: string,
  options: TypeOptions = {},
  timeouts: ActionTimeouts = defaultTimeouts
) =>
  pointAction(lease, `type_at (${x}, ${y})`, x, y, timeouts, async (page, what) => {
    await page.mouse.click(x, y)
    if (options.secret !== undefined) {
      const problem = secretFieldProblem(await page.evaluate(concealField, null), `the field at (${x}, ${y})`, options.secret.origin)
      if (problem !== undefined) throw new Error(problem)
    }
    if (options.clear !== false) {
      await page.evaluate(() => {
        const el = document.activeElement
        if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) el.select()
        else if ((el as HTMLElement | null)?.isContentEditable === true) document.execCommand("selectAll")
      })
    }
    await page.keyboard.type(text)
    if (options.submit === true) await page.keyboard.press("Enter")
    return `typed ${typedText(text, options)} at (${x}, ${y}) into ${what}${options.submit === true ? " and pressed Enter" : ""}`
  })

export const goBack = (lease: ContextLease, timeouts: ActionTimeouts = defaultTimeouts) =>
  act(lease, "go_back", timeouts.navigationMs, timeouts.settleMs, async (page) => {
    const response = await page.goBack({ waitUntil: "domcontentloaded", timeout: timeouts.navigationMs })
    if (response === null && page.url() === "about:blank") throw new Error("there is no previous page in this tab")
    return `went back to ${page.url()}`
  })

export type WaitForOptions =
  | { readonly text: string; readonly timeoutMs?: number }
  | { readonly ref: string; readonly timeoutMs?: number }
  | { readonly timeoutMs: number }

/** Text appearing in any frame, an element of a ref becoming visible, or just time passing. */
export const waitFor = (lease: ContextLease, options: WaitForOptions) => {
  const timeoutMs = Math.min(Math.max(options.timeoutMs ?? 10_000, 0), 60_000)
  const label = "text" in options ? `wait_for text ${JSON.stringify(options.text)}` : "ref" in options ? `wait_for ${options.ref}` : "wait"
  return Effect.flatMap(activePage(lease), (page) =>
    attempt(lease, label, timeoutMs + 2_000, async () => {
      if (!("text" in options) && !("ref" in options)) {
        await sleep(timeoutMs)
        return { found: true, message: `waited ${timeoutMs} ms` }
      }
      const deadline = Date.now() + timeoutMs
      for (;;) {
        if ("text" in options) {
          for (const frame of page.frames()) {
            const visible = await frame.getByText(options.text).first().isVisible().catch(() => false)
            if (visible) return { found: true, message: `found text ${JSON.stringify(options.text)}` }
          }
        } else {
          const element = await resolveRefHandle(page, options.ref).catch(() => undefined)
          const visible = element === undefined ? false : await element.isVisible().catch(() => false)
          await element?.dispose().catch(() => undefined)
          if (visible) return { found: true, message: `${options.ref} is visible` }
        }
        if (Date.now() >= deadline) return { found: false, message: "" }
        await sleep(100)
      }
    }).pipe(
      Effect.flatMap((r) =>
        r.found
          ? Effect.succeed<ActionOutcome>({ url: page.url(), navigated: false, newTabs: [], message: r.message })
          : Effect.fail(new ActionTimeout({ action: label, timeoutMs, message: `${label}: not there after ${timeoutMs} ms` }))
      )
    ))
}

export const switchTab = (lease: ContextLease, index: number) =>
  Effect.gen(function*() {
    const pages = lease.pages()
    const page = pages[index]
    if (page === undefined) {
      return yield* new ActionFailed({ action: "switch_tab", message: `no tab ${index}; open tabs are 0..${pages.length - 1}` })
    }
    lease.setActivePage(page)
    yield* attempt(lease, "switch_tab", 5_000, () => page.bringToFront())
    const outcome: ActionOutcome = { url: page.url(), navigated: false, newTabs: [], message: `switched to tab ${index} (${page.url()})` }
    return outcome
  })

export const screenshot = takeScreenshot

export { ActionFailed, ActionTimeout, BrowserCrashed, ElementNotFound, NavigationRefused }
