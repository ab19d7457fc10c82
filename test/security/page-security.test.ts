/**
 * The service's HTML pages load nothing from elsewhere and say so in their headers: /docs in real
 * Chromium requests only the service's origin and violates none of its policy; /docs, the console
 * and the consent pages answer with a Content-Security-Policy (self only, frames refused), nosniff
 * and a frame policy, and inline code runs only by a per-response nonce. (The control page and the
 * replay page are looked at where their tests open them in Chromium: test/do-anything/take-control
 * and test/recordings/recording.)
 */
import { HttpServerResponse } from "effect/http"
import { type Browser, chromium } from "playwright-core"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type BrowserWatch, watchBrowser } from "../support/contract-browser.ts"
import { htmlDefaults } from "../../src/http/page-security.ts"
import { chromiumPath } from "../browser/support.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"

let service: Service
let browser: Browser

beforeAll(async () => {
  service = await startService()
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox"] })
}, 120_000)
// What the browser gets from the service goes through the contract hook; a mismatch fails the test whose page got it.
let browserWatch: BrowserWatch | undefined
afterEach(async () => {
  expect(await browserWatch?.takeMismatches() ?? []).toEqual([])
})
afterAll(async () => {
  await browser?.close()
  await stopAndClean(service)
})

/** The directives of a Content-Security-Policy header, by name. */
const directives = (header: string | null) => {
  expect(header, "no Content-Security-Policy").not.toBeNull()
  return new Map(header!.split(";").map((part) => part.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]))
}

/** What every page must answer with; `frame` is what frame-ancestors allows. */
const expectPageHeaders = (headers: Headers, frame: "'none'" | "'self'" = "'none'") => {
  const csp = directives(headers.get("content-security-policy"))
  expect(csp.get("default-src")).toEqual(["'none'"])
  expect(csp.get("frame-ancestors")).toEqual([frame])
  expect(csp.get("base-uri")).toEqual(["'none'"])
  for (const [name, values] of csp) {
    expect(values, `${name} allows inline script or eval`).not.toContain("'unsafe-eval'")
    if (name === "script-src") expect(values).not.toContain("'unsafe-inline'")
    // Only the service itself (and local schemes): no other host.
    for (const value of values) expect(value, `${name} names another host`).not.toMatch(/^(https?:|\*|[a-z0-9.-]+\.[a-z]{2,})/i)
  }
  expect(headers.get("x-content-type-options")).toBe("nosniff")
  expect(headers.get("x-frame-options")).toBe(frame === "'none'" ? "DENY" : "SAMEORIGIN")
  return csp
}

describe("/docs", () => {
  it("sends the page headers and names no other host", async () => {
    const response = await service.fetch(`${service.url}/docs`)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/html")
    expectPageHeaders(response.headers)
    const html = await response.text()
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//)
    expect(html).not.toContain("fonts.")
    // Its scripts are the service's own files, sent with nosniff.
    for (const script of ["docs/scalar.js", "docs/start.js"]) {
      expect(html).toContain(`<script src="${script}">`)
      const file = await service.fetch(`${service.url}/${script}`)
      expect(file.status).toBe(200)
      expect(file.headers.get("content-type")).toContain("text/javascript")
      expect(file.headers.get("x-content-type-options")).toBe("nosniff")
    }
  })

  it("renders in Chromium from the service alone, with no policy violation", async () => {
    const context = await browser.newContext()
    browserWatch ??= watchBrowser(service.url)
    browserWatch.watch(context)
    try {
      const page = await context.newPage()
      const requested: Array<string> = []
      page.on("request", (request) => requested.push(request.url()))
      const violations: Array<string> = []
      page.on("console", (message) => {
        if (/Content Security Policy/i.test(message.text())) violations.push(message.text())
      })
      await page.addInitScript(() => {
        document.addEventListener("securitypolicyviolation", (event) => {
          console.error(`Content Security Policy violation: ${event.violatedDirective} ${event.blockedURI}`)
        })
      })
      // A loaded machine may take a while over the 3 MB bundle: generous bounds, nothing timed.
      const response = await page.goto(`${service.url}/docs`, { waitUntil: "domcontentloaded", timeout: 90_000 })
      expect(response?.status()).toBe(200)
      // Scalar drew the reference: an operation of the API is on the page.
      await page.getByText("api_keys", { exact: false }).first().waitFor({ state: "attached", timeout: 90_000 })
      // Late requests (fonts, lazy chunks) are collected until none has started for 2 s. Not
      // Playwright's networkidle: a page that keeps one request open never reaches it, and the
      // check below is about where requests go, not whether the network ever falls silent.
      for (let seen = -1, quietSince = Date.now(), started = Date.now(); Date.now() - quietSince < 2_000 && Date.now() - started < 60_000;) {
        if (requested.length !== seen) [seen, quietSince] = [requested.length, Date.now()]
        await page.waitForTimeout(100)
      }
      const origin = new URL(service.url).origin
      const elsewhere = requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith("data:") && !url.startsWith("blob:"))
      expect(elsewhere, "requests to other hosts").toEqual([])
      // Scalar's bundle probes once whether eval is allowed (`try { new Function("") } catch`, zod's
      // check, with a fallback); the policy refuses it on purpose and Chromium reports the probe.
      expect(violations.filter((text) => !/script-src eval/.test(text))).toEqual([])
    } finally {
      await context.close()
    }
  }, 300_000)
})

describe("the other pages", () => {
  it("the console's page sends the page headers", async () => {
    const response = await service.fetch(`${service.url}/console/`)
    expect(response.headers.get("content-type")).toContain("text/html")
    const csp = expectPageHeaders(response.headers)
    expect(csp.get("script-src")).toEqual(["'self'"])
  })

  it("the consent sign-in page sends the page headers; its inline style runs by a nonce that changes per response", async () => {
    const first = await service.fetch(`${service.url}/v1/delegations/consent?grant_id=dgr_0000000000zzzzzzzzzzzzzzzz`, { redirect: "manual" })
    expect(first.headers.get("content-type")).toContain("text/html")
    const csp = expectPageHeaders(first.headers)
    const styles = csp.get("style-src") ?? []
    expect(styles).not.toContain("'unsafe-inline'")
    const nonce = /^'nonce-([A-Za-z0-9+/=]+)'$/.exec(styles[0] ?? "")?.[1]
    expect(nonce, `style-src ${styles.join(" ")}`).toBeDefined()
    expect(await first.text()).toContain(`<style nonce="${nonce}">`)
    expect(csp.get("form-action")).toEqual(["'self'"])

    const second = await service.fetch(`${service.url}/v1/delegations/consent?grant_id=dgr_0000000000zzzzzzzzzzzzzzzz`, { redirect: "manual" })
    expect(directives(second.headers.get("content-security-policy")).get("style-src")).not.toEqual(styles)
  })

  it("an HTML response without a policy of its own gets the strictest one", () => {
    const bare = htmlDefaults(HttpServerResponse.text("<p>hi</p>", { contentType: "text/html; charset=utf-8" }))
    const headers = new Headers(bare.headers)
    expectPageHeaders(headers)
    expect(directives(headers.get("content-security-policy")).get("script-src")).toBeUndefined()
    // JSON is left as it is.
    expect(htmlDefaults(HttpServerResponse.text("{}", { contentType: "application/json" })).headers["content-security-policy"]).toBeUndefined()
  })
})
