/**
 * What the plan-following model (src/eval/scripted-model.ts) sees in the screenshot that comes
 * with an observation when the service runs with vision (WA_MODEL_VISION): the JPEG is decoded
 * (jpeg-js, as bundled by playwright-core) and searched for pixels of a colour the task names,
 * the way a person looks for "the magenta button". Also the image's size from its header, for
 * the model's token count.
 */
import { createRequire } from "node:module"

interface Decoded {
  readonly width: number
  readonly height: number
  /** RGBA, row by row. */
  readonly data: Uint8Array
}

type Decode = (jpeg: Uint8Array, options: { useTArray: true; formatAsRGBA: true }) => Decoded

let decode: Decode | undefined
/** Loaded on first use: the bundle is large, and only a vision task needs it. */
const decoder = (): Decode =>
  decode ??= (createRequire(import.meta.url)("playwright-core/lib/utilsBundle") as { jpegjs: { decode: Decode } }).jpegjs.decode

/** The JPEG bytes of a data URL (`data:image/jpeg;base64,...`); undefined for anything else. */
export const jpegOfDataUrl = (url: string): Uint8Array | undefined => {
  const match = /^data:image\/jpe?g;base64,(.*)$/s.exec(url)
  return match === null ? undefined : new Uint8Array(Buffer.from(match[1]!, "base64"))
}

export interface ColourBlob {
  /** Centre of the matching pixels, image pixels. */
  readonly x: number
  readonly y: number
  /** Bounding box of the matching pixels, image pixels. */
  readonly left: number
  readonly top: number
  readonly right: number
  readonly bottom: number
  readonly count: number
}

/** The pixels of the image whose colour `match` accepts, as one blob; undefined when there are fewer than `min`. */
export const findColour = (
  jpeg: Uint8Array,
  match: (r: number, g: number, b: number) => boolean,
  min = 50
): ColourBlob | undefined => {
  const { width, height, data } = decoder()(jpeg, { useTArray: true, formatAsRGBA: true })
  let sx = 0, sy = 0, count = 0
  let left = width, top = height, right = -1, bottom = -1
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4
      if (!match(data[i]!, data[i + 1]!, data[i + 2]!)) continue
      sx += x
      sy += y
      count++
      if (x < left) left = x
      if (x > right) right = x
      if (y < top) top = y
      if (y > bottom) bottom = y
    }
  }
  return count < min ? undefined : { x: sx / count, y: sy / count, left, top, right, bottom, count }
}

/** Magenta (#ff00ff) as it survives JPEG compression. */
export const magenta = (r: number, g: number, b: number): boolean => r > 200 && g < 80 && b > 200

/**
 * Image pixels per CSS pixel, as the observation's image note says it ("divide image
 * coordinates by S for click_at"); 1 when it says the image is in CSS pixels.
 */
export const imageScale = (observation: string): number => {
  const match = /divide image coordinates by ([0-9.]+)/.exec(observation)
  const scale = match === null ? 1 : Number(match[1])
  return Number.isFinite(scale) && scale > 0 ? scale : 1
}

/** Width and height from a JPEG's frame header (SOFn); undefined when there is none. */
export const jpegSize = (bytes: Uint8Array): { width: number; height: number } | undefined => {
  if (bytes[0] !== 0xff || bytes[1] !== 0xd8) return undefined
  let at = 2
  while (at + 9 < bytes.length) {
    if (bytes[at] !== 0xff) return undefined
    const marker = bytes[at + 1]!
    const length = (bytes[at + 2]! << 8) | bytes[at + 3]!
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: (bytes[at + 5]! << 8) | bytes[at + 6]!, width: (bytes[at + 7]! << 8) | bytes[at + 8]! }
    }
    at += 2 + length
  }
  return undefined
}
