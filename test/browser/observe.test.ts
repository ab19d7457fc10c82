import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { click, navigate, type } from "../../src/browser/actions.ts"
import { observe, screenshot } from "../../src/browser/observe.ts"
import { leaseAndSite, refFor, TestLayer } from "./support.ts"

layer(TestLayer, { excludeTestServices: true })("observation", (it) => {
  it.effect("includes the iframe's button with a frame ref, and clicking it works", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/iframe`)
      const first = yield* observe(lease)
      assert.include(first.snapshot, "Outer content")
      assert.include(first.snapshot, "iframe:")
      assert.include(first.snapshot, "Inner idle")
      const ref = refFor(first.snapshot, /button "Inner button"/)
      assert.match(ref, /^f\d+e\d+$/)
      yield* click(lease, ref)
      const after = yield* observe(lease)
      assert.include(after.snapshot, "Inner clicked")
    }))

  it.effect("includes elements inside an open shadow root, and acting on them works", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/shadow`)
      const first = yield* observe(lease)
      const input = refFor(first.snapshot, /textbox "Shadow input"/)
      const button = refFor(first.snapshot, /button "Shadow button"/)
      yield* type(lease, input, "hello")
      yield* click(lease, button)
      const after = yield* observe(lease)
      assert.include(after.snapshot, "Shadow clicked: hello")
      assert.include(after.snapshot, `textbox "Shadow input" [${input}] ="hello"`)
    }))

  it.effect("keeps refs stable between observations of the same page", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/form`)
      const a = yield* observe(lease)
      const b = yield* observe(lease)
      assert.strictEqual(a.snapshot, b.snapshot)
      assert.isAbove(a.refs, 5)
      // Still stable after the page changed around the element.
      const name = refFor(a.snapshot, /textbox "Name"/)
      yield* Effect.promise(() =>
        lease.page()!.evaluate(() => document.body.insertAdjacentHTML("afterbegin", "<p><a href='/'>Inserted link</a></p>"))
      )
      const c = yield* observe(lease)
      assert.strictEqual(refFor(c.snapshot, /textbox "Name"/), name)
      assert.include(c.snapshot, "Inserted link")
    }))

  it.effect("reports url, title, form state and a JPEG screenshot", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/form`)
      const o = yield* observe(lease)
      assert.strictEqual(o.url, `${site.url}/form`)
      assert.strictEqual(o.title, "Form")
      assert.include(o.text, `url: ${site.url}/form`)
      assert.include(o.snapshot, "# Contact form")
      assert.include(o.snapshot, `combobox "Colour"`)
      assert.include(o.snapshot, "{Red|Green|Blue}")
      assert.include(o.snapshot, `checkbox "Newsletter"`)
      assert.notInclude(o.text, "scroll:")
      yield* navigate(lease, `${site.url}/list?n=300`)
      const long = yield* observe(lease, { maxChars: 2_000 })
      assert.match(long.text, /scroll: 0\/\d+px/)
      assert.include(long.snapshot, "snapshot cut at 2000 characters")
      assert.isAtMost(long.snapshot.length, 2_200)
      const jpeg = yield* screenshot(lease)
      assert.strictEqual(jpeg[0], 0xff)
      assert.strictEqual(jpeg[1], 0xd8)
    }))
})
