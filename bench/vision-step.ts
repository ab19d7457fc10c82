/**
 * What vision adds to an agent step (issue 28 §1): on local fixture pages, the browser time of
 * the observation with vision off (text snapshot + the plain step screenshot, the default
 * WA_STEP_SCREENSHOTS) against vision on (text snapshot + one capture, marked with the refs'
 * boxes and re-encoded within the bounds: src/browser/marks.ts), and the bytes of the observation
 * message sent to the model (Chat Completions JSON of the user message: text alone, or text plus
 * the image_url data URL), with the image's size and its estimated tokens (src/agent/providers/usage.ts).
 * Model time is excluded (a provider's extra time to read an image is its own).
 *
 *   node bench/vision-step.ts [iterations]
 */
import { Effect, Layer } from "effect"
import { navigate, screenshot } from "../src/browser/actions.ts"
import { markedScreenshot } from "../src/browser/marks.ts"
import { observe } from "../src/browser/observe.ts"
import { BrowserPool } from "../src/browser/pool.ts"
import { AppConfig } from "../src/config/config.ts"
import { imageTokens } from "../src/agent/providers/usage.ts"
import { startCanvasSite } from "../test/fixtures/sites/canvas-button.ts"
import { startFixtureSites } from "../test/fixtures/sites/server.ts"
import { quantile } from "./stats.ts"

const iterations = Number(process.argv[2] ?? 30)
const site = await startFixtureSites()
const canvas = await startCanvasSite()

const pages = [
  ["form", `${site.url}/form`],
  ["list of 100 links", `${site.url}/list?n=100`],
  ["iframe", `${site.url}/iframe`],
  ["canvas button", `${canvas.url}/canvas`]
] as const

const messageBytes = (text: string, jpeg?: Uint8Array) =>
  Buffer.byteLength(JSON.stringify({
    role: "user",
    content: jpeg === undefined
      ? text
      : [{ type: "text", text }, { type: "image_url", image_url: { url: `data:image/jpeg;base64,${Buffer.from(jpeg).toString("base64")}` } }]
  }))

const program = Effect.scoped(Effect.gen(function*() {
  const pool = yield* BrowserPool
  const lease = yield* pool.acquireContext({ allowPrivateNetworks: true })
  const ms = (values: Array<number>) => `median ${quantile(values, 0.5).toFixed(1).padStart(6)}  p95 ${quantile(values, 0.95).toFixed(1).padStart(6)}`
  const rows: Array<string> = []
  for (const [label, url] of pages) {
    yield* navigate(lease, url)
    const off: Array<number> = []
    const on: Array<number> = []
    const added: Array<number> = []
    let last: { text: string; jpeg: Uint8Array; width: number; height: number; marks: number } | undefined
    for (let i = 0; i < iterations + 3; i++) {
      const t0 = performance.now()
      const observation = yield* observe(lease)
      const t1 = performance.now()
      yield* screenshot(lease)
      const t2 = performance.now()
      const again = yield* observe(lease)
      const t3 = performance.now()
      const marked = yield* markedScreenshot(lease, again.text)
      const t4 = performance.now()
      if (i < 3) continue // warm-up
      off.push(t2 - t0)
      on.push(t4 - t2)
      added.push((t4 - t3) - (t2 - t1))
      last = { text: observation.text, jpeg: marked.jpeg, width: marked.width, height: marked.height, marks: marked.marks.length }
    }
    const textBytes = messageBytes(last!.text)
    const withImage = messageBytes(last!.text, last!.jpeg)
    console.log(`${label} (${iterations} iterations, ${last!.marks} marks, image ${last!.width}x${last!.height})`)
    console.log(`  step, vision off (observe + step screenshot)   ${ms(off)} ms`)
    console.log(`  step, vision on  (observe + marked screenshot) ${ms(on)} ms`)
    console.log(`  added by vision                                ${ms(added)} ms`)
    console.log(`  observation message: off ${textBytes} B, on ${withImage} B (JPEG ${last!.jpeg.byteLength} B, ~${imageTokens(last!.jpeg)} image tokens)`)
    rows.push(`| ${label} | ${quantile(off, 0.5).toFixed(0)} | ${quantile(on, 0.5).toFixed(0)} | ${quantile(added, 0.5).toFixed(0)} / ${quantile(added, 0.95).toFixed(0)} | ${textBytes} | ${withImage} | ${last!.jpeg.byteLength} | ${imageTokens(last!.jpeg)} |`)
  }
  console.log("\n| page | step off, median ms | step on, median ms | added ms, median / p95 | message off, B | message on, B | JPEG, B | image tokens (est.) |")
  console.log("|---|---|---|---|---|---|---|---|")
  for (const row of rows) console.log(row)
}))

await Effect.runPromise(program.pipe(Effect.provide(BrowserPool.layerFromAppConfig.pipe(Layer.provide(AppConfig.layer)))))
await site.close()
await canvas.close()
