/**
 * The safety boundary's pure parts: domain entries and their matching (policy.ts), the URLs of a
 * create, and the click classifier and answers (classifier.ts).
 */
import { describe, expect, it } from "vitest"
import { type ActionTarget, classifyAction, confirmationPrompt, isApproval } from "../../src/safety/classifier.ts"
import { checkUrl, domainMatches, normaliseDomain, urlsOfCreate } from "../../src/safety/policy.ts"

const policy = (allowed: ReadonlyArray<string>, denied: ReadonlyArray<string> = []) => ({
  allowed_domains: allowed,
  denied_domains: denied,
  confirm_actions: []
})

describe("domain entries", () => {
  it("normalises case, IDN, trailing dot, a leading *. and IPv4 shorthands; refuses schemes, ports, paths", () => {
    expect(normaliseDomain("Example.COM.")).toEqual({ domain: "example.com" })
    expect(normaliseDomain("*.Shop.Example.com")).toEqual({ domain: "shop.example.com" })
    expect(normaliseDomain("bücher.de")).toEqual({ domain: "xn--bcher-kva.de" })
    expect(normaliseDomain("127.1")).toEqual({ domain: "127.0.0.1" })
    expect(normaliseDomain("[::1]")).toEqual({ domain: "[::1]" })
    for (const bad of ["https://example.com", "example.com:443", "example.com/path", "", "*", "a..b", "user@example.com", "exa mple.com"]) {
      expect(typeof normaliseDomain(bad), bad).toBe("string")
    }
  })

  it("an entry matches itself and its subdomains, an IP only itself", () => {
    expect(domainMatches("example.com", "example.com")).toBe(true)
    expect(domainMatches("a.b.example.com", "example.com")).toBe(true)
    expect(domainMatches("notexample.com", "example.com")).toBe(false)
    expect(domainMatches("example.com", "shop.example.com")).toBe(false)
    expect(domainMatches("127.0.0.1", "0.0.1")).toBe(false)
  })
})

describe("checkUrl", () => {
  it("deny wins over allow; an empty allow-list allows what is not denied; hosts compared as the browser sees them", () => {
    const p = policy(["example.com"], ["ads.example.com"])
    expect(checkUrl(p, "https://www.example.com/x")).toBeUndefined()
    expect(checkUrl(p, "https://EXAMPLE.com./")).toBeUndefined()
    expect(checkUrl(p, "https://ads.example.com/")?.rule).toBe("denied_domains")
    expect(checkUrl(p, "https://x.ads.example.com/")?.rule).toBe("denied_domains")
    expect(checkUrl(p, "https://other.org/")?.rule).toBe("allowed_domains")
    expect(checkUrl(p, "about:blank")).toBeUndefined()
    expect(checkUrl(p, "file:///etc/passwd")?.rule).toBe("allowed_domains")
    expect(checkUrl(policy([], ["localhost"]), "http://localhost:8080/")?.reason).toContain("localhost is on the project's denied_domains")
    expect(checkUrl(policy([], ["localhost"]), "http://127.0.0.1:8080/")).toBeUndefined()
    expect(checkUrl(policy([], ["xn--bcher-kva.de"]), "https://BÜCHER.de/")?.domain).toBe("xn--bcher-kva.de")
    expect(checkUrl(policy([]), "https://anything.example/")).toBeUndefined()
  })

  it("takes the URLs of a create from instructions and *_url fields, not callback_url", () => {
    expect(urlsOfCreate({
      instructions: "Open https://a.example/x, then (http://b.example/y).",
      callback_url: "https://hooks.example/cb",
      start_url: "https://c.example/"
    })).toEqual([
      { field: "instructions", url: "https://a.example/x" },
      { field: "instructions", url: "http://b.example/y" },
      { field: "start_url", url: "https://c.example/" }
    ])
  })
})

describe("classifier", () => {
  const button = (name: string, form?: ActionTarget["form"]): ActionTarget => ({ name, tag: "button", type: "submit", form })
  it("puts payment, account deletion and sending in their categories", () => {
    for (const name of ["Pay", "Pay $12.00", "Pay now", "Place order", "Place your order", "Buy now", "Buy", "Purchase", "Complete purchase", "Confirm payment"]) {
      expect(classifyAction(button(name))?.category, name).toBe("payment")
    }
    for (const name of ["Delete account", "Delete my account", "Close account", "Deactivate your account", "Permanently delete"]) {
      expect(classifyAction(button(name))?.category, name).toBe("account_deletion")
    }
    for (const name of ["Send", "Send message", "Send email", "Reply", "Post comment", "Submit comment"]) {
      expect(classifyAction(button(name))?.category, name).toBe("send_message")
    }
  })

  it("leaves ordinary controls alone", () => {
    for (const name of ["Checkout", "Add to cart", "PayPal", "Payment options", "Send code", "Resend", "Search", "Next", "Delete item", "Sign in", "Add a note"]) {
      expect(classifyAction(button(name)), name).toBeUndefined()
    }
  })

  it("a generic submit button takes its form's category; a form with a card number field is a payment", () => {
    expect(classifyAction(button("Submit", { label: "Checkout", hasCardField: true }))?.category).toBe("payment")
    expect(classifyAction(button("Continue", { label: "Delete your account", hasCardField: false }))?.category).toBe("account_deletion")
    expect(classifyAction(button("Continue", { label: "Shipping address", hasCardField: false }))).toBeUndefined()
    expect(classifyAction({ name: "Submit", tag: "a", type: "", form: { label: "x", hasCardField: true } })).toBeUndefined()
  })

  it("asks in plain words and takes only a yes as approval", () => {
    const target = button("Place order")
    expect(confirmationPrompt(target, classifyAction(target)!)).toBe("The agent wants to click \"Place order\" (payment). Allow? yes/no")
    for (const yes of ["yes", "Yes", " YES ", "y", "allow", "ok", true, { answer: "yes" }]) expect(isApproval(yes), JSON.stringify(yes)).toBe(true)
    for (const no of ["no", "", "yes please no", "maybe", false, null, { answer: "no" }, 1]) expect(isApproval(no), JSON.stringify(no)).toBe(false)
  })
})
