/**
 * Main-content extraction inside Chromium: Mozilla Readability and Turndown run in the page,
 * on the DOM the browser already parsed (no second parse in jsdom). Both scripts are injected
 * once per page (`page.evaluate`, which works with page JavaScript disabled too) and kept as a
 * hidden global; later calls are one round trip.
 *
 * - `extractFromPage(page)`: the page as it is now (the agent's read_page tool, the browser
 *   fallback of the Reader). Works on a clone, so the live DOM is never changed.
 * - `extractFromHtml(page, html, url)`: HTML fetched over HTTP, parsed with `DOMParser` in an
 *   already-open page. A DOMParser document is inert: no scripts run and no sub-resource is
 *   requested, so nothing from the page reaches the network, and it is faster than navigating.
 */
import { Effect, Schema } from "effect"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import type { Page } from "playwright-core"

export interface Extracted {
  /** Readability's title (else the document title). */
  readonly title: string
  readonly byline: string | null
  readonly excerpt: string | null
  readonly siteName: string | null
  readonly lang: string | null
  readonly publishedTime: string | null
  /** The main content as Markdown. */
  readonly markdown: string
  /** The main content as plain text, one block per line. */
  readonly text: string
  /** `readability` when Readability found an article, `body` when the whole body was used. */
  readonly method: "readability" | "body"
}

export class ExtractionError extends Schema.TaggedError<ExtractionError>()("ExtractionError", {
  message: Schema.String
}) {}

const require = createRequire(import.meta.url)

let bootstrapSource: string | undefined

/**
 * The script that installs `__waReader` in a page. Built once from the installed packages (the
 * file contents never change while the process runs).
 */
const bootstrap = (): string => {
  if (bootstrapSource !== undefined) return bootstrapSource
  const readability = readFileSync(require.resolve("@mozilla/readability/Readability.js"), "utf8")
  const turndown = readFileSync(require.resolve("turndown/lib/turndown.browser.umd.js"), "utf8")
  bootstrapSource = `(() => {
if (globalThis.__waReader) return true;
const previousTurndown = globalThis.TurndownService;
${readability}
;${turndown}
;const Turndown = globalThis.TurndownService;
if (previousTurndown === undefined) { delete globalThis.TurndownService } else { globalThis.TurndownService = previousTurndown }
(${pageSide.toString()})(Readability, Turndown);
return true;
})()`
  return bootstrapSource
}

/**
 * Runs in the page (serialized with toString, so it must not close over anything). Defines the
 * hidden `__waReader` global with `extract(doc, options)`.
 */
