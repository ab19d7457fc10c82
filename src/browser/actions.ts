/**
 * The agent's browser tools, as Effects over a leased context and element refs from
 * `observe`. Every action is bounded in time, fails with a typed error the model can read, and
 * waits briefly afterwards for the page to settle (navigation committed, load fired, network
 * quiet - each with a short cap) so the next observation sees the result.
 */
import { Effect } from "effect"
import type { ElementHandle, Page, Request } from "playwright-core"
import { type ActionError, ActionFailed, ActionTimeout, BrowserCrashed, ElementNotFound, NavigationRefused } from "./errors.ts"
import { elementAt, locateRef, type RefLocation, resolveRefHandle, screenshot as takeScreenshot } from "./observe.ts"
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

  /** Waits until a started navigation commits and loads, and the network is quiet, all capped. */
  const settle = async (capMs: number): Promise<void> => {
    const deadline = Date.now() + capMs
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
  f: (page: Page, expectTab: () => void) => Promise<string>
): Effect.Effect<ActionOutcome, ActionError> =>
  refusalOr(
    lease,
    Effect.flatMap(activePage(lease), (page) => {
      lease.guard.takeRefusals()
      lease.takeDialogs()
      lease.takeBlockedConnections()
      const watcher = watch(lease, page)
      return attempt(lease, action, timeoutMs + settleMs + 1_000, async () => {
        const message = await f(page, watcher.expectTab)
        await watcher.settle(settleMs)
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
            (blockedHosts.length > 0 ? `; blocked the page's requests to private addresses: ${blockedHosts.slice(0, 5).join(", ")}` : "")
        }
      }).pipe(Effect.ensuring(Effect.sync(watcher.stop)))
    })
  )

/**
 * Resolves a ref to its element handle (or fails with ElementNotFound) and runs `f` on it.
 * `pre` runs in the element's frame at the same time as the lookup, saving a round trip.
 */
const withElement = <P = undefined>(
  lease: ContextLease,
  ref: string,
  action: string,
  timeouts: ActionTimeouts,
  f: (element: ElementHandle<Element>, page: Page, expectTab: () => void, pre: P | undefined) => Promise<string>,
  pre?: (location: RefLocation) => Promise<P>
): Effect.Effect<ActionOutcome, ActionError> =>
  Effect.flatMap(activePage(lease), (page) =>
    attempt(lease, `${action} ${ref}`, 5_000, async () => {
      const location = await locateRef(page, ref)
      if (location === undefined) return undefined
      const [element, preResult] = await Promise.all([
        elementAt(location),
        pre === undefined ? Promise.resolve(undefined) : pre(location).catch(() => undefined)
      ])
      return element === undefined ? undefined : { element, preResult }
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
            f(found.element, p, expectTab, found.preResult)).pipe(
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

/**
 * Evaluated in the element's frame (by ref number, alongside the ref lookup): is the element
 * clickable right now (enabled, visible, in view, not covered at its centre), and will the
 * click open a new tab? Self-contained: it reads the ref table page-script.ts keeps.
 */
function probeClick(id: number): { ready: boolean; opensTab: boolean } {
  const table = (window as unknown as Record<symbol, { els: Map<number, WeakRef<Element>> } | undefined>)[
    Symbol.for("web-agent-service.refs")
  ]
  const el = table?.els.get(id)?.deref()
  if (el === undefined || !el.isConnected) return { ready: false, opensTab: false }
  const link = el.closest("a[href], area[href]")
  const form = (el as HTMLButtonElement).form ?? null
  const target = (link?.getAttribute("target") ?? form?.getAttribute("target") ?? "").toLowerCase()
  const opensTab = target !== "" && target !== "_self" && target !== "_parent" && target !== "_top"
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
  const x = r.left + r.width / 2
  const y = r.top + r.height / 2
  let hit: Element | null = document.elementFromPoint(x, y)
  while (hit?.shadowRoot) {
    const inner: Element | null = hit.shadowRoot.elementFromPoint(x, y)
    if (inner === null || inner === hit) break
    hit = inner
  }
  for (let n: Element | null = hit; n !== null; n = n.parentElement ?? ((n.getRootNode() as ShadowRoot).host ?? null)) {
    if (n === el) return { ready: true, opensTab }
  }
  return { ready: false, opensTab }
}

export const click = (lease: ContextLease, ref: string, timeouts: ActionTimeouts = defaultTimeouts) =>
  withElement<ReturnType<typeof probeClick>>(lease, ref, "click", timeouts, async (element, _page, expectTab, probe) => {
    if (probe?.opensTab === true) expectTab()
    // Playwright waits for a navigation the click scheduled to commit (it knows from the
    // browser, no timing guess); settle then waits for load. When the probe saw the element
    // enabled, visible and on top at its centre, the click skips Playwright's actionability
    // polling (~40 ms of animation frames); otherwise Playwright waits for the element to become
    // clickable and explains why when it does not.
    await element.click({ timeout: timeouts.actionMs, force: probe?.ready === true })
    return `clicked ${ref}`
  }, (location) => location.frame.evaluate(probeClick, location.id))

export interface TypeOptions {
  /** Press Enter afterwards (submits most forms and search boxes). */
  readonly submit?: boolean
  /** Replace the current value (default) or append to it. */
  readonly clear?: boolean
}

export const type = (
  lease: ContextLease,
  ref: string,
  text: string,
  options: TypeOptions = {},
  timeouts: ActionTimeouts = defaultTimeouts
) =>
  withElement(lease, ref, "type", timeouts, async (element, page) => {
    const editable = await element.evaluate((el) =>
      el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || (el as HTMLElement).isContentEditable
    )
    if (editable && options.clear !== false) {
      await element.fill(text, { timeout: timeouts.actionMs })
    } else {
      // Custom widgets and append mode: focus it like a user and type the keys.
      await element.click({ timeout: timeouts.actionMs })
      if (editable) await element.press("End", { timeout: timeouts.actionMs })
      await page.keyboard.type(text)
    }
    if (options.submit === true) await element.press("Enter", { timeout: timeouts.actionMs })
    return `typed ${JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text)} into ${ref}${options.submit === true ? " and pressed Enter" : ""}`
  })

export const pressKey = (lease: ContextLease, key: string, timeouts: ActionTimeouts = defaultTimeouts) =>
  act(lease, `press ${key}`, timeouts.actionMs, timeouts.settleMs, async (page) => {
    await page.keyboard.press(key)
    return `pressed ${key}`
  })

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
