/**
 * BrowserPool: one supervised Chromium per process, leased out as isolated browser contexts.
 *
 * - The browser is started lazily at the first lease (a missing binary is a clear error there,
 *   not a crash at start-up) and relaunched at the next lease after it died.
 * - A lease remembers the browser it was made on; when that browser disconnects, every pending
 *   and later operation of the lease fails with BrowserCrashed instead of hanging.
 * - All mutable state (current browser, counters) lives in the service instance.
 */
import { Context, Deferred, Effect, Layer, Metric, Option, type Scope, Semaphore } from "effect"
import { access, constants } from "node:fs/promises"
import type { Browser, BrowserContext, BrowserContextOptions, Page } from "playwright-core"
import { isPlaywrightTimeout, playwright } from "./playwright.ts"
import { ActionFailed, ActionTimeout, BrowserCrashed, type BrowserError, BrowserUnavailable, NavigationRefused } from "./errors.ts"
import { AppConfig } from "../config/config.ts"
import { type LocalChromium, selectChromium } from "./chromium-executable.ts"
import { type EgressProxy, startEgressProxy } from "./egress-proxy.ts"
import { installSettleTracker } from "./page-script.ts"
import { installNavigationGuard, type NavigationGuard } from "./guard.ts"
import { type BrowserCgroup, makeBrowserCgroup, removeStaleBrowserCgroups } from "./cpu-weight.ts"
import { withMethodSpans } from "../observability/spans.ts"

/** Flags that let Chromium run headless as root in a Debian container and stay quiet on the network. */
export const chromiumArgs: ReadonlyArray<string> = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
  "--disable-quic"
]

/**
 * Metric descriptors (their values live in the runtime's MetricRegistry, not in this module);
 * `stats` gives the same figures as plain numbers.
 */
export const browserMetrics = {
  contextsLeased: Metric.counter("wa_browser_contexts_leased_total", { description: "Browser contexts leased", incremental: true }),
  contextsOpen: Metric.gauge("wa_browser_contexts_open", { description: "Browser contexts currently open" }),
  launches: Metric.counter("wa_browser_launches_total", { description: "Browser launches or CDP connections", incremental: true }),
  restarts: Metric.counter("wa_browser_restarts_total", { description: "Browser relaunches after the browser died", incremental: true })
}

export interface BrowserPoolConfig {
  /** Chromium binary to launch (ignored when `cdpUrl` or `chromium` is set). */
  readonly executablePath: string
  /** The selected local browser (chromium-executable.ts): prepared at the first launch, logged with its source. */
  readonly chromium?: LocalChromium | undefined
  /**
   * Picks the local browser at the first launch instead (when `chromium` is not given): looking in
   * Playwright's browser cache loads playwright-core, which `serve` does not need to be ready.
   */
  readonly selectChromium?: (() => Promise<LocalChromium>) | undefined
  /** Connect to this remote browser over CDP instead of launching one. */
  readonly cdpUrl?: string | undefined
  /** Default of `LeaseOptions.allowPrivateNetworks`. */
  readonly allowPrivateNetworks: boolean
  readonly launchTimeoutMs?: number | undefined
  /**
   * Keep contexts opened ahead (WA_BROWSER_WARM_CONTEXT, default on; never with `cdpUrl`, whose
   * provider may count contexts): a lease with the default options takes one at once instead of
   * waiting for a new context, its guard and its first tab (100–1500 ms, more under load).
   */
  readonly warmContext?: boolean | undefined
  /**
   * How many (WA_BROWSER_WARM_CONTEXTS, default 1): as many as the sessions a burst starts at once
   * lets each of them start without opening a renderer, at 20–40 MB of memory per context kept.
   */
  readonly warmContexts?: number | undefined
  /**
   * CPU weight of the local browser's process tree against the service (WA_BROWSER_CPU_WEIGHT,
   * cgroup v2 units: the service has 100; default 25; 0 = off), through a cgroup of its own when
   * the machine lets the service make one (cpu-weight.ts). Never with `cdpUrl`. Undefined: none
   * (the pool the service builds from AppConfig always passes the configured value).
   */
  readonly cpuWeight?: number | undefined
}

