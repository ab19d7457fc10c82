/**
 * Fetches a page over HTTP for the Reader. Redirects are followed by hand so every hop is checked
 * against private, loopback, link-local and metadata addresses (`checkPublicUrl`, the service's
 * one classifier) before it is requested; a hop that is neither trusted nor allowed private is
 * sent through a client whose sockets resolve names with `publicLookup`, so the connection goes
 * only to addresses checked at connect time (a name re-pointed at 127.0.0.1 between the check and
 * the request is refused). The body is read up to a byte cap and decoded with the charset the
 * server or the document declares.
 */
import { Effect, Schema, Stream } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { outboundHttpClient, refusedAtConnect } from "../net/outbound-http.ts"
import { checkPublicUrl } from "../net/private-address.ts"

export const ReaderErrorReason = Schema.Literals([
  "invalid_url",
  "private_address",
  "too_many_redirects",
  "http_status",
  "network",
  "timeout",
  "too_large",
  "unsupported_content",
  "browser",
  "extraction"
])
export type ReaderErrorReason = typeof ReaderErrorReason.Type

export class ReaderError extends Schema.TaggedError<ReaderError>()("ReaderError", {
  url: Schema.String,
  reason: ReaderErrorReason,
  message: Schema.String,
  status: Schema.optionalKey(Schema.Int)
}) {}

export interface FetchOptions {
  readonly allowPrivate: boolean
  /** Origins ("http://10.0.0.5:8080") exempt from the private-address check. */
  readonly trustedOrigins: ReadonlyArray<string>
  readonly timeoutMs: number
  readonly maxBytes: number
  readonly maxRedirects: number
  readonly userAgent: string
}

export interface FetchedPage {
  /** After redirects. */
  readonly finalUrl: string
  readonly status: number
  /** Lower-case media type without parameters ("text/html"). */
  readonly mediaType: string
  readonly body: string
}

/** Refuses URLs that are not http(s) or that resolve to a private address (unless allowed or trusted). */
export const guardUrl = (url: string, options: Pick<FetchOptions, "allowPrivate" | "trustedOrigins">) =>
  Effect.suspend(() => {
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      return Effect.fail(new ReaderError({ url, reason: "invalid_url", message: `not a valid URL: ${url}` }))
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      return Effect.fail(new ReaderError({ url, reason: "invalid_url", message: `scheme ${parsed.protocol} is not allowed` }))
    }
    if (options.trustedOrigins.includes(parsed.origin)) return Effect.void
    return checkPublicUrl(url, options.allowPrivate).pipe(
      Effect.mapError((refused) => new ReaderError({ url, reason: "private_address", message: refused.message }))
    )
  })

const charsetOf = (contentType: string | undefined): string | undefined =>
  contentType?.match(/charset\s*=\s*"?([\w.:-]+)"?/i)?.[1]

/** The charset a document declares in its first bytes (BOM, `<meta charset>`, `http-equiv`). */
const sniffCharset = (bytes: Uint8Array): string | undefined => {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return "utf-8"
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return "utf-16le"
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return "utf-16be"
  const head = new TextDecoder("latin1").decode(bytes.subarray(0, 4096))
  return head.match(/<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i)?.[1]
}

export const decodeBody = (bytes: Uint8Array, contentType: string | undefined): string => {
  const label = charsetOf(contentType) ?? sniffCharset(bytes) ?? "utf-8"
  try {
    return new TextDecoder(label).decode(bytes)
  } catch {
    return new TextDecoder("utf-8").decode(bytes)
  }
}

const isRedirect = (status: number) => status === 301 || status === 302 || status === 303 || status === 307 || status === 308

/**
 * GETs the URL, following up to `maxRedirects` redirects by hand (each target checked before it
 * is requested). A non-2xx final status fails with reason `http_status`.
 */
export const fetchPage = (url: string, options: FetchOptions): Effect.Effect<FetchedPage, ReaderError> =>
  Effect.gen(function*() {
    const open = yield* outboundHttpClient(false)
    const guarded = options.allowPrivate ? open : yield* outboundHttpClient(true)
    let current = url
    for (let hop = 0; ; hop++) {
      yield* guardUrl(current, options)
      const requestUrl = current
      const client: HttpClient.HttpClient = options.trustedOrigins.includes(new URL(requestUrl).origin) ? open : guarded
      const response = yield* client.execute(
        HttpClientRequest.get(requestUrl).pipe(
          HttpClientRequest.setHeaders({
            "User-Agent": options.userAgent,
            Accept: "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5",
            "Accept-Language": "en-US,en;q=0.9"
          })
        )
      ).pipe(
        Effect.mapError((error) => {
          const refused = refusedAtConnect(error)
          return refused !== undefined
            ? new ReaderError({ url: requestUrl, reason: "private_address", message: refused.message })
            : new ReaderError({ url: requestUrl, reason: "network", message: error.message })
        })
      )
      if (isRedirect(response.status)) {
        const location = response.headers["location"]
        if (location === undefined || location === "") {
          return yield* new ReaderError({ url: requestUrl, reason: "http_status", status: response.status, message: `redirect without a Location from ${requestUrl}` })
        }
        if (hop >= options.maxRedirects) {
          return yield* new ReaderError({ url, reason: "too_many_redirects", message: `more than ${options.maxRedirects} redirects from ${url}` })
        }
        current = new URL(location, requestUrl).toString()
        continue
      }
      if (response.status < 200 || response.status >= 300) {
        return yield* new ReaderError({ url: requestUrl, reason: "http_status", status: response.status, message: `${requestUrl} answered HTTP ${response.status}` })
      }
      const declared = Number(response.headers["content-length"])
      if (Number.isFinite(declared) && declared > options.maxBytes) {
        return yield* new ReaderError({ url: requestUrl, reason: "too_large", message: `${requestUrl} is ${declared} bytes, more than ${options.maxBytes}` })
      }
      const chunks: Array<Uint8Array> = []
      let total = 0
      yield* response.stream.pipe(
        Stream.mapError((error) => new ReaderError({ url: requestUrl, reason: "network", message: error.message })),
        Stream.runForEach((chunk) => {
          total += chunk.byteLength
          if (total > options.maxBytes) {
            return Effect.fail(new ReaderError({ url: requestUrl, reason: "too_large", message: `${requestUrl} is more than ${options.maxBytes} bytes` }))
          }
          chunks.push(chunk)
          return Effect.void
        })
      )
      const bytes = new Uint8Array(total)
      let offset = 0
      for (const chunk of chunks) {
        bytes.set(chunk, offset)
        offset += chunk.byteLength
      }
      const contentType = response.headers["content-type"]
      return {
        finalUrl: requestUrl,
        status: response.status,
        mediaType: (contentType?.split(";", 1)[0] ?? "").trim().toLowerCase(),
        body: decodeBody(bytes, contentType)
      }
    }
  }).pipe(
    Effect.timeoutOrElse({
      duration: options.timeoutMs,
      orElse: () => Effect.fail(new ReaderError({ url, reason: "timeout", message: `fetching ${url} took more than ${options.timeoutMs} ms` }))
    }),
    // node:http does not follow redirects, so no hop escapes the check above.
    Effect.scoped
  )
