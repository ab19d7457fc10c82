/**
 * A fresh lease's untouched blank tab is observed without the page (ContextLease.untouchedBlankTab,
 * observe.ts): the first step of every run saves the snapshot's round trips. Whether the snapshot
 * script ran is read from the page itself: it leaves its ref table on `window`
 * (Symbol.for("web-agent-service.refs")). A blank main frame with content (page.setContent, a tab
 * written into) is snapshotted as before.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { navigate, scroll } from "../../src/browser/actions.ts"
import { blankObservation, observe } from "../../src/browser/observe.ts"
import { BrowserPool } from "../../src/browser/pool.ts"
import { FixtureSite, TestLayer } from "./support.ts"

const snapshotRan = (page: Page) =>
  Effect.promise(() => page.evaluate(() => Symbol.for("web-agent-service.refs") in window))

layer(TestLayer, { excludeTestServices: true })("the untouched blank tab", (it) => {
  it.effect("a fresh lease's first observation skips the snapshot and reads what the page would give", () =>
    Effect.gen(function*() {
      const pool = yield* BrowserPool
      const lease = yield* pool.acquireContext()
      const page = lease.page()!
      const first = yield* observe(lease)
      assert.deepStrictEqual(first, blankObservation)
      assert.isFalse(yield* snapshotRan(page), "the snapshot script was not evaluated")
      // Observing again still knows it.
      assert.deepStrictEqual(yield* observe(lease), blankObservation)
      assert.isFalse(yield* snapshotRan(page))
      // The same tab, once touched (any operation through the lease), is asked: same observation.
      yield* scroll(lease, { direction: "down" })
      assert.isFalse(lease.untouchedBlankTab(page))
      assert.deepStrictEqual(yield* observe(lease), blankObservation)
      assert.isTrue(yield* snapshotRan(page), "a touched tab is snapshotted")
    }))

  it.effect("a blank tab given content with page.setContent is snapshotted", () =>
    Effect.gen(function*() {
      const pool = yield* BrowserPool
      const lease = yield* pool.acquireContext()
      const page = lease.page()!
      yield* Effect.promise(() => page.setContent(`<h1>Written in</h1><button>Press me</button>`))
      assert.strictEqual(page.url(), "about:blank")
      const observed = yield* observe(lease)
      assert.include(observed.snapshot, "Written in")
      assert.match(observed.snapshot, /button "Press me" \[e\d+\]/)
      assert.isTrue(yield* snapshotRan(page))
    }))

  it.effect("a navigation, an iframe or a second tab ends it", () =>
    Effect.gen(function*() {
      const pool = yield* BrowserPool
      const site = yield* FixtureSite
      // A navigation (here started by the page, not through the lease).
      const navigated = yield* pool.acquireContext()
      yield* Effect.promise(() => navigated.page()!.goto(`${site.url}/page/1`))
      yield* Effect.promise(() => navigated.page()!.goBack())
      assert.isFalse(navigated.untouchedBlankTab(navigated.page()!))
      // A frame written into the blank document without a load event of the tab.
      const framed = yield* pool.acquireContext()
      yield* Effect.promise(() => framed.page()!.evaluate(() => document.body.appendChild(document.createElement("iframe"))))
      yield* Effect.promise(() => framed.page()!.waitForTimeout(100))
      assert.isFalse(framed.untouchedBlankTab(framed.page()!))
      // A second tab in the context.
      const tabs = yield* pool.acquireContext()
      const blank = tabs.page()!
      yield* Effect.promise(() => tabs.context.newPage())
      assert.isFalse(tabs.untouchedBlankTab(blank))
      // Through the lease.
      const acted = yield* pool.acquireContext()
      yield* navigate(acted, `${site.url}/page/2`)
      assert.include((yield* observe(acted)).snapshot, "Page 2")
    }))
})