export interface LeaseOptions {
  readonly storageState?: BrowserContextOptions["storageState"]
  readonly userAgent?: string
  readonly viewport?: { readonly width: number; readonly height: number }
  /** Overrides the pool default (WA_ALLOW_PRIVATE_NETWORKS) for this lease. */
  readonly allowPrivateNetworks?: boolean
  /** Origins exempt from the navigation guard even when private (see guard.ts). */
  readonly allowedOrigins?: ReadonlyArray<string>
}

/** One leased browser context and the tab the agent is working in. */
export interface ContextLease {
  readonly id: number
  readonly context: BrowserContext
  readonly allowPrivateNetworks: boolean
  readonly guard: NavigationGuard
  /** The tab actions apply to (falls back to the newest open tab when it was closed). */
  readonly page: () => Page | undefined
  /** Open tabs in opening order. */
  readonly pages: () => ReadonlyArray<Page>
  readonly setActivePage: (page: Page) => void
  /**
   * JavaScript dialogs (alert, confirm, prompt, beforeunload) shown since the last call. They
   * are accepted at once so the page never blocks; the agent is told what they said.
   */
  readonly takeDialogs: () => ReadonlyArray<string>
  /** Refused iframes and connections the egress proxy refused (sub-resources, redirect hops) since the last call. */
  readonly takeBlockedConnections: () => ReadonlyArray<NavigationRefused>
  /** True once the browser behind this lease has gone away. */
  readonly crashed: () => boolean
  /** Completes when the browser behind this lease disconnects (interruptible waits, no leak per action). */
  readonly crashSignal: Deferred.Deferred<void>
  /**
   * True while `page` is the blank tab the pool opened for this lease and nothing has happened to
   * it yet: no operation through the lease but observations (`attempt` calls `touch`), no
   * navigation, load (page.setContent fires one) or new frame in it, no popup, no other tab in the
   * context. Its observation is known without asking the page (observe.ts).
   */
  readonly untouchedBlankTab: (page: Page) => boolean
  /** Ends `untouchedBlankTab` for good (any operation on the lease's pages). */
  readonly touch: () => void
}

interface OpenedContext {
  readonly context: BrowserContext
  readonly guard: NavigationGuard
  readonly page: Page
  readonly proxy: EgressProxy | undefined
  readonly blocked: Array<NavigationRefused>
}

export interface PoolStats {
  /** Contexts handed out since start. */
  readonly contextsLeased: number
  /** Contexts currently open. */
  readonly contextsOpen: number
  /** Contexts opened ahead and ready for the next leases (BrowserPoolConfig.warmContexts). */
  readonly contextsWarm: number
  /** Browser launches (or CDP connections), the first included. */
  readonly browserLaunches: number
  /** Launches that replaced a browser which had died. */
  readonly browserRestarts: number
}

