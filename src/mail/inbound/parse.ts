/**
 * What an agent reads of an email: its body as text (the text part, else the HTML part as text),
 * the links in it (HTML hrefs first, then bare URLs of the text, in order, without duplicates), and
 * the one-time codes it carries (4 to 8 letters/digits with at least one digit, near a word such as
 * code, verification, OTP, PIN or passcode). Pure functions: the listener (listener.ts) stores
 * their results with the message.
 */

/** Links kept per message. */
const MAX_LINKS = 50

const decodeEntities = (text: string): string =>
  text
    .replace(/&nbsp;/gi, " ")
    .replace(/&lt;/gi, "<")
    .replace(/&gt;/gi, ">")
    .replace(/&quot;/gi, "\"")
    .replace(/&#39;|&apos;/gi, "'")
    .replace(/&#(\d+);/g, (_m, code: string) => String.fromCodePoint(Number(code)))
    .replace(/&#x([0-9a-f]+);/gi, (_m, code: string) => String.fromCodePoint(parseInt(code, 16)))
    .replace(/&amp;/gi, "&")

/** An HTML body as readable text: scripts and styles dropped, blocks on their own lines, a link's URL after its text. */
export const htmlToText = (html: string): string =>
  decodeEntities(
    html
      .replace(/<(script|style|head)[\s\S]*?<\/\1>/gi, "")
      .replace(/<a\s[^>]*href\s*=\s*["']([^"']+)["'][^>]*>([\s\S]*?)<\/a>/gi, (_m, href: string, inner: string) => `${inner} (${href})`)
      .replace(/<br\s*\/?>/gi, "\n")
      .replace(/<\/(p|div|h[1-6]|li|tr|table|section|article|header|footer)>/gi, "\n")
      .replace(/<[^>]+>/g, "")
  )
    .replace(/[ \t]+/g, " ")
    .replace(/\n[ \t]+/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim()

const trimUrl = (url: string): string => url.replace(/[).,;:!?'"\]>]+$/, "")

/** The links of a message: hrefs of its HTML, then URLs in its text, http(s) only, first occurrence kept. */
export const findLinks = (text: string, html: string | null): ReadonlyArray<string> => {
  const found: Array<string> = []
  const add = (raw: string) => {
    const url = trimUrl(decodeEntities(raw.trim()))
    if (!/^https?:\/\/[^\s]+$/i.test(url) || found.includes(url) || found.length >= MAX_LINKS) return
    found.push(url)
  }
  if (html !== null) for (const match of html.matchAll(/href\s*=\s*["']([^"']+)["']/gi)) add(match[1]!)
  for (const match of text.matchAll(/https?:\/\/[^\s<>"']+/gi)) add(match[0])
  return found
}

const codeWords = /\b(code|codes|verification|verify|otp|one[- ]time|pin|passcode|password|security|confirm(?:ation)?|token|2fa|login)\b/i

/**
 * One-time codes: tokens of 4 to 8 letters and digits with at least one digit, in a line (or the
 * line after one) that has a code word; a token that is a year-like number next to a date, or part
 * of a URL, is not a code. Most likely first: on the code word's own line, then digits-only.
 */
export const findCodes = (text: string): ReadonlyArray<string> => {
  const lines = text.split(/\r?\n/)
  const scored: Array<{ code: string; score: number; at: number }> = []
  lines.forEach((line, index) => {
    const own = codeWords.test(line)
    const previous = index > 0 && codeWords.test(lines[index - 1]!)
    if (!own && !previous) return
    const withoutUrls = line.replace(/https?:\/\/\S+/gi, " ")
    for (const match of withoutUrls.matchAll(/(?<![A-Za-z0-9-])([A-Za-z0-9]{4,8})(?![A-Za-z0-9-])/g)) {
      const token = match[1]!
      if (!/\d/.test(token)) continue
      // Dates and times around it: 2026 in "27 Nov 2026" is no code.
      if (/^(19|20)\d\d$/.test(token) && /\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b/i.test(withoutUrls)) continue
      const score = (own ? 2 : 0) + (/^\d+$/.test(token) ? 1 : 0) + (token.length === 6 ? 1 : 0)
      if (!scored.some((s) => s.code === token)) scored.push({ code: token, score, at: scored.length })
    }
  })
  return scored.sort((a, b) => b.score - a.score || a.at - b.at).map((s) => s.code).slice(0, 10)
}
