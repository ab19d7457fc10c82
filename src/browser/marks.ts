/**
 * Set-of-marks screenshots for models that see images: the viewport as a JPEG with a box and a
 * label drawn over every element whose ref is in the text observation (label = the ref, e.g.
 * `e12`, `f1e3`), so the model can tie what it sees to the refs it acts on, and use click_at /
 * type_at where there is no ref (a canvas, a map).
 *
 * The marks are composed on the captured JPEG, never drawn in the page: the screenshot is taken
 * as it is, then decoded, marked, scaled and re-encoded by an OffscreenCanvas in the browser (one
 * evaluate with no DOM change, so the page, its recording and the live view never show a mark).
 *
 * Bounds: at most `maxWidth` px wide (default 1280; a wider viewport is scaled down and the
 * scale reported, so coordinates read in the image map back to CSS pixels), JPEG quality
 * `quality` (default 60), and at most `maxBytes` (default 250 KB: lower qualities, then a smaller
 * scale, until it fits).
 */
import type { Frame, Page } from "playwright-core"
import type { ActionFailed, ActionTimeout, BrowserCrashed } from "./errors.ts"
import { locateRef } from "./observe.ts"
import { attempt, type ContextLease } from "./pool.ts"
import type { Effect } from "effect"

export interface Mark {
  readonly ref: string
  /** CSS pixels of the viewport. */
  readonly x: number
  readonly y: number
  readonly width: number
  readonly height: number
}

export interface MarkedScreenshot {
  readonly jpeg: Uint8Array
  /** Image size in pixels. */
  readonly width: number
  readonly height: number
  /** Image pixels per CSS pixel (1 unless the viewport was wider than maxWidth or the byte cap forced a smaller image). */
  readonly scale: number
  /** The marks drawn (refs in the viewport). */
  readonly marks: ReadonlyArray<Mark>
  /** The plain screenshot (no marks), as captured: for the run's step screenshots. */
  readonly plain: Uint8Array
}

export interface MarkOptions {
  readonly maxWidth?: number
  readonly quality?: number
  readonly maxBytes?: number
}

export const markDefaults = { maxWidth: 1280, quality: 60, maxBytes: 250_000 } as const

const refsIn = (text: string): Array<string> => {
  const out = new Set<string>()
  for (const match of text.matchAll(/\[((?:f\d+)*e\d+)\]/g)) out.add(match[1]!)
  return [...out]
}

/** Runs in a frame: the viewport rectangles of elements by ref number (from the snapshot's ref table). */
function rectsOf(ids: ReadonlyArray<number>): Array<[number, number, number, number, number] | null> {
  type State = { els: Map<number, WeakRef<Element>> }
  const state = (window as unknown as Record<symbol, State | undefined>)[Symbol.for("web-agent-service.refs")]
  return ids.map((id) => {
    const element = state?.els.get(id)?.deref()
    if (element === undefined || !element.isConnected) return null
    const r = element.getBoundingClientRect()
    if (r.width < 1 || r.height < 1) return null
    return [id, r.left, r.top, r.width, r.height]
  })
}

/** Runs in an iframe element: the offset of its content box in its own frame's viewport. */
function contentOffset(element: Element): [number, number] {
  const r = element.getBoundingClientRect()
  return [r.left + element.clientLeft, r.top + element.clientTop]
}

/** Where each ref's element sits in the main viewport (clipped to it; refs out of view are left out). */
export const markBoxes = async (page: Page, refs: ReadonlyArray<string>): Promise<Array<Mark>> => {
  const viewport = page.viewportSize() ?? await page.evaluate(() => ({ width: innerWidth, height: innerHeight }))
  const byPrefix = new Map<string, Array<number>>()
  for (const ref of refs) {
    const at = ref.lastIndexOf("e")
    const prefix = ref.slice(0, at)
    const list = byPrefix.get(prefix) ?? []
    list.push(Number(ref.slice(at + 1)))
    byPrefix.set(prefix, list)
  }
  const marks: Array<Mark> = []
  for (const [prefix, ids] of byPrefix) {
    let frame: Frame = page.mainFrame()
    let dx = 0
    let dy = 0
    if (prefix !== "") {
      const location = await locateRef(page, `${prefix}e0`).catch(() => undefined)
      if (location === undefined) continue
      frame = location.frame
      // Each iframe's content box in its parent's viewport, summed up to the main frame.
      let current: Frame | null = frame
      let visible = true
      while (current !== null && current !== page.mainFrame()) {
        const element = await current.frameElement().catch(() => undefined)
        if (element === undefined) {
          visible = false
          break
        }
        const [ox, oy] = await element.evaluate(contentOffset).catch(() => [Number.NaN, Number.NaN] as [number, number])
        await element.dispose().catch(() => undefined)
        dx += ox
        dy += oy
        current = current.parentFrame()
      }
      if (!visible || Number.isNaN(dx) || Number.isNaN(dy)) continue
    }
    const rects = await frame.evaluate(rectsOf, ids).catch(() => [])
    for (const rect of rects) {
      if (rect === null) continue
      const [id, left, top, width, height] = rect
      const x0 = Math.max(0, left + dx)
      const y0 = Math.max(0, top + dy)
      const x1 = Math.min(viewport.width, left + dx + width)
      const y1 = Math.min(viewport.height, top + dy + height)
      if (x1 - x0 < 2 || y1 - y0 < 2) continue
      marks.push({ ref: `${prefix}e${id}`, x: Math.round(x0), y: Math.round(y0), width: Math.round(x1 - x0), height: Math.round(y1 - y0) })
    }
  }
  return marks
}

