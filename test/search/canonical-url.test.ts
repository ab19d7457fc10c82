import { assert, describe, it } from "@effect/vitest"
import { canonicalUrl, hostMatchesSite, normalizeSite, urlMatchesAnySite } from "../../src/engines/canonical-url.ts"

describe("canonicalUrl, one rule at a time", () => {
  it("lower-cases scheme and host, keeps path case", () => {
    assert.strictEqual(canonicalUrl("HTTPS://Example.COM/Docs/Page"), "https://example.com/Docs/Page")
  })
  it("drops www.", () => {
    assert.strictEqual(canonicalUrl("https://www.example.com/a"), "https://example.com/a")
  })
  it("drops the default port, keeps another", () => {
    assert.strictEqual(canonicalUrl("https://example.com:443/a"), "https://example.com/a")
    assert.strictEqual(canonicalUrl("http://example.com:80/a"), "http://example.com/a")
    assert.strictEqual(canonicalUrl("https://example.com:8443/a"), "https://example.com:8443/a")
  })
  it("drops the fragment", () => {
    assert.strictEqual(canonicalUrl("https://example.com/a#section-2"), "https://example.com/a")
  })
  it("drops the trailing slash, also on the root", () => {
    assert.strictEqual(canonicalUrl("https://example.com/a/b/"), "https://example.com/a/b")
    assert.strictEqual(canonicalUrl("https://example.com/"), canonicalUrl("https://example.com"))
  })
  it("removes tracking parameters", () => {
    const tracked = "https://example.com/a?utm_source=x&utm_medium=y&utm_campaign=z&gclid=1&fbclid=2&msclkid=3" +
      "&mc_cid=4&mc_eid=5&ref_src=twsrc&igshid=6&yclid=7&_ga=8&id=42"
    assert.strictEqual(canonicalUrl(tracked), "https://example.com/a?id=42")
    assert.strictEqual(canonicalUrl("https://example.com/a?UTM_Source=x"), "https://example.com/a")
  })
  it("sorts the remaining parameters", () => {
    assert.strictEqual(canonicalUrl("https://example.com/s?q=effect&b=2&a=1"), "https://example.com/s?a=1&b=2&q=effect")
    assert.strictEqual(canonicalUrl("https://example.com/s?tag=b&tag=a"), canonicalUrl("https://example.com/s?tag=a&tag=b"))
  })
  it("keeps scheme differences and content-selecting parameters", () => {
    assert.notStrictEqual(canonicalUrl("http://example.com/a"), canonicalUrl("https://example.com/a"))
    assert.notStrictEqual(canonicalUrl("https://example.com/a?page=2"), canonicalUrl("https://example.com/a?page=3"))
  })
  it("all rules together give one key", () => {
    const variants = [
      "https://www.Example.com:443/guide/?utm_source=newsletter&b=2&a=1#top",
      "https://example.com/guide?a=1&b=2",
      "HTTPS://EXAMPLE.COM/guide/?b=2&fbclid=abc&a=1"
    ]
    assert.strictEqual(new Set(variants.map(canonicalUrl)).size, 1)
  })
  it("leaves a string that is not a URL as it is (trimmed)", () => {
    assert.strictEqual(canonicalUrl("  not a url "), "not a url")
  })
})

describe("site matching", () => {
  it("normalizes what users type as a site", () => {
    assert.strictEqual(normalizeSite("https://www.Example.com/path?q=1"), "example.com")
    assert.strictEqual(normalizeSite("*.example.com"), "example.com")
    assert.strictEqual(normalizeSite("example.com:8080"), "example.com")
  })
  it("counts subdomains, not look-alike suffixes", () => {
    assert.isTrue(hostMatchesSite("example.com", "example.com"))
    assert.isTrue(hostMatchesSite("docs.example.com", "example.com"))
    assert.isFalse(hostMatchesSite("notexample.com", "example.com"))
    assert.isTrue(urlMatchesAnySite("https://www.blog.example.com/x", ["example.com"]))
    assert.isFalse(urlMatchesAnySite("https://example.org/x", ["example.com"]))
  })
})
