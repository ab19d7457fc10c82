/**
 * Snapshot size on real pages: our compact snapshot (src/browser/observe.ts) against
 * Playwright's `page.ariaSnapshot({ mode: "ai" })`, in tokens (characters / 4), over the
 * Readability test pages in /work/shared/corpora/readability-pages (or the directory given as
 * the first argument), and the widget fixture pages (src/eval/widgets.ts: label tiles,
 * btn-check, icon controls, drag and drop, cookie wall, autocomplete; `--no-widgets` leaves them
 * out). Each page is served from memory for its own URL with every other
 * request aborted, so no network is used. Also checks that every visible interactive element
 * (links, buttons, form fields, widget roles, in the composed tree) carries a ref.
 *
 *   node bench/observation-size.ts [corpusDir] [--show=name.html] [--only=name.html] [--no-widgets]
 */
import { readdir, readFile } from "node:fs/promises"
import { join } from "node:path"
import { chromium } from "playwright-core"
import { snapshotPage } from "../src/browser/observe.ts"
import { auditRefs } from "../src/browser/page-script.ts"
import { chromiumArgs } from "../src/browser/pool.ts"
import { quantile } from "./stats.ts"
import { widgetPages } from "../src/eval/widgets.ts"

const args = process.argv.slice(2)
const dir = args.find((a) => !a.startsWith("--")) ?? "/work/shared/corpora/readability-pages"
const show = args.find((a) => a.startsWith("--show="))?.slice(7)
const only = args.find((a) => a.startsWith("--only="))?.slice(7)

const tokens = (text: string): number => Math.ceil(text.length / 4)

const corpusFiles = (await readdir(dir)).filter((f) => f.endsWith(".html")).sort()
const widgets = args.includes("--no-widgets") ? [] : Object.keys(widgetPages).map((path) => `${path.slice(1).replace(/\//g, "-")}.html`)
const files = [...corpusFiles, ...widgets].filter((f) => only === undefined || f === only)
const htmlOf = (file: string) =>
  file.startsWith("widgets-") ? Promise.resolve(widgetPages[`/${file.replace(/\.html$/, "").replace("-", "/")}`]!) : readFile(join(dir, file), "utf8")
const widgetRatios: Array<number> = []
const launch = async () => {
  const browser = await chromium.launch({
    executablePath: process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium",
    args: [...chromiumArgs]
  })
  return { browser, context: await browser.newContext({ viewport: { width: 1280, height: 800 }, javaScriptEnabled: true }) }
}
// A browser that died on a loaded host is started again; the page it died on counts as failed.
let { browser, context } = await launch()

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
  const html = await htmlOf(file)
  if (!browser.isConnected()) ({ browser, context } = await launch())
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
    oursMs.push(performance.now() - t0)
    t0 = performance.now()
    const aria = await page.ariaSnapshot({ mode: "ai", timeout: 30_000 })
    theirsMs.push(performance.now() - t0)
    const audit = await page.evaluate(auditRefs)
    ours.push(tokens(snapshot.text))
    theirs.push(tokens(aria))
    ratios.push(tokens(snapshot.text) / Math.max(1, tokens(aria)))
    if (file.startsWith("widgets-")) widgetRatios.push(tokens(snapshot.text) / Math.max(1, tokens(aria)))
    visibleInteractive += audit.visible
    withRef += audit.withRef
    ariaHidden += audit.ariaHidden
    if (audit.withRef < audit.visible) incomplete.push(`${file}: ${audit.withRef}/${audit.visible} ${audit.missing.join(" ; ")}`)
    if (show === file) {
      console.log(snapshot.text)
      console.log("----- ariaSnapshot ai -----")
      console.log(aria.slice(0, 6000))
    }
  } catch (error) {
    console.error(`${file}: ${String(error).split("\n")[0]}`)
  } finally {
    await page.close().catch(() => undefined)
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
if (widgetRatios.length > 0) {
  console.log(`widget pages: ${widgetRatios.length}, median ratio ours/ai ${quantile(widgetRatios, 0.5).toFixed(3)}, max ${Math.max(...widgetRatios).toFixed(3)}`)
}
console.log(`visible interactive elements: ${visibleInteractive}, with a ref: ${withRef} (${((100 * withRef) / Math.max(1, visibleInteractive)).toFixed(2)}%), excluded as aria-hidden: ${ariaHidden}`)
if (incomplete.length > 0) {
  console.log(`pages with elements lacking a ref (${incomplete.length}):`)
  for (const line of incomplete.slice(0, 20)) console.log(`  ${line}`)
}
