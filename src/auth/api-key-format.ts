/**
 * API key format: `wa_` + 30 random base62 characters + a 6-character base62 CRC-32 of them
 * (GitHub-style), so a mistyped key is refused without a database lookup. Only the SHA-256 of a
 * key is stored; the key itself is shown once, at creation.
 */
import { createHash, randomInt } from "node:crypto"

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const RANDOM_LENGTH = 30
const CHECKSUM_LENGTH = 6
export const KEY_PREFIX = "wa_"
const keyPattern = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`)

const crcTable = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

const crc32 = (text: string): number => {
  let crc = 0xffffffff
  for (const byte of Buffer.from(text, "utf8")) crc = crcTable[(crc ^ byte) & 0xff]! ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

const toBase62 = (value: number, width: number): string => {
  let out = ""
  for (let i = 0; i < width; i++) {
    out = base62[value % 62] + out
    value = Math.floor(value / 62)
  }
  return out
}

export const generateApiKey = (): string => {
  let random = ""
  for (let i = 0; i < RANDOM_LENGTH; i++) random += base62[randomInt(62)]
  return `${KEY_PREFIX}${random}${toBase62(crc32(random), CHECKSUM_LENGTH)}`
}

/** Whether the text has the shape of a key and its checksum matches. */
export const isWellFormedApiKey = (key: string): boolean => {
  if (!keyPattern.test(key)) return false
  const body = key.slice(KEY_PREFIX.length)
  const random = body.slice(0, RANDOM_LENGTH)
  return body.slice(RANDOM_LENGTH) === toBase62(crc32(random), CHECKSUM_LENGTH)
}

export const hashApiKey = (key: string): string => createHash("sha256").update(key).digest("hex")

/** The part of a key shown in listings so a person can tell keys apart. */
export const displayPrefix = (key: string): string => key.slice(0, KEY_PREFIX.length + 8)
