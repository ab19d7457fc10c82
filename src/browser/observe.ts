/**
 * Page observation for the agent: a compact text snapshot with stable element refs (iframes
 * and open shadow roots included), the URL, title and tab list; a JPEG screenshot on demand.
 *
 * The snapshot is built by `snapshotFrame` (page-script.ts) evaluated in each frame; iframe
 * placeholders are replaced by the child frame's snapshot, whose refs carry the frame path
 * ("f2e7" = element 7 of iframe 2 of the main frame).
 */
import { Effect } from "effect"
import type { ElementHandle, Frame, Page } from "playwright-core"
import type { ActionFailed, ActionTimeout, BrowserCrashed } from "./errors.ts"
import { elementForRef, iframeForNumber, numberOfIframe, snapshotFrame } from "./page-script.ts"
import { attempt, type ContextLease } from "./pool.ts"

/** How the snapshot reads, for the agent's tool descriptions. */
export const snapshotFormatHelp = [
  "The page snapshot lists visible content, one item per line, indented under containers (nav:, form:, dialog:, main: ...).",
  "`# text` is a heading; plain lines are page text, cut with … when long.",
  "Interactive elements read `role \"name\" [ref] =\"value\" states`, e.g. `button \"Send\" [e12]`, `textbox \"Email\" [e4] =\"a@b.c\"`,",
  "`combobox \"Colour\" [e5] =\"Red\" {Red|Green|Blue}`. Use the ref (e12, f1e3 inside an iframe) to act on the element.",
  "`clickable` is an element that looks clickable (pointer cursor) without a role; `draggable` is a drag source and `dropzone \"name\" [ref]:` a drop target (use drag);",
  "a slider handle's `track=300px at=90px` says where it sits, to drag it by dx. A checkbox or radio drawn by its label is listed once, as the control.",
  "Refs stay the same while the element stays on the page; after a navigation observe again."
].join("\n")

export interface SnapshotOptions {
  /** Characters of plain text kept per line (default 80). */
  readonly textBudget?: number
  /** Characters kept of an element's name (default 60). */
  readonly nameBudget?: number
  /** Deepest iframe nesting to include (default 3). */
  readonly maxFrameDepth?: number
}

export interface ObserveOptions extends SnapshotOptions {
  /** Snapshot characters kept for the model (default 60 000, about 15k tokens); the rest is cut with a note. */
  readonly maxChars?: number
  readonly timeoutMs?: number
}

export interface PageSnapshot {
  readonly text: string
  /** Number of element refs in the snapshot. */
  readonly refs: number
  /** Main frame scroll position and maximum, CSS pixels. */
  readonly scrollY: number
  readonly scrollMax: number
}

export interface TabInfo {
  readonly index: number
  readonly url: string
  readonly title: string
  readonly active: boolean
}

export interface Observation {
  readonly url: string
  readonly title: string
  readonly tabs: ReadonlyArray<TabInfo>
  readonly snapshot: string
  readonly refs: number
  /** Header (url, title, tabs) and snapshot, ready for the model. */
  readonly text: string
}

const FRAME_MARK = "\u0001"

const frameNumbers = async (frame: Frame): Promise<Map<number, Frame>> => {
  const out = new Map<number, Frame>()
  await Promise.all(frame.childFrames().map(async (child) => {
    const handle = await child.frameElement().catch(() => undefined)
    if (handle === undefined) return
    const n = await handle.evaluate(numberOfIframe).catch(() => null)
    await handle.dispose().catch(() => undefined)
    if (n !== null) out.set(n, child)
  }))
  return out
}

const snapshotTree = async (frame: Frame, prefix: string, depth: number, options: SnapshotOptions): Promise<PageSnapshot> => {
  const own = await frame.evaluate(snapshotFrame, {
    prefix,
    textBudget: options.textBudget ?? 80,
    nameBudget: options.nameBudget ?? 60
  })
  if (!own.text.includes(FRAME_MARK)) return own
  const children = await frameNumbers(frame)
  let refs = own.refs
  const lines: Array<string> = []
  for (const line of own.text.split("\n")) {
    const at = line.indexOf(FRAME_MARK)
    if (at < 0) {
      lines.push(line)
      continue
    }
    const indent = line.slice(0, at)
    const n = Number(line.slice(at + 1))
    const child = children.get(n)
    if (child === undefined || depth >= (options.maxFrameDepth ?? 3)) {
      lines.push(`${indent}iframe (not loaded)`)
      continue
    }
    const inner = await snapshotTree(child, `${prefix}f${n}`, depth + 1, options).catch(() => undefined)
    if (inner === undefined) {
      lines.push(`${indent}iframe (unavailable)`)
      continue
    }
    refs += inner.refs
    if (inner.text.trim() === "") continue
    lines.push(`${indent}iframe:`)
    for (const innerLine of inner.text.split("\n")) lines.push(`${indent} ${innerLine}`)
  }
  return { text: lines.join("\n"), refs, scrollY: own.scrollY, scrollMax: own.scrollMax }
}

/** The compact snapshot of a page (all frames), as plain Promise for benchmarks and readers. */
export const snapshotPage = (page: Page, options: SnapshotOptions = {}): Promise<PageSnapshot> =>
  snapshotTree(page.mainFrame(), "", 0, options)

const refPattern = /^((?:f\d+)*)e(\d+)$/

/** Where a ref lives: its frame and its element number there. */
export interface RefLocation {
  readonly frame: Frame
  readonly id: number
}

