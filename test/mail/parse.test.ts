/** What the agent reads of an email (src/mail/inbound/parse.ts): text of HTML bodies, links, one-time codes. */
import { describe, expect, it } from "vitest"
import { findCodes, findLinks, htmlToText } from "../../src/mail/inbound/parse.ts"

describe("inbound mail parsing", () => {
  it("turns HTML into text with each link's URL after its text; scripts and styles are dropped", () => {
    const text = htmlToText(`<html><head><style>p{}</style></head><body><p>Hi&nbsp;there &amp; welcome</p>
      <script>alert(1)</script><p><a href="https://x.test/confirm?a=1&amp;b=2">Confirm</a></p></body></html>`)
    expect(text).toBe("Hi there & welcome\n\nConfirm (https://x.test/confirm?a=1&b=2)")
  })

  it("finds links: hrefs first, then URLs of the text, http(s) only, trailing punctuation trimmed, no duplicates", () => {
    const html = `<a href="https://a.test/confirm?t=1&amp;u=2">go</a> <a href="mailto:x@y.test">mail</a> <a href="https://a.test/confirm?t=1&u=2">again</a>`
    expect(findLinks("See https://b.test/help. Or (https://c.test/x).", html)).toEqual([
      "https://a.test/confirm?t=1&u=2",
      "https://b.test/help",
      "https://c.test/x"
    ])
    expect(findLinks("no links here", null)).toEqual([])
  })

  it("finds one-time codes near code words, likeliest first, and not dates, URLs or plain words", () => {
    expect(findCodes("Your verification code is 482913.")).toEqual(["482913"])
    expect(findCodes("Use this code to sign in:\n  A7K9QZ\nIt expires in 10 minutes.")).toEqual(["A7K9QZ"])
    expect(findCodes("Your PIN: 4821 (sent 27 Nov 2026)")).toEqual(["4821"])
    expect(findCodes("Confirm here: https://x.test/c/123456 or enter code 778899")).toEqual(["778899"])
    expect(findCodes("Order 123456 shipped. Thanks for shopping!")).toEqual([])
    expect(findCodes("Your code: please confirm the account")).toEqual([])
  })
})
