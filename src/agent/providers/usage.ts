/**
 * Token counts for a model call whose server does not report usage (some vLLM, llama.cpp and
 * proxy setups): an estimate, so the step is still charged. Text: one token per 4 characters
 * (JSON of tool calls and results included). Images: ceil(width * height / 750) per image, at most
 * 1 600 (Anthropic's published formula; OpenAI's high-detail tiles give about the same for a
 * 1280x800 screenshot, 1 105); an image whose size cannot be read counts 1 600.
 * When the server reports usage it is used as it is: it already includes the images' tokens.
 */
import type { Prompt } from "effect/ai"

const maxImageTokens = 1600

/** Width and height of a JPEG (its SOF segment) or PNG (IHDR); undefined for anything else. */
export const imageSize = (bytes: Uint8Array): { width: number; height: number } | undefined => {
  if (bytes.length > 24 && bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    return { width: view.getUint32(16), height: view.getUint32(20) }
  }
  if (bytes[0] !== 0xff || bytes[1] !== 0xd8) return undefined
  let at = 2
  while (at + 9 < bytes.length) {
    if (bytes[at] !== 0xff) return undefined
    const marker = bytes[at + 1]!
    if (marker === 0xff) {
      at++
      continue
    }
    const length = (bytes[at + 2]! << 8) | bytes[at + 3]!
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: (bytes[at + 5]! << 8) | bytes[at + 6]!, width: (bytes[at + 7]! << 8) | bytes[at + 8]! }
    }
    at += 2 + length
  }
  return undefined
}

const bytesOf = (data: string | Uint8Array | URL): Uint8Array | undefined => {
  if (data instanceof Uint8Array) return data
  if (data instanceof URL) return undefined
  const base64 = data.startsWith("data:") ? data.slice(data.indexOf(",") + 1) : data
  try {
    return Buffer.from(base64.slice(0, 64_000), "base64")
  } catch {
    return undefined
  }
}

/** Estimated tokens of one image (see the module comment). */
export const imageTokens = (data: string | Uint8Array | URL): number => {
  const bytes = bytesOf(data)
  const size = bytes === undefined ? undefined : imageSize(bytes)
  if (size === undefined) return maxImageTokens
  return Math.min(maxImageTokens, Math.ceil((size.width * size.height) / 750))
}

/** Estimated input tokens of a prompt: its text and JSON at 4 characters a token, plus its images. */
export const estimateInputTokens = (prompt: Prompt.Prompt): number => {
  let chars = 0
  let images = 0
  for (const message of prompt.content) {
    if (message.role === "system") {
      chars += message.content.length
      continue
    }
    for (const part of message.content as unknown as ReadonlyArray<{ type: string } & Record<string, unknown>>) {
      if (part.type === "text" || part.type === "reasoning") chars += String(part["text"] ?? "").length
      else if (part.type === "file") {
        if (String(part["mediaType"]).startsWith("image/")) images += imageTokens(part["data"] as string | Uint8Array | URL)
      } else if (part.type === "tool-call") chars += part["name"]!.toString().length + JSON.stringify(part["params"] ?? {}).length
      else if (part.type === "tool-result") chars += JSON.stringify(part["result"] ?? null).length
    }
  }
  return Math.ceil(chars / 4) + images
}

/** Estimated output tokens of the response parts (text and tool calls). */
export const estimateOutputTokens = (parts: ReadonlyArray<{ readonly type: string }>): number =>
  Math.ceil((parts as ReadonlyArray<{ readonly type: string } & Record<string, unknown>>).reduce((sum, part) =>
    sum + (part.type === "text" ? String(part["text"] ?? "").length : part.type === "tool-call" ? JSON.stringify(part["params"] ?? {}).length + String(part["name"]).length : 0), 0) / 4)
