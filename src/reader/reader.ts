/**
 * The Reader: URL in, main content out (title, Markdown, text). Every product uses it (search
 * summaries, research, track, the agent's read tools).
 *
 * 1. The URL is checked (http(s), public address unless WA_ALLOW_PRIVATE_NETWORKS) and looked up
 *    in a bounded cache with a time-to-live.
 * 2. It is fetched over HTTP, following redirects by hand and checking every hop.
 * 3. HTML is parsed inside an already-open Chromium page and Readability + Turndown run there.
 * 4. When that yields little text (an app shell that renders with JavaScript), or the server
 *    refuses plain HTTP clients (403/429/503), the page is loaded in a real browser page with
 *    JavaScript on; every request the page makes is checked the same way.
 *
 * Settings, read at start by AppConfig (src/config/config.ts) and taken from it by `Reader.layer`:
 * `WA_ALLOW_PRIVATE_NETWORKS` (false), `WA_READER_TIMEOUT_MS` (20000), `WA_READER_CACHE_SIZE`
 * (256 pages), `WA_READER_CACHE_TTL_SECONDS` (900), `WA_READER_MAX_BYTES` (5000000).
 */
import { Cache, Clock, Context, Duration, Effect, Exit, Layer } from "effect"
import { type AppConfigShape, AppConfig, readerDefaults } from "../config/config.ts"
import type { Page } from "playwright-core"
import { type Extracted, extractFromHtml, extractFromPage } from "./extract-in-page.ts"
import { fetchPage, type FetchOptions, guardUrl, ReaderError } from "./http-fetch.ts"
import { htmlText } from "./html-text.ts"
import { ReaderBrowser } from "./reader-browser.ts"
import { withMethodSpans } from "../observability/spans.ts"

export { ReaderError } from "./http-fetch.ts"

export interface ReadResult {
  /** The URL asked for. */
  readonly url: string
  /** The URL the content came from, after redirects. */
  readonly finalUrl: string
  readonly title: string
  readonly markdown: string
  readonly text: string
  readonly byline: string | null
  readonly excerpt: string | null
  readonly siteName: string | null
  readonly lang: string | null
  readonly publishedTime: string | null
  /** `http`: fetched and parsed without running page scripts; `browser`: rendered in Chromium. */
  readonly method: "http" | "browser"
  /** Media type of the fetched document ("text/html", "text/plain", ...). */
  readonly mediaType: string
  /** Epoch ms when it was read (older than now when served from the cache). */
  readonly fetchedAt: number
}

export interface ReaderSettings {
  readonly allowPrivate: boolean
  /** Origins exempt from the private-address check (an intranet the operator trusts; tests). */
  readonly trustedOrigins: ReadonlyArray<string>
  readonly timeoutMs: number
  readonly browserTimeoutMs: number
  readonly maxBytes: number
  readonly maxRedirects: number
  readonly cacheCapacity: number
  readonly cacheTtlMs: number
  /** Below this many characters of extracted text the browser fallback is tried. */
  readonly minTextChars: number
  readonly userAgent: string
}

export const defaultReaderSettings: ReaderSettings = {
  allowPrivate: false,
  trustedOrigins: [],
  timeoutMs: readerDefaults.timeoutMs,
  browserTimeoutMs: 30_000,
  maxBytes: readerDefaults.maxBytes,
  maxRedirects: 10,
  cacheCapacity: readerDefaults.cacheSize,
  cacheTtlMs: readerDefaults.cacheTtlSeconds * 1000,
  minTextChars: 250,
  userAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
}

/** The Reader settings of the application's config (AppConfig has read and validated them at start). */
export const readerSettingsFromConfig = (
  config: Pick<AppConfigShape, "allowPrivateNetworks" | "readerTimeoutMs" | "readerCacheSize" | "readerCacheTtlSeconds" | "readerMaxBytes">
): ReaderSettings => ({
  ...defaultReaderSettings,
  allowPrivate: config.allowPrivateNetworks,
  timeoutMs: config.readerTimeoutMs,
  cacheCapacity: config.readerCacheSize,
  cacheTtlMs: config.readerCacheTtlSeconds * 1000,
  maxBytes: config.readerMaxBytes
})

