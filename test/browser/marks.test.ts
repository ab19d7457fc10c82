/**
 * Set-of-marks screenshots (src/browser/marks.ts): the marks sit on the refs' elements (iframes
 * included), the image is bounded (a wider viewport is scaled to 1280 px and the scale reported;
 * the byte cap is honoured), and the page itself is left unchanged.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { navigate } from "../../src/browser/actions.ts"
import { markedScreenshot } from "../../src/browser/marks.ts"
import { observe } from "../../src/browser/observe.ts"
import { BrowserPool } from "../../src/browser/pool.ts"
import { imageSize } from "../../src/agent/providers/usage.ts"
import { FixtureSite, leaseAndSite, refFor, TestLayer } from "./support.ts"

layer(TestLayer, { excludeTestServices: true })("set-of-marks screenshots", (it) => {
  it.effect("marks every ref in view at its element's box, the iframe's with the frame offset; the DOM is untouched", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/iframe`)
      const observation = yield* observe(lease)
      const ref = refFor(observation.snapshot, /button "Inner button"/)
      const page = lease.page()!
      const before = yield* Effect.promise(() => page.evaluate(() => document.documentElement.outerHTML))
      const shot = yield* markedScreenshot(lease, observation.text)
      const after = yield* Effect.promise(() => page.evaluate(() => document.documentElement.outerHTML))
      assert.strictEqual(after, before)
      const mark = shot.marks.find((m) => m.ref === ref)
      assert.isDefined(mark)
      const frameElement = yield* Effect.promise(() => page.frames()[1]!.locator("button").boundingBox())
      assert.isAtMost(Math.abs(mark!.x - frameElement!.x), 1)
      assert.isAtMost(Math.abs(mark!.y - frameElement!.y), 1)
      assert.deepStrictEqual(imageSize(shot.jpeg), { width: shot.width, height: shot.height })
      assert.strictEqual(shot.scale, 1)
    }))

  it.effect("a viewport wider than 1280 px is scaled down and the scale reported; the byte cap holds", () =>
    Effect.gen(function*() {
      const pool = yield* BrowserPool
      const site = yield* FixtureSite
      const lease = yield* pool.acquireContext({ viewport: { width: 1600, height: 1000 } })
      yield* navigate(lease, `${site.url}/list?n=200`)
      const observation = yield* observe(lease)
      const wide = yield* markedScreenshot(lease, observation.text)
      assert.strictEqual(wide.width, 1280)
      assert.strictEqual(wide.height, 800)
      assert.strictEqual(wide.scale, 0.8)
      assert.isAbove(wide.marks.length, 10)
      const capped = yield* markedScreenshot(lease, observation.text, { maxBytes: 30_000 })
      assert.isAtMost(capped.jpeg.byteLength, 30_000)
      assert.isBelow(capped.jpeg.byteLength, wide.jpeg.byteLength)
      assert.deepStrictEqual(imageSize(capped.jpeg), { width: capped.width, height: capped.height })
    }))
})
