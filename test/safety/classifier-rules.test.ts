/**
 * The classifier's form rules added for page-initiated submissions (classifier.ts): the path a
 * form posts to decides for a generic or missing submit control; and the policy's IPv4-mapped
 * IPv6 hosts, which reach the IPv4 address they carry (policy.ts).
 */
import { describe, expect, it } from "vitest"
import { type ActionTarget, classifyAction } from "../../src/safety/classifier.ts"
import { checkUrl, normaliseDomain } from "../../src/safety/policy.ts"

/** A page's own form.submit(): no control, only the form. */
const submitOf = (action: string, label = "", hasCardField = false): ActionTarget => ({
  name: "",
  tag: "button",
  type: "submit",
  form: { label, hasCardField, action }
})

describe("a form's action path", () => {
  it("classifies a page's own submission by where the form posts", () => {
    for (const path of ["/pay", "/payment", "/api/payments", "/order", "/orders/new", "/place-order", "/charge", "/checkout/complete", "/donate"]) {
      expect(classifyAction(submitOf(path))?.category, path).toBe("payment")
    }
    for (const path of ["/account/delete", "/delete-account", "/close_account", "/accounts/42/deactivate"]) {
      expect(classifyAction(submitOf(path))?.category, path).toBe("account_deletion")
    }
    for (const path of ["/messages", "/send", "/compose", "/posts/7/comments", "/contact", "/reply"]) {
      expect(classifyAction(submitOf(path))?.category, path).toBe("send_message")
    }
    expect(classifyAction(submitOf("/messages"))?.because).toBe("submit (form posting to /messages)")
  })

  it("leaves ordinary forms alone, and a control's own words still come first", () => {
    for (const path of ["", "/", "/search", "/login", "/send-code", "/cart/add", "/settings", "/paypal-info"]) {
      expect(classifyAction(submitOf(path)), path).toBeUndefined()
    }
    // A named control that says what it does is not overridden by the path.
    expect(classifyAction({ name: "Search", tag: "button", type: "submit", form: { label: "", hasCardField: false, action: "/orders" } })).toBeUndefined()
    // A card field decides before the path; the form's words before the path.
    expect(classifyAction(submitOf("/search", "", true))?.category).toBe("payment")
    expect(classifyAction(submitOf("/x", "Delete my account"))?.category).toBe("account_deletion")
  })
})

describe("IPv4-mapped IPv6 hosts", () => {
  it("match the IPv4 entry they reach, in entries and in URLs", () => {
    expect(normaliseDomain("[::ffff:127.0.0.1]")).toEqual({ domain: "127.0.0.1" })
    const denied = { allowed_domains: [], denied_domains: ["127.0.0.1"], confirm_actions: [] }
    for (const url of ["http://[::ffff:127.0.0.1]:8080/", "http://[::ffff:7f00:1]/", "http://[0:0:0:0:0:ffff:7f00:1]/x", "http://127.1/", "http://0x7f000001/"]) {
      expect(checkUrl(denied, url)?.rule, url).toBe("denied_domains")
    }
    // Another address, and IPv6 loopback, are other hosts.
    expect(checkUrl(denied, "http://[::ffff:127.0.0.2]/")).toBeUndefined()
    expect(checkUrl(denied, "http://[::1]/")).toBeUndefined()
  })
})