const htmlTypes = new Set(["text/html", "application/xhtml+xml", ""])
const textTypes = new Set(["text/plain", "text/markdown", "text/x-markdown"])
const codeTypes = new Set(["application/json", "application/ld+json", "text/csv", "application/xml", "text/xml"])

/** Statuses that often mean "not for plain HTTP clients" rather than "not there". */
const browserWorthyStatuses = new Set([401, 403, 429, 503])

/** A document whose text is its body (plain text, JSON, or text already extracted). */
const plainExtracted = (url: string, text: string): Extracted => ({
  title: text.trimStart().split("\n", 1)[0]?.slice(0, 200) || url,
  byline: null,
  excerpt: null,
  siteName: null,
  lang: null,
  publishedTime: null,
  markdown: text,
  text,
  method: "body"
})

const cacheKey = (url: string): string => {
  try {
    const parsed = new URL(url.trim())
    parsed.hash = ""
    return parsed.toString()
  } catch {
    return url.trim()
  }
}

export class Reader extends Context.Service<Reader, {
  /** Reads the page at `url` (from the cache when fresh). */
  readonly read: (url: string) => Effect.Effect<ReadResult, ReaderError>
  /**
   * Reads the page now (never from the cache) for change detection: HTTP first with a fast text
   * extraction (html-text.ts), the browser when the server refuses plain clients or the page
   * yields too little text without scripts.
   */
  readonly readFresh: (url: string) => Effect.Effect<ReadResult, ReaderError>
  /** Extracts already-fetched HTML as if it came from `url` (no network, no cache). */
  readonly extractHtml: (html: string, url: string) => Effect.Effect<ReadResult, ReaderError>
}>()("wa/reader/Reader") {
  static readonly make = Effect.fnUntraced(function*(overrides: Partial<ReaderSettings> = {}) {
    const settings: ReaderSettings = { ...defaultReaderSettings, ...overrides }
    const browser = yield* ReaderBrowser
    const fetchOptions: FetchOptions = {
      allowPrivate: settings.allowPrivate,
      trustedOrigins: settings.trustedOrigins.map((origin) => new URL(origin).origin),
      timeoutMs: settings.timeoutMs,
      maxBytes: settings.maxBytes,
      maxRedirects: settings.maxRedirects,
      userAgent: settings.userAgent
    }

    const toResult = (
      url: string,
      finalUrl: string,
      mediaType: string,
      method: "http" | "browser",
      extracted: Extracted,
      fetchedAt: number
    ): ReadResult => ({
      url,
      finalUrl,
      title: extracted.title,
      markdown: extracted.markdown,
      text: extracted.text,
      byline: extracted.byline,
      excerpt: extracted.excerpt,
      siteName: extracted.siteName,
      lang: extracted.lang,
      publishedTime: extracted.publishedTime,
      method,
      mediaType,
      fetchedAt
    })

    const extractionFailed = (url: string) => (error: { readonly message: string }) =>
      new ReaderError({ url, reason: "extraction", message: error.message })

    const extractStatic = (html: string, url: string) =>
      browser.withExtractionPage((page) =>
        extractFromHtml(page, html, url).pipe(
          Effect.mapError(extractionFailed(url)),
          // An interrupted extraction page is dropped, never reused (reader-browser.ts).
          Effect.timeoutOrElse({
            duration: settings.timeoutMs,
            orElse: () => Effect.fail(new ReaderError({ url, reason: "timeout", message: `extracting ${url} took more than ${settings.timeoutMs} ms` }))
          })
        )
      ).pipe(Effect.mapError((error) => error._tag === "BrowserError" ? extractionFailed(url)(error) : error))

    /**
     * Renders the page in a fresh browser context with JavaScript on and extracts it there.
     * Every request the page makes is checked before it leaves (route handler). Playwright does
     * not route redirect hops, so those are checked from the `request` event: a refused hop
     * fails the read and nothing of that page is extracted.
     */
    const renderInBrowser = (url: string) =>
      browser.withPage((page: Page) =>
        Effect.gen(function*() {
          const refusals: Array<Promise<ReaderError | undefined>> = []
          const verdict = (target: string) =>
            Effect.runPromise(Effect.match(guardUrl(target, fetchOptions), { onFailure: (error) => error, onSuccess: () => undefined }))
          page.on("request", (request) => {
            if (request.redirectedFrom() !== null) refusals.push(verdict(request.url()))
          })
          yield* Effect.tryPromise({
            try: () =>
              page.route("**", async (route) => {
                const request = route.request()
                const type = request.resourceType()
                if (type === "image" || type === "media" || type === "font") return route.abort()
                const target = request.url()
                if (target.startsWith("data:") || target.startsWith("blob:")) return route.fallback()
                return (await verdict(target)) === undefined ? route.fallback() : route.abort("blockedbyclient")
              }),
            catch: (cause) => new ReaderError({ url, reason: "browser", message: String(cause) })
          })
          const navigation = yield* Effect.tryPromise({
            try: () => page.goto(url, { waitUntil: "domcontentloaded", timeout: settings.browserTimeoutMs }),
            catch: (cause) =>
              new ReaderError({ url, reason: "browser", message: cause instanceof Error ? cause.message.split("\n", 1)[0]! : String(cause) })
          }).pipe(Effect.exit)
          const refused = (yield* Effect.promise(() => Promise.all(refusals))).find((error) => error !== undefined)
          if (refused !== undefined) return yield* refused
          if (Exit.isFailure(navigation)) return yield* Effect.failCause(navigation.cause)
          // Let client-side rendering settle; a page that keeps polling is read as it is.
          yield* Effect.promise(() => page.waitForLoadState("networkidle", { timeout: 5_000 }).catch(() => undefined))
          const late = (yield* Effect.promise(() => Promise.all(refusals))).find((error) => error !== undefined)
          if (late !== undefined) return yield* late
          const finalUrl = page.url()
          yield* guardUrl(finalUrl, fetchOptions)
          const extracted = yield* Effect.mapError(extractFromPage(page), extractionFailed(url))
          return { finalUrl, extracted }
        }), { allowPrivateNetworks: settings.allowPrivate, allowedOrigins: fetchOptions.trustedOrigins }).pipe(
        Effect.mapError((error) =>
          error._tag === "BrowserError" ? new ReaderError({ url, reason: "browser", message: error.message }) : error
        ),
        // Navigation has its own timeout; this bounds the whole render (settling, extraction).
        Effect.timeoutOrElse({
          duration: settings.browserTimeoutMs + 10_000,
          orElse: () => Effect.fail(new ReaderError({ url, reason: "timeout", message: `rendering ${url} took too long` }))
        })
      )

    /**
     * Fetches the page over HTTP; a server that refuses plain clients (403/429/503, ...) gets one
     * try with a real browser, else the original error. Either the fetched page or the rendered result.
     */
    const fetchOrRender = Effect.fnUntraced(function*(url: string) {
      yield* guardUrl(url, fetchOptions)
      const now = yield* Clock.currentTimeMillis
      const fetched = yield* fetchPage(url, fetchOptions).pipe(
        Effect.map((page) => ({ page, refused: undefined })),
        Effect.catchIf(
          (error) => error.reason === "http_status" && error.status !== undefined && browserWorthyStatuses.has(error.status),
          (refused) => Effect.succeed({ page: undefined, refused })
        )
      )
      if (fetched.page !== undefined) return { now, page: fetched.page } as const
      const browser = yield* Effect.mapError(renderInBrowser(url), () => fetched.refused!)
      return { now, page: undefined, rendered: toResult(url, browser.finalUrl, "text/html", "browser", browser.extracted, now) } as const
    })

    const readUncached = Effect.fnUntraced(function*(url: string) {
      const fetched = yield* fetchOrRender(url)
      if (fetched.page === undefined) return fetched.rendered
      const { now, page } = fetched
      if (textTypes.has(page.mediaType)) {
        const firstLine = page.body.trimStart().split("\n", 1)[0] ?? ""
        return toResult(url, page.finalUrl, page.mediaType, "http", {
          title: firstLine.replace(/^#+\s*/, "").slice(0, 200),
          byline: null,
          excerpt: null,
          siteName: null,
          lang: null,
          publishedTime: null,
          markdown: page.body,
          text: page.body,
          method: "body"
        }, now)
      }
      if (codeTypes.has(page.mediaType)) {
        return toResult(url, page.finalUrl, page.mediaType, "http", {
          title: page.finalUrl,
          byline: null,
          excerpt: null,
          siteName: null,
          lang: null,
          publishedTime: null,
          markdown: `\`\`\`${page.mediaType.includes("json") ? "json" : ""}\n${page.body}\n\`\`\``,
          text: page.body,
          method: "body"
        }, now)
      }
      if (!htmlTypes.has(page.mediaType)) {
        return yield* new ReaderError({ url, reason: "unsupported_content", message: `${page.finalUrl} is ${page.mediaType}, not a web page` })
      }
      const extracted = yield* extractStatic(page.body, page.finalUrl)
      if (extracted.text.length >= settings.minTextChars) {
        return toResult(url, page.finalUrl, page.mediaType, "http", extracted, now)
      }
      // Little text without scripts: the page needs JavaScript (or is simply short).
      const rendered = yield* Effect.option(renderInBrowser(page.finalUrl))
      if (rendered._tag === "Some" && rendered.value.extracted.text.length > extracted.text.length) {
        return toResult(url, rendered.value.finalUrl, page.mediaType, "browser", rendered.value.extracted, now)
      }
      return toResult(url, page.finalUrl, page.mediaType, "http", extracted, now)
    })

    // Failures are not kept (time-to-live 0), so a transient error is retried on the next read.
    const cache = yield* Cache.makeWith(readUncached, {
      capacity: settings.cacheCapacity,
      timeToLive: (exit) => Exit.isSuccess(exit) ? Duration.millis(settings.cacheTtlMs) : Duration.zero
    })

    const read = (url: string) => Cache.get(cache, cacheKey(url))

    const extractHtml = (html: string, url: string) =>
      Effect.flatMap(extractStatic(html, url), (extracted) =>
        Effect.map(Clock.currentTimeMillis, (now) => toResult(url, url, "text/html", "http", extracted, now)))

    const readFresh = Effect.fnUntraced(function*(url: string) {
      const fetched = yield* fetchOrRender(url)
      if (fetched.page === undefined) return fetched.rendered
      const { now, page } = fetched
      if (!htmlTypes.has(page.mediaType)) {
        if (textTypes.has(page.mediaType) || codeTypes.has(page.mediaType)) {
          return toResult(url, page.finalUrl, page.mediaType, "http", plainExtracted(page.finalUrl, page.body), now)
        }
        return yield* new ReaderError({ url, reason: "unsupported_content", message: `${page.finalUrl} is ${page.mediaType}, not a web page` })
      }
      const { title, text } = htmlText(page.body)
      if (text.length < settings.minTextChars && /<script\b/i.test(page.body)) {
        // Little text and scripts: an app shell; what the browser renders is the content.
        const rendered = yield* Effect.option(renderInBrowser(page.finalUrl))
        if (rendered._tag === "Some" && rendered.value.extracted.text.length > text.length) {
          return toResult(url, rendered.value.finalUrl, page.mediaType, "browser", rendered.value.extracted, now)
        }
      }
      return toResult(url, page.finalUrl, page.mediaType, "http", { ...plainExtracted(page.finalUrl, text), title }, now)
    })

    return Reader.of(withMethodSpans("Reader", { read, readFresh, extractHtml }))
  })

  /** With explicit settings (tests, embedding); needs a ReaderBrowser. */
  static readonly layerWith = (settings: Partial<ReaderSettings> = {}) => Layer.effect(Reader, Reader.make(settings))

  /** Settings from the application's AppConfig; needs a ReaderBrowser. */
  static readonly layer = Layer.effect(
    Reader,
    Effect.gen(function*() {
      return yield* Reader.make(readerSettingsFromConfig(yield* AppConfig))
    })
  )
}
