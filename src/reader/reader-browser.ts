/**
 * The browser the Reader uses, behind a small interface so it can run on the shared
 * `BrowserPool` (src/browser/pool.ts) in the application and on its own Chromium in benchmarks
 * or tools that have no pool.
 *
 * - `withPage(f)`: a fresh browser context and page per call (no cookies or storage shared
 *   between reads), closed afterwards.
 * - `withExtractionPage(f)`: one of a few long-lived pages whose every request is aborted, used
 *   to parse fetched HTML (inert, with DOMParser) and run the in-page extraction. Keeping them
 *   open with the extraction scripts installed makes an extraction one round trip.
 *
 * Layers: `layerFromPool` (the application: one Chromium per process, leased through
 * BrowserPool) and `layer` / `layerWith` (standalone: launches playwright-core Chromium itself,
 * once, on first use, and relaunches it if it died).
 */
import { Context, Effect, Exit, Layer, Schema, Scope, Semaphore } from "effect"
import type { Browser, Page } from "playwright-core"
import { playwright } from "../browser/playwright.ts"
import { chromiumArgs } from "../browser/pool.ts"
import { defaultSystemChromium } from "../browser/chromium-executable.ts"
import { BrowserCrashed, BrowserUnavailable } from "../browser/errors.ts"
import { BrowserPool } from "../browser/pool.ts"
import { withMethodSpans } from "../observability/spans.ts"

export class BrowserError extends Schema.TaggedError<BrowserError>()("BrowserError", {
  message: Schema.String
}) {}

export interface ReaderBrowserOptions {
  /**
   * Chromium binary; default /usr/bin/chromium. Not read from the environment: the service's
   * Reader runs on its BrowserPool (`layerFromPool`, which takes CHROMIUM_PATH from AppConfig);
   * tests and benches that want CHROMIUM_PATH pass it here.
   */
  readonly executablePath?: string | undefined
  /** Warm extraction pages (parallel extractions). Default 2. */
  readonly extractionPages?: number | undefined
}

export interface PageOptions {
  /** Page JavaScript (standalone browser only); default true. */
  readonly javaScriptEnabled?: boolean | undefined
  /** Passed to the pool's navigation guard; the Reader also checks every request itself. */
  readonly allowPrivateNetworks?: boolean | undefined
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
}

export interface ReaderBrowserService {
  readonly withPage: <A, E, R>(
    f: (page: Page) => Effect.Effect<A, E, R>,
    options?: PageOptions
  ) => Effect.Effect<A, E | BrowserError, R>
  readonly withExtractionPage: <A, E, R>(f: (page: Page) => Effect.Effect<A, E, R>) => Effect.Effect<A, E | BrowserError, R>
}


const USER_AGENT =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