interface ComposeArgs {
  readonly data: string
  readonly cssWidth: number
  readonly marks: ReadonlyArray<Mark>
  readonly maxWidth: number
  readonly quality: number
  readonly maxBytes: number
}

/** Runs in the page (self-contained): decodes the JPEG, draws the marks, scales and re-encodes within the bounds. */
async function compose(args: ComposeArgs): Promise<{ data: string; width: number; height: number; scale: number }> {
  const raw = atob(args.data)
  const bytes = new Uint8Array(raw.length)
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i)
  const bitmap = await createImageBitmap(new Blob([bytes], { type: "image/jpeg" }))
  const palette = ["#e6194b", "#1f77b4", "#2ca02c", "#ff7f0e", "#008080", "#9a6324", "#000075", "#808000"]
  const ratio = bitmap.width / Math.max(1, args.cssWidth) // captured pixels per CSS pixel
  const encode = async (scale: number, quality: number) => {
    const width = Math.max(1, Math.round(args.cssWidth * scale))
    const height = Math.max(1, Math.round((bitmap.height / ratio) * scale))
    const canvas = new OffscreenCanvas(width, height)
    const g = canvas.getContext("2d")!
    g.drawImage(bitmap, 0, 0, width, height)
    const font = Math.max(10, Math.round(13 * Math.min(1, scale * 1.2)))
    g.font = `bold ${font}px sans-serif`
    g.textBaseline = "top"
    args.marks.forEach((mark, i) => {
      const color = palette[i % palette.length]!
      const x = mark.x * scale
      const y = mark.y * scale
      const w = mark.width * scale
      const h = mark.height * scale
      g.strokeStyle = color
      g.lineWidth = 2
      g.strokeRect(x + 1, y + 1, Math.max(1, w - 2), Math.max(1, h - 2))
      const label = mark.ref
      const lw = g.measureText(label).width + 4
      const lh = font + 2
      const lx = Math.min(Math.max(0, x), width - lw)
      const ly = y >= lh ? y - lh : y // above the box, or inside its top edge at the top of the page
      g.fillStyle = color
      g.fillRect(lx, ly, lw, lh)
      g.fillStyle = "#ffffff"
      g.fillText(label, lx + 2, ly + 1)
    })
    const blob = await canvas.convertToBlob({ type: "image/jpeg", quality: quality / 100 })
    return { blob, width, height, scale }
  }
  let scale = Math.min(1, args.maxWidth / args.cssWidth)
  let quality = args.quality
  let out = await encode(scale, quality)
  // Over the byte cap: lower quality first (to 30), then a smaller picture.
  for (let tries = 0; out.blob.size > args.maxBytes && tries < 8; tries++) {
    if (quality > 30) quality = Math.max(30, quality - 15)
    else scale = scale * 0.8
    out = await encode(scale, quality)
  }
  bitmap.close()
  const buffer = new Uint8Array(await out.blob.arrayBuffer())
  let binary = ""
  for (let i = 0; i < buffer.length; i += 0x8000) binary += String.fromCharCode(...buffer.subarray(i, i + 0x8000))
  return { data: btoa(binary), width: out.width, height: out.height, scale: out.scale }
}

/** Draws the marks of `refs` on a captured JPEG of the page's viewport (see the module comment). */
export const composeMarks = async (
  page: Page,
  plain: Uint8Array,
  marks: ReadonlyArray<Mark>,
  options: MarkOptions = {}
): Promise<Omit<MarkedScreenshot, "plain" | "marks">> => {
  const viewport = page.viewportSize() ?? await page.evaluate(() => ({ width: innerWidth, height: innerHeight }))
  const result = await page.evaluate(compose, {
    data: Buffer.from(plain).toString("base64"),
    cssWidth: viewport.width,
    marks: [...marks],
    maxWidth: options.maxWidth ?? markDefaults.maxWidth,
    quality: options.quality ?? markDefaults.quality,
    maxBytes: options.maxBytes ?? markDefaults.maxBytes
  })
  const jpeg = Buffer.from(result.data, "base64")
  return { jpeg: new Uint8Array(jpeg.buffer, jpeg.byteOffset, jpeg.byteLength), width: result.width, height: result.height, scale: result.scale }
}

/**
 * The active tab's viewport with the marks of the refs in `observationText`. When the marks
 * cannot be composed (a page that replaced the canvas APIs), the plain capture is sent unmarked
 * (its size still bounded by the viewport) and `marks` is empty.
 */
export const markedScreenshot = (
  lease: ContextLease,
  observationText: string,
  options: MarkOptions = {}
): Effect.Effect<MarkedScreenshot, BrowserCrashed | ActionTimeout | ActionFailed> =>
  attempt(lease, "screenshot", 15_000, async () => {
    const page = lease.page() ?? await lease.context.newPage()
    // Captured at the step screenshots' quality (it is also the run's step screenshot); re-encoding
    // at the same quality on the same pixel grid loses little.
    const buffer = await page.screenshot({ type: "jpeg", quality: options.quality ?? markDefaults.quality, scale: "css", timeout: 10_000 })
    const plain = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
    const marks = await markBoxes(page, refsIn(observationText)).catch(() => [])
    const composed = await composeMarks(page, plain, marks, options).catch(() => undefined)
    if (composed === undefined) {
      const viewport = page.viewportSize()
      return { jpeg: plain, width: viewport?.width ?? 0, height: viewport?.height ?? 0, scale: 1, marks: [], plain }
    }
    return { ...composed, marks, plain }
  })