/** Finds the frame of a ref (no page round trip for main-frame refs); undefined when malformed or gone. */
export const locateRef = async (page: Page, ref: string): Promise<RefLocation | undefined> => {
  const match = refPattern.exec(ref.trim().replace(/^\[|\]$/g, ""))
  if (match === null) return undefined
  let frame: Frame = page.mainFrame()
  for (const segment of (match[1] ?? "").match(/f\d+/g) ?? []) {
    const handle = await frame.evaluateHandle(iframeForNumber, Number(segment.slice(1)))
    const element = handle.asElement()
    const next = element === null ? null : await element.contentFrame()
    await handle.dispose()
    if (next === null) return undefined
    frame = next
  }
  return { frame, id: Number(match[2]) }
}

/** The element handle at a ref location; undefined when the element is gone. */
export const elementAt = async (location: RefLocation): Promise<ElementHandle<Element> | undefined> => {
  const handle = await location.frame.evaluateHandle(elementForRef, location.id)
  const element = handle.asElement()
  if (element === null) {
    await handle.dispose()
    return undefined
  }
  return element as ElementHandle<Element>
}

/** Finds the element of a ref across frames; undefined when the ref is stale or malformed. */
export const resolveRefHandle = async (page: Page, ref: string): Promise<ElementHandle<Element> | undefined> => {
  const location = await locateRef(page, ref)
  return location === undefined ? undefined : elementAt(location)
}

const tabsOf = async (lease: ContextLease): Promise<ReadonlyArray<TabInfo>> => {
  const active = lease.page()
  return Promise.all(lease.pages().map(async (p, index) => ({
    index,
    url: p.url(),
    title: await p.title().catch(() => ""),
    active: p === active
  })))
}

const renderHeader = (url: string, title: string, tabs: ReadonlyArray<TabInfo>, snapshot: PageSnapshot): string => {
  const lines = [`url: ${url}`, `title: ${title}`]
  if (snapshot.scrollMax > 0) lines.push(`scroll: ${snapshot.scrollY}/${snapshot.scrollMax}px`)
  if (tabs.length > 1) {
    lines.push(`tabs: ${tabs.map((t) => `${t.index}${t.active ? "*" : ""} ${JSON.stringify(t.title.slice(0, 40) || t.url.slice(0, 60))}`).join(" | ")}`)
  }
  return lines.join("\n")
}

/** What `observe` reads in a blank tab, the only one of its context. */
export const blankObservation: Observation = {
  url: "about:blank",
  title: "",
  tabs: [{ index: 0, url: "about:blank", title: "", active: true }],
  snapshot: "",
  refs: 0,
  text: "url: about:blank\ntitle: \n---\n"
}

/** Observes the lease's active tab. */
export const observe = (
  lease: ContextLease,
  options: ObserveOptions = {}
): Effect.Effect<Observation, BrowserCrashed | ActionTimeout | ActionFailed> =>
  attempt(lease, "observe", options.timeoutMs ?? 15_000, async () => {
    const page = lease.page() ?? await lease.context.newPage()
    lease.setActivePage(page)
    // The blank tab the pool just opened, that nothing has touched yet (the pool's flag, cleared
    // by any operation through the lease and any navigation, load or frame in the tab; a blank
    // URL alone says nothing: page.setContent and an opener write into blank tabs) shows
    // nothing: a run's first step saves the snapshot's round trips, slow when many sessions
    // start at once.
    if (lease.untouchedBlankTab(page) && page.url() === "about:blank" && lease.pages().length === 1 && page.mainFrame().childFrames().length === 0) {
      return blankObservation
    }
    // A document that is still being replaced cannot be evaluated; let it commit first.
    await page.waitForLoadState("domcontentloaded", { timeout: 5_000 }).catch(() => undefined)
    // A navigation can replace the document (or one of its frames) mid-snapshot, and a
    // refused or redirected navigation can do so more than once in a row: retry a few times.
    let snapshot: PageSnapshot | undefined
    for (let tries = 1; snapshot === undefined; tries++) {
      try {
        snapshot = await snapshotPage(page, options)
      } catch (error) {
        if (tries >= 4 || !/Execution context was destroyed|navigation/i.test(String(error))) throw error
        await new Promise((resolve) => setTimeout(resolve, 50 * tries))
        await page.waitForLoadState("domcontentloaded", { timeout: 5_000 }).catch(() => undefined)
      }
    }
    const [title, tabs] = await Promise.all([page.title().catch(() => ""), tabsOf(lease)])
    const url = page.url()
    const maxChars = options.maxChars ?? 60_000
    const lineEnd = snapshot.text.lastIndexOf("\n", maxChars)
    const text = snapshot.text.length <= maxChars
      ? snapshot.text
      : `${snapshot.text.slice(0, lineEnd > 0 ? lineEnd : maxChars)}\n… (snapshot cut at ${maxChars} characters; scroll or wait_for text to reach the rest)`
    return {
      url,
      title,
      tabs,
      snapshot: text,
      refs: snapshot.refs,
      text: `${renderHeader(url, title, tabs, snapshot)}\n---\n${text}`
    }
  }, false)

/** JPEG of the active tab's viewport (modest quality keeps it around 50-150 KB). */
export const screenshot = (
  lease: ContextLease,
  options: { readonly quality?: number; readonly fullPage?: boolean } = {}
): Effect.Effect<Uint8Array, BrowserCrashed | ActionTimeout | ActionFailed> =>
  attempt(lease, "screenshot", 15_000, async () => {
    const page = lease.page() ?? await lease.context.newPage()
    const buffer = await page.screenshot({
      type: "jpeg",
      quality: options.quality ?? 60,
      fullPage: options.fullPage ?? false,
      timeout: 14_000
    })
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
  })
