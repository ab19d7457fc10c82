/**
 * Reader extraction speed and fidelity over the Readability corpus
 * (/work/shared/corpora/readability-pages, or the directory given as the first argument).
 *
 * - ours: saved HTML string -> Markdown + text with Readability and Turndown running inside an
 *   already-running Chromium (src/reader/extract-in-page.ts, on a warm extraction page).
 * - jsdom: the same HTML parsed by jsdom and extracted by @mozilla/readability in Node
 *   (text only, no Markdown conversion).
 *
 * Both run in the same process and the same run, page by page, after a warm-up pass over the
 * first pages. Prints the median time per page of each, and the token-level F1 of our text
 * against the text jsdom + Readability extracts from the same page (median, min, and how many
 * pages reach 0.98). Targets: our median <= half of jsdom's, F1 >= 0.98.
 *
 *   node bench/reader-extraction.ts [corpusDir] [--worst=N]
 */
import { Readability } from "@mozilla/readability"
import { Effect } from "effect"
import { JSDOM, VirtualConsole } from "jsdom"
import { readdir, readFile } from "node:fs/promises"
import { join } from "node:path"
import { type Extracted, extractFromHtml } from "../src/reader/extract-in-page.ts"
import { ReaderBrowser } from "../src/reader/reader-browser.ts"

const args = process.argv.slice(2)
const dir = args.find((a) => !a.startsWith("--")) ?? "/work/shared/corpora/readability-pages"
const worst = Number(args.find((a) => a.startsWith("--worst="))?.slice(8) ?? 5)
const PAGE_URL = "http://fakehost/test/page.html"
const WARMUP = 10

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const tokens = (text: string): Map<string, number> => {
  const counts = new Map<string, number>()
  for (const match of text.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) counts.set(match[0], (counts.get(match[0]) ?? 0) + 1)
  return counts
}

/** Token-level (bag of words) F1 of `candidate` against `reference`. */
const f1 = (candidate: string, reference: string): number => {
  const c = tokens(candidate)
  const r = tokens(reference)
  const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0)
  const cTotal = total(c)
  const rTotal = total(r)
  if (cTotal === 0 && rTotal === 0) return 1
  let overlap = 0
  for (const [token, n] of c) overlap += Math.min(n, r.get(token) ?? 0)
  if (overlap === 0) return 0
  const precision = overlap / cTotal
  const recall = overlap / rTotal
  return (2 * precision * recall) / (precision + recall)
}

const quietConsole = new VirtualConsole() // jsdom's CSS parser complains about most real pages

const jsdomExtract = (html: string): { readonly text: string | null; readonly title: string | null } => {
  const dom = new JSDOM(html, { url: PAGE_URL, virtualConsole: quietConsole })
  try {
    const article = new Readability(dom.window.document).parse()
    return { text: article?.textContent ?? null, title: article?.title ?? null }
  } finally {
    dom.window.close()
  }
}

const files = (await readdir(dir)).filter((f) => f.endsWith(".html")).sort()
const pages = await Promise.all(files.map(async (name) => ({ name, html: await readFile(join(dir, name), "utf8") })))

const program = Effect.gen(function*() {
  const browser = yield* ReaderBrowser
  const ours = (html: string) => browser.withExtractionPage((page) => extractFromHtml(page, html, PAGE_URL))

  // Warm-up: launch Chromium, install the in-page reader, let both JITs settle.
  for (const page of pages.slice(0, WARMUP)) {
    yield* ours(page.html)
    jsdomExtract(page.html)
  }

  const rows: Array<{ name: string; ourMs: number; jsdomMs: number; f1: number; ours: Extracted; jsdomTitle: string | null; jsdomNull: boolean }> = []
  for (const page of pages) {
    // Alternate which side goes first so neither always runs on a freshly collected heap.
    const measureOurs = Effect.gen(function*() {
      const started = performance.now()
      const extracted = yield* ours(page.html)
      return { extracted, ms: performance.now() - started }
    })
    const measureJsdom = Effect.sync(() => {
      const started = performance.now()
      const result = jsdomExtract(page.html)
      return { result, ms: performance.now() - started }
    })
    const first = rows.length % 2 === 0
    const a = first ? yield* measureOurs : undefined
    const j = yield* measureJsdom
    const o = a ?? (yield* measureOurs)
    rows.push({
      name: page.name,
      ourMs: o.ms,
      jsdomMs: j.ms,
      // When Readability finds no article in jsdom, ours falls back to the body: compare texts as they are.
      f1: f1(o.extracted.text, j.result.text ?? ""),
      ours: o.extracted,
      jsdomTitle: j.result.title,
      jsdomNull: j.result.text === null
    })
  }
  return rows
}).pipe(Effect.scoped, Effect.provide(ReaderBrowser.layerWith({ executablePath: process.env["CHROMIUM_PATH"], extractionPages: 1 })))

const rows = await Effect.runPromise(program)
const ourMedian = median(rows.map((r) => r.ourMs))
const jsdomMedian = median(rows.map((r) => r.jsdomMs))
const scores = rows.map((r) => r.f1)
const sameTitle = rows.filter((r) => r.jsdomTitle === null || r.jsdomTitle.trim() === r.ours.title).length

console.log(`reader extraction over ${rows.length} corpus pages (${dir})`)
console.log(`  time per page, median: ours (in-page Readability + Turndown in Chromium) ${ourMedian.toFixed(1)} ms`)
console.log(`                         jsdom + @mozilla/readability (text only)        ${jsdomMedian.toFixed(1)} ms`)
console.log(`  ratio ours/jsdom: ${(ourMedian / jsdomMedian).toFixed(2)}   target <= 0.50   ${ourMedian <= jsdomMedian / 2 ? "MET" : "NOT MET"}`)
console.log(`  total: ours ${rows.reduce((s, r) => s + r.ourMs, 0).toFixed(0)} ms, jsdom ${rows.reduce((s, r) => s + r.jsdomMs, 0).toFixed(0)} ms`)
console.log(`  token F1 of our text vs jsdom + Readability text: median ${median(scores).toFixed(4)}, min ${Math.min(...scores).toFixed(4)}, pages >= 0.98: ${scores.filter((s) => s >= 0.98).length}/${rows.length}   target F1 >= 0.98`)
console.log(`  same title as jsdom + Readability: ${sameTitle}/${rows.length}; pages where jsdom found no article: ${rows.filter((r) => r.jsdomNull).length}`)
if (worst > 0) {
  console.log(`  lowest F1:`)
  for (const r of [...rows].sort((a, b) => a.f1 - b.f1).slice(0, worst)) {
    console.log(`    ${r.name.padEnd(44)} F1 ${r.f1.toFixed(4)}  ours ${r.ourMs.toFixed(1)} ms  jsdom ${r.jsdomMs.toFixed(1)} ms  (${r.ours.method})`)
  }
}