const browserError = (what: string) => (cause: unknown) =>
  new BrowserError({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

const closeQuietly = (close: () => Promise<unknown>) => Effect.promise(() => close().catch(() => undefined))

/**
 * A small pool of warm extraction pages over any way of opening one. A page that failed or was
 * interrupted mid-use is dropped (it may still be busy), never reused.
 */
const makeExtractionPages = (
  size: number,
  open: Effect.Effect<{ readonly page: Page; readonly close: Effect.Effect<void> }, BrowserError>
) => {
  const idle: Array<{ readonly page: Page; readonly close: Effect.Effect<void> }> = []
  const slots = Semaphore.makeUnsafe(size)
  const take = Effect.suspend(() => {
    while (idle.length > 0) {
      const entry = idle.pop()!
      if (!entry.page.isClosed() && entry.page.context().browser()?.isConnected() !== false) return Effect.succeed(entry)
      Effect.runFork(entry.close)
    }
    return open
  })
  const withExtractionPage = <A, E, R>(f: (page: Page) => Effect.Effect<A, E, R>) =>
    slots.withPermits(1)(
      Effect.acquireUseRelease(
        take,
        (entry) => f(entry.page),
        (entry, exit) => Exit.isSuccess(exit) ? Effect.sync(() => void idle.push(entry)) : entry.close
      )
    )
  const closeAll = Effect.suspend(() => Effect.forEach(idle.splice(0, idle.length), (entry) => entry.close, { discard: true }))
  return { withExtractionPage, closeAll }
}

export class ReaderBrowser extends Context.Service<ReaderBrowser, ReaderBrowserService>()("wa/reader/ReaderBrowser") {
  /** Standalone: launches its own Chromium on first use and closes it with the layer's scope. */
  static readonly make = Effect.fnUntraced(function*(options: ReaderBrowserOptions = {}) {
    const executablePath = options.executablePath ?? defaultSystemChromium
    const layerScope = yield* Effect.scope

    let browser: Browser | undefined
    const launchLock = Semaphore.makeUnsafe(1)
    const getBrowser: Effect.Effect<Browser, BrowserError> = launchLock.withPermits(1)(
      Effect.suspend(() => {
        if (browser !== undefined && browser.isConnected()) return Effect.succeed(browser)
        return Effect.tryPromise({
          try: async () =>
            (await playwright()).chromium.launch({ executablePath, headless: true, args: [...chromiumArgs], handleSIGTERM: false, handleSIGINT: false, handleSIGHUP: false }),
          catch: browserError(`cannot launch Chromium at ${executablePath}`)
        }).pipe(Effect.tap((launched) => Effect.sync(() => (browser = launched))))
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
        (context) =>
          Effect.tryPromise({ try: () => context.newPage(), catch: browserError("cannot open a page") }).pipe(
            Effect.flatMap(f)
          ),
        (context) => closeQuietly(() => context.close())
      )

    const extraction = makeExtractionPages(
      Math.max(1, options.extractionPages ?? 2),
      Effect.flatMap(getBrowser, (b) =>
        Effect.tryPromise({
          try: async () => {
            // Page JavaScript off and every request aborted: only our evaluate calls run here.
            const context = await b.newContext({ javaScriptEnabled: false, serviceWorkers: "block" })
            await context.route("**", (route) => route.abort())
            const page = await context.newPage()
            return { page, close: closeQuietly(() => context.close()) }
          },
          catch: browserError("cannot open an extraction page")
        }))
    )

    yield* Scope.addFinalizer(
      layerScope,
      Effect.andThen(
        extraction.closeAll,
        Effect.suspend(() => {
          const open = browser
          browser = undefined
          return open === undefined ? Effect.void : closeQuietly(() => open.close())
        })
      )
    )

    return ReaderBrowser.of(withMethodSpans("ReaderBrowser", { withPage, withExtractionPage: extraction.withExtractionPage }))
  })

  /** On the shared BrowserPool: fresh leased contexts for reads, a few leased warm pages for extraction. */
  static readonly makeFromPool = Effect.fnUntraced(function*(options: Pick<ReaderBrowserOptions, "extractionPages"> = {}) {
    const pool = yield* BrowserPool
    const layerScope = yield* Effect.scope
    const fromPoolError = (error: { readonly message: string }) => new BrowserError({ message: error.message })

    const withPage = <A, E, R>(f: (page: Page) => Effect.Effect<A, E, R>, pageOptions: PageOptions = {}) =>
      pool.withEphemeralPage(f, {
        userAgent: USER_AGENT,
        ...(pageOptions.allowPrivateNetworks !== undefined ? { allowPrivateNetworks: pageOptions.allowPrivateNetworks } : {}),
        ...(pageOptions.allowedOrigins !== undefined ? { allowedOrigins: pageOptions.allowedOrigins } : {})
      }).pipe(
        Effect.mapError((error): E | BrowserError =>
          error instanceof BrowserUnavailable || error instanceof BrowserCrashed ? fromPoolError(error) : error as E
        )
      )

    const extraction = makeExtractionPages(
      Math.max(1, options.extractionPages ?? 2),
      Effect.gen(function*() {
        // Each warm page holds its lease in its own child scope, closed when the page is dropped.
        const scope = yield* Scope.fork(layerScope)
        const lease = yield* pool.acquireContext({ allowPrivateNetworks: true }).pipe(
          Scope.provide(scope),
          Effect.mapError(fromPoolError)
        )
        const page = lease.page()
        const close = Scope.close(scope, Exit.void)
        if (page === undefined) {
          yield* close
          return yield* new BrowserError({ message: "the extraction page closed before use" })
        }
        yield* Effect.tryPromise({ try: () => page.route("**", (route) => route.abort()), catch: browserError("cannot set up an extraction page") }).pipe(
          Effect.tapError(() => close)
        )
        return { page, close }
      })
    )
    yield* Scope.addFinalizer(layerScope, extraction.closeAll)

    return ReaderBrowser.of(withMethodSpans("ReaderBrowser", { withPage, withExtractionPage: extraction.withExtractionPage }))
  })

  /** Standalone Chromium with explicit options. */
  static readonly layerWith = (options: ReaderBrowserOptions = {}) => Layer.effect(ReaderBrowser, ReaderBrowser.make(options))

  /** Standalone Chromium at /usr/bin/chromium (tests and benches; `layerWith` names another binary). */
  static readonly layer = ReaderBrowser.layerWith()

  /** On the application's BrowserPool. */
  static readonly layerFromPool = Layer.effect(ReaderBrowser, ReaderBrowser.makeFromPool())
}