const pageSide = (ReadabilityCtor: any, TurndownCtor: any) => {
  const blockTags = new Set([
    "ADDRESS", "ARTICLE", "ASIDE", "BLOCKQUOTE", "DD", "DETAILS", "DIV", "DL", "DT", "FIELDSET", "FIGCAPTION", "FIGURE",
    "FOOTER", "FORM", "H1", "H2", "H3", "H4", "H5", "H6", "HEADER", "HR", "LI", "MAIN", "NAV", "OL", "P", "PRE",
    "SECTION", "SUMMARY", "TABLE", "TBODY", "THEAD", "TFOOT", "TR", "UL", "CAPTION"
  ])
  const skipTags = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "SVG", "CANVAS", "IFRAME", "OBJECT", "EMBED"])
  // Plain text with a line per block, without layout (works on inert documents too).
  const textOf = (root: any): string => {
    const out: Array<string> = []
    const walk = (node: any) => {
      for (let child = node.firstChild; child !== null; child = child.nextSibling) {
        if (child.nodeType === 3) out.push(child.data)
        else if (child.nodeType === 1) {
          const tag = String(child.tagName).toUpperCase()
          if (skipTags.has(tag)) continue
          if (tag === "BR") {
            out.push("\n")
            continue
          }
          const block = blockTags.has(tag)
          if (block) out.push("\n")
          else if (tag === "TD" || tag === "TH") out.push("\t")
          walk(child)
          if (block) out.push("\n")
        }
      }
    }
    walk(root)
    return out.join("")
      .replace(/[ \t\f\v\u00a0]+/g, " ")
      .replace(/ *\n */g, "\n")
      .replace(/\n{2,}/g, "\n")
      .trim()
  }
  const turndown = new TurndownCtor({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    bulletListMarker: "-",
    emDelimiter: "_",
    hr: "---"
  })
  turndown.remove(["script", "style", "noscript", "template", "iframe", "object", "embed", "canvas"])
  const inert = () => document.implementation.createHTMLDocument("")
  const extract = (doc: any, options: { baseUrl?: string; clone: boolean }) => {
    if (options.baseUrl && doc.querySelector("base[href]") === null) {
      const base = doc.createElement("base")
      base.setAttribute("href", options.baseUrl)
      const head = doc.head ?? doc.documentElement
      if (head) head.insertBefore(base, head.firstChild)
    }
    const lang = doc.documentElement?.getAttribute("lang") || null
    const documentTitle = String(doc.title ?? "").trim()
    const working = options.clone ? doc.cloneNode(true) : doc
    let article: any = null
    try {
      article = new ReadabilityCtor(working).parse()
    } catch {
      article = null
    }
    if (article && article.content) {
      const container = inert().createElement("div")
      container.innerHTML = article.content
      return {
        title: String(article.title || documentTitle).trim(),
        byline: article.byline || null,
        excerpt: article.excerpt || null,
        siteName: article.siteName || null,
        lang: article.lang || lang,
        publishedTime: article.publishedTime || null,
        markdown: turndown.turndown(container).trim(),
        text: textOf(container),
        method: "readability"
      }
    }
    // No article (a list page, an app shell): the whole body, minus scripts and styles.
    const body = (options.clone ? doc.body?.cloneNode(true) : doc.body) ?? null
    if (body === null) {
      return { title: documentTitle, byline: null, excerpt: null, siteName: null, lang, publishedTime: null, markdown: "", text: "", method: "body" }
    }
    for (const el of Array.from(body.querySelectorAll("script,style,noscript,template,iframe,svg")) as Array<any>) el.remove()
    return {
      title: documentTitle,
      byline: null,
      excerpt: null,
      siteName: null,
      lang,
      publishedTime: null,
      markdown: turndown.turndown(body).trim(),
      text: textOf(body),
      method: "body"
    }
  }
  Object.defineProperty(globalThis, "__waReader", {
    value: {
      extractDocument: (clone: boolean) => extract(document, { clone }),
      extractHtml: (html: string, baseUrl: string) =>
        extract(new DOMParser().parseFromString(html, "text/html"), { baseUrl, clone: false })
    },
    enumerable: false,
    configurable: true
  })
}

type Outcome = { readonly missing: true } | { readonly missing: false; readonly value: Extracted }

const callDocument = (clone: boolean): Outcome => {
  const reader = (globalThis as any).__waReader
  return reader === undefined ? { missing: true } : { missing: false, value: reader.extractDocument(clone) }
}

const callHtml = ([html, baseUrl]: [string, string]): Outcome => {
  const reader = (globalThis as any).__waReader
  return reader === undefined ? { missing: true } : { missing: false, value: reader.extractHtml(html, baseUrl) }
}

const evaluate = <A>(page: Page, run: () => Promise<A>): Effect.Effect<A, ExtractionError> =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => new ExtractionError({ message: `in-page extraction failed: ${cause instanceof Error ? cause.message : String(cause)}` })
  })

/** Calls the in-page reader; injects it first when this page (or this document) does not have it yet. */
const withReader = (page: Page, call: () => Promise<Outcome>): Effect.Effect<Extracted, ExtractionError> =>
  Effect.gen(function*() {
    const first = yield* evaluate(page, call)
    if (!first.missing) return first.value
    yield* evaluate(page, () => page.evaluate(bootstrap()))
    const second = yield* evaluate(page, call)
    if (second.missing) return yield* new ExtractionError({ message: "the in-page reader could not be installed" })
    return second.value
  })

/**
 * Extracts the main content of the page as it is now, as Markdown and text. The live DOM is
 * not modified (Readability runs on a clone).
 */
export const extractFromPage = (page: Page): Effect.Effect<Extracted, ExtractionError> =>
  withReader(page, () => page.evaluate(callDocument, true))

/**
 * Extracts the main content of an HTML string inside an already-open page, as if the page had
 * been loaded from `url` (relative links resolve against it). The page's own document is not
 * touched; the HTML is parsed inert.
 */
export const extractFromHtml = (page: Page, html: string, url: string): Effect.Effect<Extracted, ExtractionError> =>
  withReader(page, () => page.evaluate(callHtml, [html, url] as [string, string]))