export class BrowserPool extends Context.Service<BrowserPool, {
  /** A fresh isolated context with one blank tab; closed when the scope closes. */
  readonly acquireContext: (options?: LeaseOptions) => Effect.Effect<ContextLease, BrowserError, Scope.Scope>
  /** Runs `f` on a fresh context + page that is closed afterwards. */
  readonly withEphemeralPage: <A, E, R>(
    f: (page: Page) => Effect.Effect<A, E, R>,
    options?: LeaseOptions
  ) => Effect.Effect<A, E | BrowserError, R>
  readonly stats: Effect.Effect<PoolStats>
  /** The live browser, if one is running (diagnostics). */
  readonly currentBrowser: Effect.Effect<Option.Option<Browser>>
}>()("web-agent-service/browser/BrowserPool") {
  /**
   * Pool configured from the application's AppConfig (CHROMIUM_PATH, WA_BROWSER, WA_BROWSER_CDP_URL,
   * WA_DATA_DIR, WA_ALLOW_PRIVATE_NETWORKS, WA_BROWSER_WARM_CONTEXT(S), WA_BROWSER_CPU_WEIGHT; validated
   * at start). Benchmarks and tools without a service provide `AppConfig.layer` to it.
   */
  static readonly layerFromAppConfig = Layer.effect(
    BrowserPool,
    Effect.gen(function*() {
      const app = yield* AppConfig
      const cdpUrl = Option.getOrUndefined(app.browserCdpUrl)
      return yield* makeBrowserPool({
        executablePath: "",
        selectChromium: () => selectChromium({ explicitPath: Option.getOrUndefined(app.chromiumPath), choice: app.browser, dataDir: app.dataDirAbsolute }),
        cdpUrl,
        allowPrivateNetworks: app.allowPrivateNetworks,
        warmContext: app.browserWarmContext,
        warmContexts: app.browserWarmContexts,
        cpuWeight: app.browserCpuWeight
      })
    })
  )

  static readonly layerWith = (config: BrowserPoolConfig) => Layer.effect(BrowserPool, makeBrowserPool(config))
}

const fileExists = (path: string): Promise<boolean> => access(path, constants.X_OK).then(() => true, () => false)

/** Where a remote browser is, without credentials a CDP URL may carry in its path or query. */
const cdpEndpointForLog = (cdpUrl: string): string => {
  try {
    const url = new URL(cdpUrl)
    return `${url.protocol}//${url.host}`
  } catch {
    return "(unparsable URL)"
  }
}

const closeQuietly = (f: () => Promise<unknown>, timeoutMs: number) =>
  Effect.promise(() =>
    Promise.race([
      f().catch(() => undefined),
      new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())
    ])
  )

