/**
 * Snapshot size against Playwright's AI snapshot, shared by the bench (bench/observation-size.ts)
 * and the test that holds the bound (test/browser/observation-size.test.ts), so both measure the
 * same thing on the same pages: our compact snapshot (src/browser/observe.ts) against
 * `page.ariaSnapshot({ mode: "ai" })`, in tokens (characters / 4), over the Readability test pages
 * (/work/shared/corpora/readability-pages) and the widget fixture pages (src/eval/widgets.ts).
 * Each page is served from memory for its own URL with every other request aborted, so no
 * network is used.
 */
import { readdir, readFile } from "node:fs/promises"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type Browser, type BrowserContext, chromium } from "playwright-core"
import { snapshotPage } from "../../src/browser/observe.ts"
import { auditRefs } from "../../src/browser/page-script.ts"
import { chromiumArgs } from "../../src/browser/pool.ts"
import { widgetPages } from "../../src/eval/widgets.ts"

/** The shared corpus, read in place: ../shared/corpora/readability-pages beside the checkout (/work/shared/… here). */
export const defaultCorpusDir = fileURLToPath(new URL("../../../shared/corpora/readability-pages/", import.meta.url))

/** The token estimate both sides are counted with. */
export const tokens = (text: string): number => Math.ceil(text.length / 4)

/** The pages measured: the corpus directory's .html files (sorted), then the widget pages as `widgets-<name>.html`. */
export const observationPages = async (dir: string, options: { readonly widgets?: boolean } = {}): Promise<Array<string>> => {
  const corpus = (await readdir(dir)).filter((f) => f.endsWith(".html")).sort()
  const widgets = options.widgets === false ? [] : Object.keys(widgetPages).map((path) => `${path.slice(1).replace(/\//g, "-")}.html`)
  return [...corpus, ...widgets]
}

export const isWidgetPage = (file: string) => file.startsWith("widgets-")

/** The HTML of a page `observationPages` named. */
export const htmlOf = (dir: string, file: string): Promise<string> =>
  isWidgetPage(file)
    ? Promise.resolve(widgetPages[`/${file.replace(/\.html$/, "").replace("-", "/")}`]!)
    : readFile(join(dir, file), "utf8")

/** A headless Chromium (CHROMIUM_PATH or /usr/bin/chromium) with the service's flags, and a 1280×800 context. */
export const launchForObservation = async (
  executablePath: string = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"
): Promise<{ browser: Browser; context: BrowserContext }> => {
  const browser = await chromium.launch({ executablePath, args: [...chromiumArgs] })
  return { browser, context: await browser.newContext({ viewport: { width: 1280, height: 800 }, javaScriptEnabled: true }) }
}

export interface PageMeasure {
  readonly file: string
  /** Our snapshot's text and its tokens. */
  readonly ours: string
  readonly oursTokens: number
  /** Playwright's AI snapshot and its tokens. */
  readonly aria: string
  readonly ariaTokens: number
  readonly oursMs: number
  readonly ariaMs: number
  /** Visible interactive elements and how many carry a ref (auditRefs). */
  readonly audit: { readonly visible: number; readonly withRef: number; readonly ariaHidden: number; readonly missing: ReadonlyArray<string> }
}

/** Loads one page (served from memory, nothing else reachable) in a new tab and takes both snapshots. */
export const measurePage = async (context: BrowserContext, file: string, html: string): Promise<PageMeasure> => {
  const page = await context.newPage()
  const pageUrl = `https://corpus.test/${file}`
  await page.route("**/*", (route) =>
    route.request().url() === pageUrl
      ? route.fulfill({ body: html, contentType: "text/html; charset=utf-8" })
      : route.abort()
  )
  try {
    await page.goto(pageUrl, { waitUntil: "load", timeout: 30_000 })
    let t0 = performance.now()
    const snapshot = await snapshotPage(page)
    const oursMs = performance.now() - t0
    t0 = performance.now()
    const aria = await page.ariaSnapshot({ mode: "ai", timeout: 30_000 })
    const ariaMs = performance.now() - t0
    const audit = await page.evaluate(auditRefs)
    return { file, ours: snapshot.text, oursTokens: tokens(snapshot.text), aria, ariaTokens: tokens(aria), oursMs, ariaMs, audit }
  } finally {
    await page.close().catch(() => undefined)
  }
}

/** A page's ratio ours / Playwright's (a page whose AI snapshot is empty counts as one token). */
export const pageRatio = (m: Pick<PageMeasure, "oursTokens" | "ariaTokens">) => m.oursTokens / Math.max(1, m.ariaTokens)
