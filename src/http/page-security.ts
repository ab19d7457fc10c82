/**
 * The security headers of the service's HTML pages (API reference, console, control, replay,
 * consent): a Content-Security-Policy that allows only the service's own origin (or less), never
 * `unsafe-inline` scripts (inline code carries the response's nonce), `nosniff`, a frame policy,
 * and no referrer. Each page states what it needs on top of `default-src 'none'`; the request
 * middleware gives any other HTML response the strictest policy (`htmlDefaults`), so a page added
 * later is covered until it states its own.
 */
import { HttpServerResponse } from "effect/http"
import { randomBytes } from "node:crypto"

export interface PagePolicy {
  /** Directives beyond `default-src 'none'`, e.g. `["script-src 'self'", "connect-src 'self'"]`. */
  readonly directives: ReadonlyArray<string>
  /** Who may frame the page: nobody (the default), or pages of the service itself. */
  readonly frameAncestors?: "none" | "self"
  /** The Referrer-Policy (default `no-referrer`). */
  readonly referrer?: "no-referrer" | "same-origin"
}

/** A fresh nonce for one response's inline scripts and styles (`'nonce-<value>'` in the policy). */
export const cspNonce = (): string => randomBytes(18).toString("base64")

/** The Content-Security-Policy of a page. */
export const contentSecurityPolicy = (policy: PagePolicy): string =>
  [
    "default-src 'none'",
    ...policy.directives,
    "base-uri 'none'",
    ...(policy.directives.some((directive) => directive.startsWith("form-action ")) ? [] : ["form-action 'none'"]),
    `frame-ancestors '${policy.frameAncestors ?? "none"}'`
  ].join("; ")

/** Every header of a page's response that its policy decides. */
export const pageSecurityHeaders = (policy: PagePolicy): Record<string, string> => ({
  "content-security-policy": contentSecurityPolicy(policy),
  "x-content-type-options": "nosniff",
  "x-frame-options": policy.frameAncestors === "self" ? "SAMEORIGIN" : "DENY",
  "referrer-policy": policy.referrer ?? "no-referrer"
})

const defaultHeaders = pageSecurityHeaders({ directives: [] })

const isHtml = (response: HttpServerResponse.HttpServerResponse) => {
  const body = response.body
  const contentType = ("contentType" in body ? body.contentType : undefined) ?? response.headers["content-type"]
  return contentType !== undefined && contentType.startsWith("text/html")
}

/** An HTML response without a policy of its own gets the strictest one (nothing loads, nothing runs). */
export const htmlDefaults = (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse =>
  response.headers["content-security-policy"] === undefined && isHtml(response)
    ? HttpServerResponse.setHeaders(response, { ...defaultHeaders, ...response.headers })
    : response
