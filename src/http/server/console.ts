/**
 * The web console at /console: the static files `console/build.ts` writes to console/dist (a React
 * app that is a plain client of the public API; it holds no privilege of its own). Hashed assets
 * under /console/assets are cached for a year; index.html is revalidated on every load so a new
 * build is picked up at once; any other path without a file extension is a client-side route and
 * gets index.html (SPA fallback). Text files are gzipped when the client accepts it. Files are read
 * from disk and kept in memory per (path, mtime, size), so a rebuild while the service runs is
 * served without a restart.
 */
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { readFile, stat } from "node:fs/promises"
import * as path from "node:path"
import { gzipSync } from "node:zlib"
import { projectRoot } from "../../config/project-root.ts"
import { envelopeBody, jsonResponse } from "../errors.ts"
import { pageSecurityHeaders } from "../page-security.ts"

/** Where `node console/build.ts` writes the console (not committed; built by `npm install` and `npm start`). */
export const consoleDistDir = path.join(projectRoot, "console", "dist")

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".map": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8"
}
const compressible = new Set([".html", ".js", ".mjs", ".css", ".json", ".map", ".svg", ".txt"])

/**
 * The console talks only to its own origin (the API), shows screenshots the API serves, and is
 * never framed. React sets styles through the DOM, not style attributes, so no 'unsafe-inline'.
 */
const securityHeaders = pageSecurityHeaders({
  directives: [
    "script-src 'self'", "style-src 'self'", "img-src 'self' data: blob:", "font-src 'self'", "connect-src 'self'",
    "manifest-src 'self'", "form-action 'self'"
  ]
})

interface CachedFile {
  readonly key: string
  readonly body: Uint8Array
  readonly gzip: Uint8Array | undefined
}
const cache = new Map<string, CachedFile>()

const load = async (file: string): Promise<CachedFile | undefined> => {
  const info = await stat(file).catch(() => undefined)
  if (info === undefined || !info.isFile()) return undefined
  const key = `${info.mtimeMs}:${info.size}`
  const cached = cache.get(file)
  if (cached?.key === key) return cached
  const body = new Uint8Array(await readFile(file))
  const entry: CachedFile = {
    key,
    body,
    gzip: compressible.has(path.extname(file)) && body.length > 512 ? new Uint8Array(gzipSync(body, { level: 9 })) : undefined
  }
  cache.set(file, entry)
  return entry
}

const notBuilt = () =>
  HttpServerResponse.text(
    "<!doctype html><meta charset=utf-8><title>Console not built</title>" +
      "<p>The web console has not been built on this machine. Run <code>npm run build:console</code> " +
      "(<code>npm install</code> and <code>npm start</code> do it), then reload.</p>",
    { status: 503, contentType: "text/html; charset=utf-8", headers: { "cache-control": "no-store", ...securityHeaders } }
  )

/** The file a console URL path names, or undefined for a path that tries to leave the dist dir. */
export const resolveConsolePath = (dist: string, urlPath: string): string | undefined => {
  let relative: string
  try {
    relative = decodeURIComponent(urlPath.replace(/^\/console\/?/, ""))
  } catch {
    return undefined
  }
  if (relative.includes("\0")) return undefined
  const file = path.resolve(dist, relative === "" ? "index.html" : relative)
  return file === dist || file.startsWith(dist + path.sep) ? file : undefined
}

export const serveConsole = (dist: string) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const urlPath = request.url.split("?")[0] ?? "/console"
    const index = path.join(dist, "index.html")
    const resolved = resolveConsolePath(dist, urlPath)
    if (resolved === undefined) return jsonResponse(404, envelopeBody("not_found", `no console file at ${urlPath}`))
    let file = resolved
    let entry = yield* Effect.promise(() => load(file))
    if (entry === undefined) {
      // A client-side route (no extension) gets the app; a missing asset is a plain 404.
      if (path.extname(file) !== "" && !urlPath.endsWith("/")) {
        return jsonResponse(404, envelopeBody("not_found", `no console file at ${urlPath}`))
      }
      file = index
      entry = yield* Effect.promise(() => load(file))
      if (entry === undefined) return notBuilt()
    }
    const extension = path.extname(file)
    const isIndex = file === index
    const gzip = entry.gzip !== undefined && /\bgzip\b/.test(request.headers["accept-encoding"] ?? "")
    const headers: Record<string, string> = {
      "cache-control": isIndex ? "no-cache" : urlPath.startsWith("/console/assets/") ? "public, max-age=31536000, immutable" : "public, max-age=300",
      vary: "accept-encoding",
      ...(gzip ? { "content-encoding": "gzip" } : {}),
      ...(isIndex ? securityHeaders : { "x-content-type-options": "nosniff" })
    }
    return HttpServerResponse.uint8Array(gzip ? entry.gzip! : entry.body, {
      contentType: contentTypes[extension] ?? "application/octet-stream",
      headers
    })
  })

/** GET /console and everything under it. */
export const ConsoleRoute = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const handler = serveConsole(consoleDistDir)
    // (The wildcard route also answers /console itself.)
    yield* router.add("GET", "/console/*", handler)
  })
)
