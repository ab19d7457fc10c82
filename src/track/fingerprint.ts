/**
 * Text fingerprints for change detection without an extraction schema: two snapshots of a page
 * count as the same when their normalized text is the same. Normalization removes what a reader
 * would not call a change (whitespace, line breaks, Unicode composition) and, on request, the
 * dates and clocks many pages print ("Updated 3 minutes ago", "12:04:55").
 */
import { createHash } from "node:crypto"

export interface NormalizeOptions {
  /** Replace date- and time-like text with {@link DATE_PLACEHOLDER}, so a clock on the page is not a change. */
  readonly ignoreDates?: boolean | undefined
}

/** What date- and time-like text becomes under `ignoreDates`. */
export const DATE_PLACEHOLDER = "<date>"

// Every horizontal space Unicode knows (tab, NBSP, en/em/thin spaces, narrow NBSP, ideographic space, ...).
const horizontalSpace = /[^\S\n]+/gu
// Invisible characters that only change the bytes: zero-width space, word joiner, BOM.
const invisible = /[\u200B\u2060\uFEFF]/gu

const months = "jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
const weekdays = "mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:r(?:s(?:day)?)?)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?"
const clock = String.raw`\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s?[ap]\.?m\.?)?(?:\s?(?:utc|gmt|z)(?:[+-]\d{1,2}(?::?\d{2})?)?)?`
const units = "sec(?:ond)?s?|min(?:ute)?s?|h(?:ou)?rs?|hours?|days?|weeks?|months?|years?|yrs?"

/** Date and time noise, most specific first (an ISO date-time before the bare date inside it). */
const datePatterns: ReadonlyArray<RegExp> = [
  // 2026-11-22, 2026-11-22T10:04:55.123Z, 2026-11-22 10:04+01:00
  new RegExp(String.raw`\b\d{4}-\d{2}-\d{2}(?:[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?\b`, "giu"),
  // Sunday, Nov 22, 2026 · Nov 22nd · November 22 2026
  new RegExp(String.raw`\b(?:(?:${weekdays}),?\s)?(?:${months})\.?\s\d{1,2}(?:st|nd|rd|th)?(?:,?\s\d{4})?\b`, "giu"),
  // 22 November 2026 · Sun 22 Nov · November 2026
  new RegExp(String.raw`\b(?:(?:${weekdays}),?\s)?\d{1,2}(?:st|nd|rd|th)?\s(?:of\s)?(?:${months})\.?(?:,?\s\d{4})?\b`, "giu"),
  new RegExp(String.raw`\b(?:${months})\.?\s\d{4}\b`, "giu"),
  // 22/11/2026 · 11/22/26 · 22.11.2026 · 2026/11/22
  /\b\d{1,2}[/.-]\d{1,2}[/.-](?:\d{4}|\d{2})\b/gu,
  /\b\d{4}\/\d{1,2}\/\d{1,2}\b/gu,
  // 12:34 · 12:34:56 · 9:05 pm · 10:04 UTC
  new RegExp(String.raw`\b${clock}(?=\W|$)`, "giu"),
  // 3 minutes ago · an hour ago · just now
  new RegExp(String.raw`\b(?:\d+|an?|one|a few)\s(?:${units})\sago\b`, "giu"),
  /\bjust now\b/giu
]
// A date followed by its time ("<date>, <date>", "<date> at <date>") is one piece of noise.
const adjacentPlaceholders = /<date>(?:[\s,]*(?:at\s)?<date>)+/gu

const stripDates = (line: string): string => {
  let out = line
  for (const pattern of datePatterns) out = out.replace(pattern, DATE_PLACEHOLDER)
  return out.replace(adjacentPlaceholders, DATE_PLACEHOLDER)
}

/**
 * The comparable form of a page's text: Unicode NFC, every run of horizontal whitespace (NBSP
 * included) one space, each line trimmed, empty lines dropped, lines joined by `\n`.
 */
export const normalizeText = (text: string, options?: NormalizeOptions): string => {
  const lines: Array<string> = []
  for (const raw of text.normalize("NFC").replace(invisible, "").split(/\r\n|\r|\n|\u2028|\u2029/u)) {
    let line = raw.replace(horizontalSpace, " ").trim()
    if (options?.ignoreDates === true && line !== "") line = stripDates(line)
    if (line !== "") lines.push(line)
  }
  return lines.join("\n")
}

/** The SHA-256 (hex) of the normalized text: equal fingerprints mean "no change". */
export const fingerprint = (text: string, options?: NormalizeOptions): string =>
  createHash("sha256").update(normalizeText(text, options), "utf8").digest("hex")
