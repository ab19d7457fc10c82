/**
 * The browser the Reader uses: one headless Chromium (playwright-core, system binary) kept open
 * for the service's lifetime, launched on first use and relaunched if it dies.
 *
 * - `withPage(f)`: a fresh browser context and page per call (no cookies or storage shared
 *   between reads), closed afterwards.
 * - `withExtractionPage(f)`: one of a few long-lived pages with page JavaScript disabled and
 *   every request aborted, used to parse fetched HTML and run the in-page extraction. Keeping
 *   them open (with the extraction scripts installed) makes an extraction one round trip.
 *
 * TODO: move onto `BrowserPool` (src/browser/pool.ts, `withEphemeralPage`) once it exists, so the
 * service runs one Chromium per runner; keep the warm extraction pages as a small pool there.
 */
import { Context, Effect, Layer, Schema, Scope, Semaphore } from "effect"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"

export class BrowserError extends Schema.TaggedError<BrowserError>()("BrowserError", {
  message: Schema.String
}) {}

export interface ReaderBrowserOptions {
  /** Chromium binary; default CHROMIUM_PATH, else /usr/bin/chromium. */
  readonly executablePath?: string | undefined
  /** Warm extraction pages (parallel extractions). Default 2. */
  readonly extractionPages?: number | undefined
}

export interface PageOptions {
  /** Page JavaScript; default true (the fallback exists for pages that need it). */
  readonly javaScriptEnabled?: boolean | undefined
}

export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync"
]

const USER_AGENT =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

const browserError = (what: string) => (cause: unknown) =>
  new BrowserError({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

export class ReaderBrowser extends Context.Service<ReaderBrowser, {
  readonly withPage: <A, E, R>(
    f: (page: Page) => Effect.Effect<A, E, R>,
    options?: PageOptions
  ) => Effect.Effect<A, E | BrowserError, R>
  readonly withExtractionPage: <A, E, R>(f: (page: Page) => Effect.Effect<A, E, R>) => Effect.Effect<A, E | BrowserError, R>
}>()("wa/reader/ReaderBrowser") {
  static readonly make = Effect.fnUntraced(function*(options: ReaderBrowserOptions = {}) {
    const executablePath = options.executablePath ?? process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
    const extractionPages = Math.max(1, options.extractionPages ?? 2)
    const layerScope = yield* Effect.scope

    let browser: Browser | undefined
    const launchLock = Semaphore.makeUnsafe(1)
    const getBrowser: Effect.Effect<Browser, BrowserError> = launchLock.withPermits(1)(
      Effect.suspend(() => {
        if (browser !== undefined && browser.isConnected()) return Effect.succeed(browser)
        return Effect.tryPromise({
          try: () => chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS }),
          catch: browserError(`cannot launch Chromium at ${executablePath}`)
        }).pipe(Effect.tap((launched) => Effect.sync(() => (browser = launched))))
      })
    )
    yield* Scope.addFinalizer(
      layerScope,
      Effect.promise(async () => {
        const open = browser
        browser = undefined
        await open?.close().catch(() => undefined)
      })
    )

    const withPage = <A, E, R>(f: (page: Page) => Effect.Effect<A, E, R>, pageOptions: PageOptions = {}) =>
      Effect.acquireUseRelease(
        Effect.flatMap(getBrowser, (b) =>
          Effect.tryPromise({
            try: () =>
              b.newContext({
                javaScriptEnabled: pageOptions.javaScriptEnabled ?? true,
                serviceWorkers: "block",
                userAgent: USER_AGENT,
                viewport: { width: 1280, height: 900 }
              }),
            catch: browserError("cannot open a browser context")
          })),
        (context: BrowserContext) =>
          Effect.tryPromise({ try: () => context.newPage(), catch: browserError("cannot open a page") }).pipe(
            Effect.flatMap(f)
          ),
        (context) => Effect.promise(() => context.close().catch(() => undefined))
      )

    // Warm extraction pages: JavaScript off, every request aborted.
    const idle: Array<Page> = []
    const extractionSlots = Semaphore.makeUnsafe(extractionPages)
    const openExtractionPage = Effect.flatMap(getBrowser, (b) =>
      Effect.tryPromise({
        try: async () => {
          const context = await b.newContext({ javaScriptEnabled: false, serviceWorkers: "block" })
          await context.route("**", (route) => route.abort())
          return context.newPage()
        },
        catch: browserError("cannot open an extraction page")
      }))
    const takeExtractionPage = Effect.suspend(() => {
      while (idle.length > 0) {
        const page = idle.pop()!
        if (!page.isClosed() && page.context().browser()?.isConnected() === true) return Effect.succeed(page)
      }
      return openExtractionPage
    })
    const withExtractionPage = <A, E, R>(f: (page: Page) => Effect.Effect<A, E, R>) =>
      extractionSlots.withPermits(1)(
        Effect.acquireUseRelease(
          takeExtractionPage,
          f,
          (page, exit) =>
            exit._tag === "Success"
              ? Effect.sync(() => void idle.push(page))
              // A failed or interrupted extraction may have left the page busy: drop it.
              : Effect.promise(() => page.context().close().catch(() => undefined))
        )
      )

    return ReaderBrowser.of({ withPage, withExtractionPage })
  })

  /** Launches Chromium on first use; closes it when the layer's scope closes. */
  static readonly layerWith = (options: ReaderBrowserOptions = {}) => Layer.effect(ReaderBrowser, ReaderBrowser.make(options))

  static readonly layer = ReaderBrowser.layerWith()
}
