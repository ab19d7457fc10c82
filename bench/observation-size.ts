/**
 * Snapshot size on real pages: our compact snapshot (src/browser/observe.ts) against
 * Playwright's `page.ariaSnapshot({ mode: "ai" })`, in tokens (characters / 4), over the
 * Readability test pages in /work/shared/corpora/readability-pages (or the directory given as
 * the first argument), and the widget fixture pages (src/eval/widgets.ts: label tiles,
 * btn-check, icon controls, drag and drop, cookie wall, autocomplete; `--no-widgets` leaves them
 * out). Each page is served from memory for its own URL with every other
 * request aborted, so no network is used. Also checks that every visible interactive element
 * (links, buttons, form fields, widget roles, in the composed tree) carries a ref. The pages,
 * the loading and the counting are test/support/observation-size.ts's, which the test that holds
 * the corpus total at ≤ 0.35 (test/browser/observation-size.test.ts) uses too.
 *
 *   node bench/observation-size.ts [corpusDir] [--show=name.html] [--only=name.html] [--no-widgets]
 */
import { quantile } from "./stats.ts"
import {
  defaultCorpusDir,
  htmlOf,
  isWidgetPage,
  launchForObservation,
  measurePage,
  observationPages,
  pageRatio
} from "../test/support/observation-size.ts"

const args = process.argv.slice(2)
const dir = args.find((a) => !a.startsWith("--")) ?? defaultCorpusDir
const show = args.find((a) => a.startsWith("--show="))?.slice(7)
const only = args.find((a) => a.startsWith("--only="))?.slice(7)

const files = (await observationPages(dir, { widgets: !args.includes("--no-widgets") })).filter((f) => only === undefined || f === only)
const widgetRatios: Array<number> = []
// A browser that died on a loaded host is started again; the page it died on counts as failed.
let { browser, context } = await launchForObservation()

const ours: Array<number> = []
const theirs: Array<number> = []
const ratios: Array<number> = []
const oursMs: Array<number> = []
const theirsMs: Array<number> = []
let visibleInteractive = 0
let withRef = 0
let ariaHidden = 0
const incomplete: Array<string> = []
const started = Date.now()

for (const file of files) {
  const html = await htmlOf(dir, file)
  if (!browser.isConnected()) ({ browser, context } = await launchForObservation())
  try {
    const m = await measurePage(context, file, html)
    oursMs.push(m.oursMs)
    theirsMs.push(m.ariaMs)
    ours.push(m.oursTokens)
    theirs.push(m.ariaTokens)
    ratios.push(pageRatio(m))
    if (isWidgetPage(file)) widgetRatios.push(pageRatio(m))
    visibleInteractive += m.audit.visible
    withRef += m.audit.withRef
    ariaHidden += m.audit.ariaHidden
    if (m.audit.withRef < m.audit.visible) incomplete.push(`${file}: ${m.audit.withRef}/${m.audit.visible} ${m.audit.missing.join(" ; ")}`)
    if (show === file) {
      console.log(m.ours)
      console.log("----- ariaSnapshot ai -----")
      console.log(m.aria.slice(0, 6000))
    }
  } catch (error) {
    console.error(`${file}: ${String(error).split("\n")[0]}`)
  }
}
await browser.close()

const row = (label: string, values: Array<number>) =>
  console.log(`${label.padEnd(28)} median ${quantile(values, 0.5).toFixed(0).padStart(6)}   p95 ${quantile(values, 0.95).toFixed(0).padStart(6)}   mean ${(values.reduce((a, b) => a + b, 0) / values.length).toFixed(0).padStart(6)}`)

console.log(`pages: ${ours.length}/${files.length} in ${((Date.now() - started) / 1000).toFixed(1)} s (tokens = characters / 4)`)
row("ours (compact snapshot)", ours)
row("ariaSnapshot mode=ai", theirs)
row("ours ms per snapshot", oursMs)
row("ariaSnapshot ms", theirsMs)
console.log(`median ratio ours/ai: ${quantile(ratios, 0.5).toFixed(3)}   p95 ratio: ${quantile(ratios, 0.95).toFixed(3)}   median-of-ours / median-of-ai: ${(quantile(ours, 0.5) / quantile(theirs, 0.5)).toFixed(3)}`)
const sum = (values: Array<number>) => values.reduce((a, b) => a + b, 0)
console.log(`corpus total ours/ai: ${(sum(ours) / Math.max(1, sum(theirs))).toFixed(3)} (${sum(ours)} / ${sum(theirs)} tokens; test/browser/observation-size.test.ts holds it at ≤ 0.35)`)
if (widgetRatios.length > 0) {
  console.log(`widget pages: ${widgetRatios.length}, median ratio ours/ai ${quantile(widgetRatios, 0.5).toFixed(3)}, max ${Math.max(...widgetRatios).toFixed(3)}`)
}
console.log(`visible interactive elements: ${visibleInteractive}, with a ref: ${withRef} (${((100 * withRef) / Math.max(1, visibleInteractive)).toFixed(2)}%), excluded as aria-hidden: ${ariaHidden}`)
if (incomplete.length > 0) {
  console.log(`pages with elements lacking a ref (${incomplete.length}):`)
  for (const line of incomplete.slice(0, 20)) console.log(`  ${line}`)
}
