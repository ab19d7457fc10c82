/**
 * The snapshot stays compact (issue 28): over the corpus the bench measures (the Readability test
 * pages in ../shared/corpora/readability-pages and the widget fixture pages), the tokens of our
 * observation add up to at most 0.35× those of Playwright's `ariaSnapshot({ mode: "ai" })` on the
 * same pages, in real Chromium. Pages, loading and counting are bench/observation-size.ts's
 * (test/support/observation-size.ts); only sizes are compared, no timings. A page that cannot be
 * measured fails the test, so the total is always over the whole corpus.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chromiumPath } from "./support.ts"
import {
  defaultCorpusDir,
  htmlOf,
  launchForObservation,
  measurePage,
  observationPages,
  type PageMeasure,
  pageRatio
} from "../support/observation-size.ts"

const BOUND = 0.35

let launched: Awaited<ReturnType<typeof launchForObservation>>

beforeAll(async () => {
  launched = await launchForObservation(chromiumPath)
})
afterAll(async () => {
  await launched?.browser.close()
})

describe("observation size", () => {
  it(`our snapshot is at most ${BOUND}× Playwright's AI snapshot in tokens over the corpus`, async () => {
    const files = await observationPages(defaultCorpusDir)
    expect(files.filter((f) => !f.startsWith("widgets-")).length, "corpus pages").toBeGreaterThanOrEqual(100)
    const measured: Array<PageMeasure> = []
    const failed: Array<string> = []
    for (const file of files) {
      // A browser that died on a loaded host is started again, as the bench does.
      if (!launched.browser.isConnected()) launched = await launchForObservation(chromiumPath)
      try {
        measured.push(await measurePage(launched.context, file, await htmlOf(defaultCorpusDir, file)))
      } catch (error) {
        failed.push(`${file}: ${String(error).split("\n")[0]}`)
      }
    }
    expect(failed, "pages that could not be measured").toEqual([])

    const ours = measured.reduce((a, m) => a + m.oursTokens, 0)
    const theirs = measured.reduce((a, m) => a + m.ariaTokens, 0)
    const ratio = ours / theirs
    // On failure: the pages that push the total up most (tokens over their share of the bound) first.
    const excess = (m: PageMeasure) => m.oursTokens - BOUND * m.ariaTokens
    const perPage = [...measured].sort((a, b) => excess(b) - excess(a)).map((m) =>
      `${m.file.padEnd(40)} ours ${String(m.oursTokens).padStart(7)}  ai ${String(m.ariaTokens).padStart(7)}  ratio ${pageRatio(m).toFixed(3)}  over bound ${excess(m).toFixed(0)}`
    )
    expect(ratio, `corpus total ${ours} / ${theirs} tokens = ${ratio.toFixed(3)} over ${measured.length} pages\n${perPage.join("\n")}`)
      .toBeLessThanOrEqual(BOUND)
  }, 900_000)
})
