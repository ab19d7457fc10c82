/**
 * Vision (issue 28 §1): with WA_MODEL_VISION on (or auto for a model known to see images), each
 * observation goes to the model with a set-of-marks JPEG of the viewport, in the provider's own
 * form (Chat Completions `image_url` data URL, Anthropic `image` block), only on the newest
 * observation; off (or auto for an unknown model) sends none. A button drawn on a <canvas> is
 * found by the scripted model in the image it got and pressed with click_at. A server that reports
 * no usage (either provider) is charged an estimate that counts the image's tokens.
 *
 * Images are decoded by a Chromium of the test's own (createImageBitmap), not by our code.
 */
import { afterAll, beforeAll, expect, layer } from "@effect/vitest"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { type Browser, chromium, type Page } from "playwright-core"
import { ScreenshotId } from "../../src/domain/id-schemas.ts"
import { ScreenshotStore } from "../../src/store/screenshots.ts"
import { type ChatRequest, imageParts, lastUserText, readBody, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { imageBlocks, startScriptedAnthropic } from "../fixtures/model/scripted-anthropic.ts"
import { type CanvasSite, helpBox, revealBox, startCanvasSite } from "../fixtures/sites/canvas-button.ts"
import { createSession } from "./do-anything.ts"
import { Fixtures, inProcess } from "./harness.ts"
import { awaitStatus, eventsOf, TERMINAL } from "./waits.ts"

const anthropic = await startScriptedAnthropic()

/**
 * An OpenAI-compatible server that reports no usage (some vLLM, llama.cpp and proxy setups): a
 * loopback proxy in front of a scripted model that drops `usage` from its answers.
 */
const startNoUsageProxy = async (target: string) => {
  const origin = new URL(target).origin
  const server = createServer(async (req, res) => {
    const upstream = await fetch(`${origin}${req.url}`, { method: req.method ?? "POST", headers: { "content-type": "application/json" }, body: await readBody(req) })
    const json = await upstream.json() as Record<string, unknown>
    delete json["usage"]
    res.writeHead(upstream.status, { "content-type": "application/json" }).end(JSON.stringify(json))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}${new URL(target).pathname}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
const quietModel = await startScriptedModel(() => ({ tool: "done", args: { output: "no script" } }))
const noUsage = await startNoUsageProxy(quietModel.baseUrl)
let site: CanvasSite
let viewer: Browser
let decoder: Page
beforeAll(async () => {
  site = await startCanvasSite()
  viewer = await chromium.launch({ executablePath: process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium", args: ["--no-sandbox"] })
  decoder = await viewer.newPage()
})
afterAll(async () => {
  await viewer?.close()
  await site?.close()
  await anthropic.close()
  await noUsage.close()
  await quietModel.close()
})

interface Decoded {
  readonly width: number
  readonly height: number
  /** Centre of the magenta pixels (the canvas button), image px; count 0 when none. */
  readonly magenta: { readonly x: number; readonly y: number; readonly count: number }
  /** RGB at the probed points. */
  readonly probes: ReadonlyArray<[number, number, number]>
}

/** Decodes a JPEG (data URL) in the viewer Chromium: size, where the magenta button is, colours at points. */
const decode = (dataUrl: string, probes: ReadonlyArray<[number, number]> = []): Promise<Decoded> =>
  decoder.evaluate(async ({ dataUrl, probes }) => {
    const bitmap = await createImageBitmap(await (await fetch(dataUrl)).blob())
    const canvas = new OffscreenCanvas(bitmap.width, bitmap.height)
    const g = canvas.getContext("2d")!
    g.drawImage(bitmap, 0, 0)
    const { data } = g.getImageData(0, 0, bitmap.width, bitmap.height)
    let sx = 0, sy = 0, count = 0
    for (let y = 0; y < bitmap.height; y++) {
      for (let x = 0; x < bitmap.width; x++) {
        const i = (y * bitmap.width + x) * 4
        if (data[i]! > 200 && data[i + 1]! < 70 && data[i + 2]! > 200) {
          sx += x
          sy += y
          count++
        }
      }
    }
    const at = ([x, y]: [number, number]): [number, number, number] => {
      const i = (y * bitmap.width + x) * 4
      return [data[i]!, data[i + 1]!, data[i + 2]!]
    }
    return {
      width: bitmap.width,
      height: bitmap.height,
      magenta: { x: count === 0 ? -1 : sx / count, y: count === 0 ? -1 : sy / count, count },
      probes: probes.map(at)
    }
  }, { dataUrl, probes: [...probes] })

const whitish = ([r, g, b]: [number, number, number]) => r > 225 && g > 225 && b > 225
/** A point on the left edge of the Help button's box, where its mark's outline is drawn. */
const helpEdge: [number, number] = [helpBox.x + 1, helpBox.y + helpBox.height / 2]

const jpegBytes = (dataUrl: string) => Buffer.from(dataUrl.slice(dataUrl.indexOf(",") + 1), "base64")

layer(inProcess({ WA_MODEL_VISION: "on" }), { excludeTestServices: true })("vision on (OpenAI-compatible)", (it) => {
  it.effect("each observation carries one marked JPEG; the model finds the canvas button in it and presses it with click_at", () =>
    Effect.gen(function*() {
      const { model } = yield* Fixtures
      const requests: Array<ChatRequest> = []
      model.setScript(async (request, turn) => {
        requests.push(request)
        if (turn === 0) return { tool: "navigate", args: { url: `${site.url}/canvas` } }
        const text = lastUserText(request)
        const code = /Code: (\S+)/.exec(text)?.[1]
        if (code !== undefined) return { tool: "done", args: { output: { code } } }
        const image = imageParts(request).at(-1)
        if (image === undefined) return { tool: "done", args: { output: { code: "no image" } } }
        const seen = await decode(image.url)
        if (seen.magenta.count === 0) return { tool: "done", args: { output: { code: "no button in the image" } } }
        const scale = Number(/divide image coordinates by ([\d.]+)/.exec(text)?.[1] ?? 1)
        return { tool: "click_at", args: { x: Math.round(seen.magenta.x / scale), y: Math.round(seen.magenta.y / scale) } }
      })
      const { run } = yield* createSession({ instructions: "Press the Reveal button and report the code" })
      const done = yield* awaitStatus(run.id, TERMINAL)
      expect(done.error_code).toBeNull()
      expect(done.output).toEqual({ code: site.code })
      expect(requests.length).toBe(3)

      // The first observation is a blank tab: no image. Every later one: one image, in the newest message.
      expect(imageParts(requests[0]!)).toEqual([])
      for (const request of requests.slice(1)) {
        const images = imageParts(request)
        expect(images.length).toBe(1)
        const newestUser = request.messages.map((m) => m.role).lastIndexOf("user")
        expect(images[0]!.message).toBe(newestUser)
        expect(images[0]!.url.startsWith("data:image/jpeg;base64,")).toBe(true)
        const bytes = jpegBytes(images[0]!.url)
        expect([bytes[0], bytes[1]]).toEqual([0xff, 0xd8])
        expect(bytes.length).toBeLessThanOrEqual(250_000)
        const decoded = yield* Effect.promise(() => decode(images[0]!.url))
        expect(decoded.width).toBeLessThanOrEqual(1280)
        expect(decoded.width).toBeGreaterThan(0)
        expect(lastUserText(request)).toContain("Screenshot of the viewport attached")
      }

      // The drawn button is where the page drew it (image px = CSS px at this viewport).
      const second = yield* Effect.promise(() => decode(imageParts(requests[1]!)[0]!.url, [helpEdge]))
      expect(Math.abs(second.magenta.x - (revealBox.x + revealBox.width / 2))).toBeLessThan(10)
      expect(Math.abs(second.magenta.y - (revealBox.y + revealBox.height / 2))).toBeLessThan(10)
      // The Help button's ref is in the text and its mark is on the model's image...
      expect(lastUserText(requests[1]!)).toMatch(/button "Help" \[e\d+\]/)
      expect(whitish(second.probes[0]!)).toBe(false)
      // ... but not on the page: the step screenshot (captured from the page) is white there.
      const screenshots = yield* ScreenshotStore
      const shot = (yield* eventsOf(run.id)).find((event) => event.type === "run.screenshot")
      const url = new URL(String(shot!.data["url"]), "http://x")
      const plain = yield* screenshots.read(ScreenshotId.make(url.pathname.split("/").at(-1)!), Number(url.searchParams.get("expires")), url.searchParams.get("signature")!)
      expect(plain).toBeInstanceOf(Uint8Array)
      const plainDecoded = yield* Effect.promise(() => decode(`data:image/jpeg;base64,${Buffer.from(plain as Uint8Array).toString("base64")}`, [helpEdge]))
      expect(whitish(plainDecoded.probes[0]!)).toBe(true)
    }))
})

layer(inProcess(), { excludeTestServices: true })("vision auto for a model not known to see images (off)", (it) => {
  it.effect("no image part is sent; observations are plain text", () =>
    Effect.gen(function*() {
      const { model } = yield* Fixtures
      const requests: Array<ChatRequest> = []
      model.setScript((request, turn) => {
        requests.push(request)
        if (turn === 0) return { tool: "navigate", args: { url: `${site.url}/canvas` } }
        return { tool: "done", args: { output: { seen: lastUserText(request).includes("Help") } } }
      })
      const { run } = yield* createSession({ instructions: "Look at the canvas page" })
      const done = yield* awaitStatus(run.id, TERMINAL)
      expect(done.output).toEqual({ seen: true })
      expect(requests.length).toBe(2)
      for (const request of requests) {
        expect(imageParts(request)).toEqual([])
        for (const message of request.messages) if (message.role === "user") expect(typeof message.content).toBe("string")
      }
    }))
})

layer(inProcess({ WA_MODEL_PROVIDER: "anthropic", WA_MODEL_BASE_URL: anthropic.baseUrl, WA_MODEL: "claude-sonnet-4-5" }), { excludeTestServices: true })(
  "vision auto for Claude (Anthropic Messages)",
  (it) => {
    it.effect("the observation carries a base64 JPEG image block; without reported usage the step is charged an estimate that counts the image", () =>
      Effect.gen(function*() {
        anthropic.setScript((_request, turn) =>
          turn === 0 ? { tool: "navigate", args: { url: `${site.url}/canvas` } } : { tool: "done", args: { output: { ok: true } } }, { usage: false })
        const before = anthropic.requests.length
        const { run } = yield* createSession({ instructions: "Look at the canvas page" })
        const done = yield* awaitStatus(run.id, TERMINAL)
        expect(done.error_code).toBeNull()
        expect(done.output).toEqual({ ok: true })
        const [first, second] = anthropic.requests.slice(before)
        expect(imageBlocks(first!)).toEqual([])
        const blocks = imageBlocks(second!)
        expect(blocks.length).toBe(1)
        expect(blocks[0]!.message).toBe(second!.messages.length - 1)
        expect(blocks[0]!.source).toMatchObject({ type: "base64", media_type: "image/jpeg" })
        const decoded = yield* Effect.promise(() => decode(`data:image/jpeg;base64,${blocks[0]!.source.data}`))
        expect(decoded.width).toBeLessThanOrEqual(1280)
        expect(decoded.magenta.count).toBeGreaterThan(1000)

        // No usage reported: the image step's estimate includes ceil(w*h/750) image tokens.
        const usage = (yield* eventsOf(run.id)).filter((event) => event.type === "run.usage").map((event) => event.data as { step: number; input_tokens: number })
        expect(usage.length).toBe(2)
        const imageEstimate = Math.min(1600, Math.ceil((decoded.width * decoded.height) / 750))
        expect(usage[1]!.input_tokens - usage[0]!.input_tokens).toBeGreaterThanOrEqual(imageEstimate)
        expect(Number(done.llm_cost_usd)).toBeGreaterThan(0)
      }))
  }
)

layer(inProcess({ WA_MODEL_VISION: "on", WA_MODEL_BASE_URL: noUsage.baseUrl }), { excludeTestServices: true })(
  "vision on, OpenAI-compatible server that reports no usage",
  (it) => {
    it.effect("the image step is charged an estimate that counts the image part (ceil(w*h/750) tokens)", () =>
      Effect.gen(function*() {
        quietModel.setScript((_request, turn) =>
          turn === 0 ? { tool: "navigate", args: { url: `${site.url}/canvas` } } : { tool: "done", args: { output: { ok: true } } })
        const before = quietModel.requests.length
        const { run } = yield* createSession({ instructions: "Look at the canvas page" })
        const done = yield* awaitStatus(run.id, TERMINAL)
        expect(done.error_code).toBeNull()
        expect(done.output).toEqual({ ok: true })
        const [first, second] = quietModel.requests.slice(before)
        expect(imageParts(first!)).toEqual([])
        const images = imageParts(second!)
        expect(images.length).toBe(1)
        const decoded = yield* Effect.promise(() => decode(images[0]!.url))
        expect(decoded.width).toBeGreaterThan(0)

        // The server said nothing about tokens (it would have said 20 000 in): the estimate
        // counts the step's text and the image.
        const usage = (yield* eventsOf(run.id)).filter((event) => event.type === "run.usage")
          .map((event) => event.data as { step: number; input_tokens: number; output_tokens: number })
        expect(usage.map((u) => u.step)).toEqual([1, 2])
        for (const u of usage) expect(u.input_tokens).not.toBe(20_000)
        const imageEstimate = Math.min(1600, Math.ceil((decoded.width * decoded.height) / 750))
        expect(usage[1]!.input_tokens - usage[0]!.input_tokens).toBeGreaterThanOrEqual(imageEstimate)
        // More than all the text of the request could give (the image's share is not text).
        const textChars = JSON.stringify(second!.messages).length - images[0]!.url.length
        expect(usage[1]!.input_tokens).toBeGreaterThan(Math.ceil(textChars / 4))
        // Charged at the fallback price of a model not in the table (WA_MODEL_PRICE_PER_MTOK, 1,3).
        const expected = usage.reduce((sum, u) => sum + (u.input_tokens * 1 + u.output_tokens * 3) / 1e6, 0)
        expect(Number(done.llm_cost_usd)).toBeGreaterThan(0)
        expect(Number(done.llm_cost_usd)).toBeCloseTo(expected, 5)
      }))
  }
)