export const makeBrowserPool = Effect.fnUntraced(function*(config: BrowserPoolConfig) {
  const launchTimeoutMs = config.launchTimeoutMs ?? 30_000
  const lock = yield* Semaphore.make(1)
  const state = {
    browser: undefined as Browser | undefined,
    shuttingDown: false,
    nextLeaseId: 1,
    contextsLeased: 0,
    contextsOpen: 0,
    browserLaunches: 0,
    browserRestarts: 0,
    /** The local browser's cgroup (cpu-weight.ts), made at its first launch; undefined when there is none. */
    cgroup: undefined as BrowserCgroup | undefined,
    cpuWeightTried: false
  }
  const cpuWeight = config.cpuWeight ?? 0

  // What a service killed before it could clean up left behind (its browser's cgroup and whatever
  // still runs in it, its launcher); our own cgroup is removed after the browser closed (the
  // finalizers run in reverse: spares, browser, then this).
  const stale = yield* Effect.promise(() => removeStaleBrowserCgroups())
  if (stale.length > 0) yield* Effect.logInfo("removed what a stopped service's browser left").pipe(Effect.annotateLogs({ removed: stale.join(", ") }))
  yield* Effect.addFinalizer(() =>
    Effect.suspend(() => {
      const cgroup = state.cgroup
      state.cgroup = undefined
      return cgroup === undefined ? Effect.void : Effect.tryPromise(() => cgroup.remove()).pipe(
        Effect.catch((error) => Effect.logWarning("could not remove the browser's cgroup").pipe(Effect.annotateLogs({ cgroup: cgroup.path, error: String(error) })))
      )
    })
  )

  /**
   * The local browser's cgroup at its first launch, and the one line saying what the browser's
   * CPU weight is (a cgroup, or why none).
   */
  const browserCgroup = Effect.gen(function*() {
    if (state.cpuWeightTried) return state.cgroup
    state.cpuWeightTried = true
    if (config.cdpUrl !== undefined) {
      yield* Effect.logInfo("browser CPU weight not applied").pipe(Effect.annotateLogs({ reason: "a remote browser (WA_BROWSER_CDP_URL)" }))
      return undefined
    }
    const placement = yield* Effect.promise(() => makeBrowserCgroup(cpuWeight))
    if (placement._tag === "None") {
      yield* Effect.logInfo("browser CPU weight not applied").pipe(Effect.annotateLogs({ reason: placement.reason }))
      return undefined
    }
    state.cgroup = placement.cgroup
    return placement.cgroup
  })

  const configured: LocalChromium = {
    source: "configured",
    executablePath: config.executablePath,
    prepare: () => Promise.resolve({ executablePath: config.executablePath, env: {}, details: {} })
  }
  // Chosen once, at the first launch (see BrowserPoolConfig.selectChromium).
  let selected: Promise<LocalChromium> | undefined
  const localChromium = Effect.promise(() =>
    selected ??= config.chromium !== undefined
      ? Promise.resolve(config.chromium)
      : config.selectChromium !== undefined
      ? config.selectChromium()
      : Promise.resolve(configured)
  )

  /** The local binary, ready to launch (the bundled one is unpacked at its first launch). */
  const prepareLocal = Effect.gen(function*() {
    const local = yield* localChromium
    if (local.source !== "bundled" && !(yield* Effect.promise(() => fileExists(local.executablePath)))) {
      const why = local.reason !== undefined ? `; ${local.reason}` : ""
      return yield* new BrowserUnavailable({
        message: `Chromium not found or not executable at ${local.executablePath} (set CHROMIUM_PATH or WA_BROWSER_CDP_URL${why})`
      })
    }
    return yield* Effect.tryPromise({
      try: () => local.prepare(),
      catch: (cause) =>
        new BrowserUnavailable({
          message: `could not prepare the ${local.source} Chromium: ${cause instanceof Error ? cause.message : String(cause)}`
        })
    })
  })

  const start = Effect.gen(function*() {
    const prepared = config.cdpUrl === undefined ? yield* prepareLocal : undefined
    const local = config.cdpUrl === undefined ? yield* localChromium : configured
    const executablePath = prepared?.executablePath ?? config.executablePath
    // Started through its cgroup's launcher, the browser's whole process tree is in the cgroup.
    let cgroup = yield* browserCgroup
    let launchPath = executablePath
    if (cgroup !== undefined) {
      const launcher = yield* Effect.promise(() => cgroup!.launcher(executablePath).then((path) => ({ path }), (error: unknown) => ({ error: String(error) })))
      if ("path" in launcher) launchPath = launcher.path
      else {
        yield* Effect.promise(() => cgroup!.remove().catch(() => undefined))
        state.cgroup = cgroup = undefined
        yield* Effect.logInfo("browser CPU weight not applied").pipe(Effect.annotateLogs({ reason: `its launcher cannot run: ${launcher.error}` }))
      }
    }
    const browser = yield* Effect.tryPromise({
      try: async () => {
        const { chromium } = await playwright()
        return config.cdpUrl !== undefined
          ? chromium.connectOverCDP(config.cdpUrl, { timeout: launchTimeoutMs })
          : chromium.launch({
            executablePath: launchPath,
            ...(prepared !== undefined && Object.keys(prepared.env).length > 0 ? { env: { ...process.env, ...prepared.env } } : {}),
            headless: true,
            // The pool's own flags for every binary, the bundled one included: @sparticuz/chromium's
            // recommended `args` are for one-shot Lambda functions (--single-process, --no-zygote,
            // --disable-web-security, site isolation off), wrong for a long-lived shared browser.
            args: [...chromiumArgs],
            timeout: launchTimeoutMs,
            // Playwright would kill Chromium on the first signal; the service closes it itself,
            // after the drain has let the runs in flight finish (src/cluster/lifecycle.ts).
            handleSIGTERM: false,
            handleSIGINT: false,
            handleSIGHUP: false
          })
      },
      catch: (cause) =>
        new BrowserUnavailable({
          message: config.cdpUrl !== undefined
            ? `could not connect to the browser at ${config.cdpUrl}: ${String(cause)}`
            : `could not launch Chromium at ${executablePath}: ${String(cause)}`
        })
    })
    // One line naming the browser in use and where it came from.
    yield* Effect.logInfo(state.browserLaunches === 0 ? "browser launched" : "browser relaunched").pipe(
      Effect.annotateLogs(
        config.cdpUrl !== undefined
          ? { browser_source: "cdp", cdp_endpoint: cdpEndpointForLog(config.cdpUrl), browser_version: browser.version() }
          : {
            browser_source: local.source,
            executable: executablePath,
            browser_version: browser.version(),
            ...(local.reason !== undefined ? { reason: local.reason } : {}),
            ...prepared?.details
          }
      )
    )
    if (cgroup !== undefined && state.browserLaunches === 0) {
      const pids = yield* Effect.promise(() => cgroup!.pids())
      yield* Effect.logInfo("browser CPU weight applied").pipe(Effect.annotateLogs({
        cgroup: cgroup.path,
        cgroup_version: cgroup.version,
        cpu_weight: cgroup.weight,
        setting: cgroup.setting,
        browser_processes: pids.length
      }))
    }
    if (state.browserLaunches > 0) {
      state.browserRestarts++
      yield* Metric.update(browserMetrics.restarts, 1)
    }
    state.browserLaunches++
    yield* Metric.update(browserMetrics.launches, 1)
    state.browser = browser
    browser.on("disconnected", () => {
      if (state.browser === browser) state.browser = undefined
    })
    return browser
  })

  /** The live browser, (re)started under a lock so concurrent leases share one launch. */
  const liveBrowser = lock.withPermit(Effect.suspend(() => {
    if (state.shuttingDown) return Effect.fail(new BrowserUnavailable({ message: "the browser pool is shutting down" }))
    const current = state.browser
    return current !== undefined && current.isConnected() ? Effect.succeed(current) : start
  }))

  yield* Effect.addFinalizer(() =>
    Effect.suspend(() => {
      state.shuttingDown = true
      const browser = state.browser
      state.browser = undefined
      return browser === undefined ? Effect.void : closeQuietly(() => browser.close(), 10_000)
    })
  )

  /** A new context with its egress proxy (when needed), navigation guard and first tab. */
  const openContext = async (browser: Browser, options: LeaseOptions, allowPrivateNetworks: boolean): Promise<OpenedContext> => {
    // Private networks refused and a local browser: all traffic goes through an egress proxy
    // that checks each connection (redirect hops included), see egress-proxy.ts.
    // Connections the proxy refused: sub-resources and redirect hops. They do not fail an
    // action by themselves (a public page may embed a private image); navigations refused
    // are reported by the guard, which watches documents and their redirect hops.
    const blocked: Array<NavigationRefused> = []
    const proxy = allowPrivateNetworks || config.cdpUrl !== undefined
      ? undefined
      : await startEgressProxy({ allowedOrigins: options.allowedOrigins, onRefused: (r) => blocked.push(r) })
    try {
      const context = await browser.newContext({
        ...(options.storageState !== undefined ? { storageState: options.storageState } : {}),
        ...(options.userAgent !== undefined ? { userAgent: options.userAgent } : {}),
        ...(proxy !== undefined ? { proxy: { server: proxy.server } } : {}),
        viewport: options.viewport ?? { width: 1280, height: 800 },
        // Downloads are kept (a session with a workspace saves them there, see agent/file-tools.ts).
        acceptDownloads: true
      })
      try {
        const guard = await installNavigationGuard(context, {
          allowPrivateNetworks,
          allowedOrigins: options.allowedOrigins,
          egressProxy: proxy !== undefined
        })
        // Every document gets the settle tracker the actions wait on (page-script.ts), from the
        // start: installed here it costs the first action nothing.
        await context.addInitScript(installSettleTracker)
        const page = await context.newPage()
        // The first tab's redirect-hop watch (guard.ts) is in place before the lease is handed out.
        await guard.ready()
        return { context, guard, page, proxy, blocked }
      } catch (error) {
        await context.close().catch(() => undefined)
        throw error
      }
    } catch (error) {
      await proxy?.close()
      throw error
    }
  }
  const closeOpened = async (opened: OpenedContext) => {
    await opened.context.close().catch(() => undefined)
    await opened.proxy?.close().catch(() => undefined)
  }

  // The warm spares (BrowserPoolConfig.warmContext, warmContexts): opened with the default
  // options, one at a time so that refilling never competes with the sessions that took them
  // for more than one context's worth of CPU, for the browser they were opened in; a spare of a
  // browser that has gone is dropped.
  const warmTarget = (config.warmContext ?? true) && config.cdpUrl === undefined ? Math.max(0, config.warmContexts ?? 1) : 0
  const spares: Array<{ readonly browser: Browser; readonly opened: Promise<OpenedContext | undefined>; ready: boolean }> = []
  let refilling = false
  const isPlain = (options: LeaseOptions) =>
    options.storageState === undefined && options.userAgent === undefined && options.viewport === undefined &&
    options.allowedOrigins === undefined && (options.allowPrivateNetworks ?? config.allowPrivateNetworks) === config.allowPrivateNetworks
  const takeSpare = async (browser: Browser): Promise<OpenedContext | undefined> => {
    for (let taken = spares.shift(); taken !== undefined; taken = spares.shift()) {
      // A spare of a browser that has gone is never waited for (its opening may hang with it).
      if (taken.browser !== browser || !taken.browser.isConnected()) {
        void taken.opened.then((opened) => opened?.proxy?.close())
        continue
      }
      const opened = await taken.opened
      if (opened === undefined) continue
      if (!browser.isConnected() || opened.page.isClosed()) {
        await closeOpened(opened)
        continue
      }
      return opened
    }
    return undefined
  }
  const refillSpares = (browser: Browser) => {
    if (refilling || spares.length >= warmTarget || state.shuttingDown || !browser.isConnected()) return
    refilling = true
    const opened = openContext(browser, {}, config.allowPrivateNetworks).catch(() => undefined)
    const spare = { browser, opened, ready: false }
    spares.push(spare)
    // The next one once this one is open; a failed opening stops here until the next lease.
    void opened.then((done) => {
      refilling = false
      spare.ready = done !== undefined
      if (done !== undefined) refillSpares(browser)
    })
  }
  yield* Effect.addFinalizer(() =>
    Effect.promise(async () => {
      state.shuttingDown = true
      const left = spares.splice(0)
      for (const spare of left) {
        const opened = await spare.opened
        if (opened !== undefined) await closeOpened(opened)
      }
    })
  )

  const openLease = Effect.fnUntraced(function*(options: LeaseOptions) {
    const browser = yield* liveBrowser
    const allowPrivateNetworks = options.allowPrivateNetworks ?? config.allowPrivateNetworks
    const crash = Deferred.makeUnsafe<void>()
    let crashed = !browser.isConnected()
    const onDisconnect = () => {
      crashed = true
      Deferred.doneUnsafe(crash, Effect.void)
    }
    browser.once("disconnected", onDisconnect)
    if (crashed) Deferred.doneUnsafe(crash, Effect.void)

    const created = yield* Effect.tryPromise({
      // The signal is aborted when the opening times out or is interrupted: whatever was
      // opened by then is closed instead of leaking.
      try: async (signal) => {
        const warm = isPlain(options) ? await takeSpare(browser) : undefined
        const opened = warm ?? await openContext(browser, options, allowPrivateNetworks)
        refillSpares(browser)
        if (signal.aborted) {
          await closeOpened(opened)
          throw new Error("opening the context was abandoned")
        }
        return opened
      },
      catch: (cause) =>
        !browser.isConnected()
          ? new BrowserCrashed({ message: `the browser died while opening a context: ${String(cause)}` })
          : new BrowserUnavailable({ message: `could not open a browser context: ${String(cause)}` })
    }).pipe(
      Effect.timeoutOrElse({
        duration: launchTimeoutMs,
        orElse: () => Effect.fail(new BrowserUnavailable({ message: `opening a browser context took over ${launchTimeoutMs} ms` }))
      }),
      Effect.tapError(() => Effect.sync(() => browser.off("disconnected", onDisconnect)))
    )

    const { context, guard, proxy, blocked } = created
    let active: Page | undefined = created.page
    const dialogs: Array<string> = []
    const acceptDialogs = (page: Page) =>
      page.on("dialog", (dialog) => {
        dialogs.push(`${dialog.type()} ${JSON.stringify(dialog.message().slice(0, 200))}`)
        dialog.accept().catch(() => undefined)
      })
    acceptDialogs(created.page)
    context.on("page", acceptDialogs)
    // The blank first tab, until anything happens to it or in its context (ContextLease.untouchedBlankTab).
    let blankTab: Page | undefined = created.page
    const blankTabEvents = ["framenavigated", "frameattached", "domcontentloaded", "load", "popup", "close"] as const
    const touch = () => {
      const page = blankTab
      if (page === undefined) return
      blankTab = undefined
      for (const event of blankTabEvents) page.off(event as "load", touch)
      context.off("page", touch)
    }
    if (created.page.url() === "about:blank" && created.page.mainFrame().childFrames().length === 0 && context.pages().length === 1) {
      for (const event of blankTabEvents) created.page.on(event as "load", touch)
      context.on("page", touch)
    } else {
      blankTab = undefined
    }
    const lease: ContextLease = {
      id: state.nextLeaseId++,
      context,
      allowPrivateNetworks,
      guard,
      page: () => {
        if (active !== undefined && !active.isClosed()) return active
        const open = context.pages().filter((p) => !p.isClosed())
        active = open.at(-1)
        return active
      },
      pages: () => context.pages().filter((p) => !p.isClosed()),
      setActivePage: (page) => {
        active = page
      },
      takeDialogs: () => dialogs.splice(0, dialogs.length),
      takeBlockedConnections: () => [...guard.takeBlockedFrames(), ...blocked.splice(0, blocked.length)],
      crashed: () => crashed,
      crashSignal: crash,
      untouchedBlankTab: (page) => page === blankTab && !crashed,
      touch
    }
    state.contextsLeased++
    state.contextsOpen++
    yield* Metric.update(browserMetrics.contextsLeased, 1)
    yield* Metric.update(browserMetrics.contextsOpen, state.contextsOpen)
    return { lease, proxy, release: () => browser.off("disconnected", onDisconnect) }
  })

  const acquireContext = (options: LeaseOptions = {}) =>
    Effect.acquireRelease(
      openLease(options),
      ({ lease, proxy, release }) =>
        Effect.suspend(() => {
          state.contextsOpen--
          release()
          const gauge = Metric.update(browserMetrics.contextsOpen, state.contextsOpen)
          const closeContext = lease.crashed() ? Effect.void : closeQuietly(() => lease.context.close(), 10_000)
          return closeContext.pipe(
            Effect.andThen(closeQuietly(() => proxy?.close() ?? Promise.resolve(), 5_000)),
            Effect.andThen(gauge)
          )
        })
    ).pipe(Effect.map(({ lease }) => lease))

  const withEphemeralPage = <A, E, R>(
    f: (page: Page) => Effect.Effect<A, E, R>,
    options?: LeaseOptions
  ): Effect.Effect<A, E | BrowserError, R> =>
    Effect.scoped(
      Effect.flatMap(acquireContext(options), (lease): Effect.Effect<A, E | BrowserError, R> => {
        const page = lease.page()
        return page === undefined
          ? Effect.fail(new BrowserCrashed({ message: "the ephemeral page closed before use" }))
          : f(page)
      })
    )

  return BrowserPool.of(withMethodSpans("BrowserPool", {
    acquireContext,
    withEphemeralPage,
    stats: Effect.sync(() => ({
      contextsLeased: state.contextsLeased,
      contextsOpen: state.contextsOpen,
      contextsWarm: spares.filter((spare) => spare.ready).length,
      browserLaunches: state.browserLaunches,
      browserRestarts: state.browserRestarts
    })),
    currentBrowser: Effect.sync(() => Option.fromNullishOr(state.browser))
  }))
})

