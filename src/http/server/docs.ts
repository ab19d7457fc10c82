/**
 * The API reference at /docs: Scalar's reference UI over the service's OpenAPI document, every
 * part of it served by the service itself. The page holds the document as a JSON data block and
 * loads two scripts from /docs/: Scalar's bundle (the copy shipped inside the `effect` package,
 * read on the first request, not at start-up) and the few lines that start it, so the policy needs
 * no inline script. Scalar's own fonts come from a third-party host: they are turned off and the
 * page uses the system fonts. Scalar sets styles at run time (style elements and attributes), so
 * styles are the one inline allowance of this page; scripts, fonts, images and requests stay on
 * the service's origin.
 */
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { OpenApi } from "effect/http-api"
import { gzipSync } from "node:zlib"
import { WebAgentApi } from "../api/api.ts"
import { pageSecurityHeaders } from "../page-security.ts"

export const DOCS_PAGE_POLICY = {
  directives: [
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'"
  ]
} as const

const escapeHtml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/** JSON that may sit inside a script element: no `</script>`, no line terminators JavaScript rejects. */
const scriptSafeJson = (value: unknown) =>
  JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029")

let page: string | undefined
const docsPage = () => {
  if (page !== undefined) return page
  const spec = OpenApi.fromApi(WebAgentApi)
  // Relative URLs: the page works under a proxy that mounts the service below a prefix.
  page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(spec.info.title)}</title>
</head>
<body>
<div id="api-reference-container"></div>
<script type="application/json" id="openapi-document">${scriptSafeJson(spec)}</script>
<script src="docs/scalar.js"></script>
<script src="docs/start.js"></script>
</body>
</html>
`
  return page
}

const startScript = `"use strict";
window.Scalar.createApiReference(document.getElementById("api-reference-container"), {
  _integration: "html",
  withDefaultFonts: false,
  content: JSON.parse(document.getElementById("openapi-document").textContent)
});
`

interface Bundle {
  readonly body: Uint8Array
  readonly gzip: Uint8Array
}
let bundle: Promise<Bundle> | undefined
/** Scalar's standalone bundle, as the `effect` package ships it (its internal module, by file URL). */
const scalarBundle = () =>
  bundle ??= (async () => {
    const url = new URL("./internal/httpApiScalar.js", import.meta.resolve("effect/http-api"))
    const { javascript } = await import(url.href) as { javascript: string }
    const body = new TextEncoder().encode(javascript)
    return { body, gzip: new Uint8Array(gzipSync(body)) }
  })()

const scriptHeaders = { "x-content-type-options": "nosniff", "cache-control": "public, max-age=3600" }

/** GET /docs and its two scripts. */
export const DocsRoute = HttpRouter.use((router) =>
  Effect.gen(function*() {
    yield* router.add("GET", "/docs", Effect.sync(() =>
      HttpServerResponse.text(docsPage(), {
        contentType: "text/html; charset=utf-8",
        headers: { ...pageSecurityHeaders(DOCS_PAGE_POLICY), "cache-control": "no-cache" }
      })))
    yield* router.add("GET", "/docs/start.js", Effect.sync(() =>
      HttpServerResponse.text(startScript, { contentType: "text/javascript; charset=utf-8", headers: scriptHeaders })))
    yield* router.add("GET", "/docs/scalar.js", Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const { body, gzip } = yield* Effect.promise(scalarBundle)
      const gzipped = /\bgzip\b/.test(request.headers["accept-encoding"] ?? "")
      return HttpServerResponse.uint8Array(gzipped ? gzip : body, {
        contentType: "text/javascript; charset=utf-8",
        headers: { ...scriptHeaders, vary: "accept-encoding", ...(gzipped ? { "content-encoding": "gzip" } : {}) }
      })
    }))
  })
)
