import { describe, expect, it } from "vitest"
import { DATE_PLACEHOLDER, fingerprint, normalizeText } from "../../src/track/fingerprint.ts"

describe("normalizeText", () => {
  it("collapses whitespace runs, NBSP and tabs included, and trims each line", () => {
    expect(normalizeText("  Price:\u00A0\u00A0 $5 \t each  ")).toBe("Price: $5 each")
    expect(normalizeText("a\u2009b\u202Fc\u3000d")).toBe("a b c d")
  })
  it("drops empty and blank lines and joins lines with \\n, whatever the line endings", () => {
    expect(normalizeText("one\r\n\r\n  \r\ntwo\rthree\n\n")).toBe("one\ntwo\nthree")
  })
  it("is empty for blank input", () => {
    expect(normalizeText("")).toBe("")
    expect(normalizeText(" \n\t\n\u00A0")).toBe("")
  })
  it("applies Unicode NFC", () => {
    const decomposed = "Cafe\u0301"
    expect(normalizeText(decomposed)).toBe("Caf\u00E9")
  })
  it("removes zero-width characters", () => {
    expect(normalizeText("sold\u200B out\uFEFF")).toBe("sold out")
  })
  it("keeps dates unless asked", () => {
    expect(normalizeText("Updated 2026-11-22 12:34")).toBe("Updated 2026-11-22 12:34")
  })
})

describe("normalizeText with ignoreDates", () => {
  const strip = (text: string) => normalizeText(text, { ignoreDates: true })
  it.each([
    ["ISO date", "Updated 2026-11-22", "Updated <date>"],
    ["ISO date-time", "at 2026-11-22T10:04:55.123Z.", "at <date>."],
    ["ISO date-time with offset", "2026-11-22 10:04+01:00", "<date>"],
    ["clock", "Now 12:34 here", "Now <date> here"],
    ["clock with seconds", "Now 12:34:56 here", "Now <date> here"],
    ["12-hour clock", "at 9:05 pm", "at <date>"],
    ["month name date", "Nov 22, 2026 sale", "<date> sale"],
    ["long month name", "November 22nd", "<date>"],
    ["weekday and day-month", "Sunday, 22 November 2026", "<date>"],
    ["month and year", "Archive: March 2026", "Archive: <date>"],
    ["slashed date", "on 22/11/2026", "on <date>"],
    ["dotted date", "on 22.11.2026", "on <date>"],
    ["two-digit year", "on 11/22/26", "on <date>"],
    ["relative minutes", "Posted 3 minutes ago", "Posted <date>"],
    ["relative an hour", "Posted an hour ago", "Posted <date>"],
    ["just now", "Updated just now", "Updated <date>"],
    ["date followed by time", "Nov 22, 2026 at 10:04", "<date>"]
  ])("replaces %s", (_name, input, expected) => {
    expect(strip(input)).toBe(expected)
  })
  it("uses the documented placeholder", () => {
    expect(DATE_PLACEHOLDER).toBe("<date>")
  })
  it("leaves prices, versions, counts and addresses alone", () => {
    const text = "Price $12.50, version 10.0.19041, 3 items left, ratio 16:9, host 192.168.1.10, May contain nuts"
    expect(strip(text)).toBe(text)
  })
  it("makes two renderings that differ only by their clock equal", () => {
    const a = "Stock: 4\nLast checked 10:04:55 on 22/11/2026"
    const b = "Stock: 4\nLast checked 10:05:12 on 23/11/2026"
    expect(strip(a)).toBe(strip(b))
    expect(normalizeText(a)).not.toBe(normalizeText(b))
  })
})

describe("fingerprint", () => {
  it("is the sha256 hex of the normalized text", () => {
    // sha256("hello world")
    expect(fingerprint("  hello   world \n")).toBe("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9")
  })
  it("is equal for whitespace-only differences and differs for content changes", () => {
    expect(fingerprint("a  b\n\nc")).toBe(fingerprint("a b\r\nc  "))
    expect(fingerprint("price 5")).not.toBe(fingerprint("price 6"))
  })
  it("honours ignoreDates", () => {
    expect(fingerprint("at 10:04", { ignoreDates: true })).toBe(fingerprint("at 11:15", { ignoreDates: true }))
    expect(fingerprint("at 10:04")).not.toBe(fingerprint("at 11:15"))
  })
})