const closedPattern = /Target page, context or browser has been closed|Browser has been closed|browser has disconnected|Target closed|Connection closed/i

/**
 * Runs one Playwright operation for a lease: bounded by `timeoutMs`, failing with
 * BrowserCrashed as soon as the lease's browser disconnects (instead of waiting for the
 * timeout), and mapping Playwright's own errors to typed ones.
 */
export const attempt = <A>(
  lease: ContextLease,
  action: string,
  timeoutMs: number,
  f: () => Promise<A>,
  /** Whether the operation may change the page (all but observations): ends the lease's untouched blank tab. */
  touches = true
): Effect.Effect<A, BrowserCrashed | ActionTimeout | ActionFailed> => {
  const crashedError = () =>
    new BrowserCrashed({ message: `the browser crashed during ${action}; the session's browser state is lost` })
  const timedOut = () => new ActionTimeout({ action, timeoutMs, message: `${action} did not finish within ${timeoutMs} ms` })
  return Effect.suspend(() => {
    if (touches) lease.touch()
    if (lease.crashed()) return Effect.fail(crashedError())
    const operation = Effect.tryPromise({ try: f, catch: (cause) => cause }).pipe(
      Effect.catch((cause): Effect.Effect<never, BrowserCrashed | ActionTimeout | ActionFailed> => {
        if (isPlaywrightTimeout(cause)) {
          // The call log's last lines say why: covered by another element, hidden, disabled...
          const why = cause.message.split("\n").map((l) => l.trim().replace(/^- /, "")).filter((l) =>
            /intercepts pointer events|not visible|not enabled|not stable|not editable|detached|waiting for/.test(l)
          ).at(-1)
          return Effect.fail(why === undefined ? timedOut() : new ActionTimeout({ action, timeoutMs, message: `${timedOut().message}: ${why}` }))
        }
        const message = cause instanceof Error ? cause.message : String(cause)
        if (lease.crashed()) return Effect.fail(crashedError())
        if (/crash/i.test(message)) return Effect.fail(new BrowserCrashed({ message: `the page crashed during ${action}` }))
        if (closedPattern.test(message)) {
          // The disconnect event can trail the rejected call by a moment; wait for it briefly.
          return Deferred.await(lease.crashSignal).pipe(
            Effect.as(true),
            Effect.timeoutOrElse({ duration: 250, orElse: () => Effect.succeed(false) }),
            Effect.flatMap((died) =>
              Effect.fail(died ? crashedError() : new ActionFailed({ action, message: `the tab or context was closed: ${firstLine(message)}` }))
            )
          )
        }
        return Effect.fail(new ActionFailed({ action, message: firstLine(message) }))
      })
    )
    const crashSignal = Deferred.await(lease.crashSignal).pipe(Effect.flatMap(() => Effect.fail(crashedError())))
    return Effect.raceFirst(operation, crashSignal).pipe(
      Effect.timeoutOrElse({ duration: timeoutMs, orElse: () => Effect.fail(timedOut()) })
    )
  })
}

/** Playwright messages carry a long call log after the first line; the model needs the first. */
const firstLine = (message: string): string => {
  const line = message.split("\n").find((l) => l.trim() !== "") ?? message
  return line.length > 300 ? `${line.slice(0, 300)}…` : line
}
