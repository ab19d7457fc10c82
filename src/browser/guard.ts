/**
 * Navigation guard of a browser context: agent navigation must not reach private, loopback,
 * link-local or metadata addresses unless private networks are allowed.
 *
 * How it works, and its limit:
 * - `context.route("**\/*")` sees every document request of every page and frame of the
 *   context before it leaves the browser; the target is checked with `checkPublicUrl` (after
 *   DNS resolution) and refused requests are aborted with `blockedbyclient`.
 * - Playwright does NOT call route handlers for redirect hops ("The handler will only be called
 *   for the first url if the response is a redirect", types.d.ts; its Chromium network manager
 *   continues redirected requests itself). Redirect hops are therefore refused before they are
 *   followed over CDP (`watchHops`): document responses are intercepted (Fetch, response stage)
 *   and a 30x whose Location the guard refuses (the run's domain policy, or a private address)
 *   fails at once with ERR_BLOCKED_BY_CLIENT; the hop's host is never asked. The interception is
 *   set up by the browser's hop channel (hop-channel.ts) in every page of the context and every
 *   cross-site frame in its own process (OOPIF) BEFORE the target runs (auto-attach with
 *   waitForDebuggerOnStart), so a pop-up's very first load and an OOPIF's navigations are covered
 *   like any tab. A refused main frame (a tab's or a pop-up's) fails the action with
 *   NavigationRefused saying the redirect was not followed; a refused frame shows the error page
 *   and is reported. It is on whenever a domain policy is set, and for private addresses when
 *   there is no egress proxy (a remote CDP browser). Without a Browser object (a persistent
 *   context) or a channel, each page gets a CDP session from its `page` event instead.
 * - Behind it, the context's `request` event (`request.redirectedFrom()`) still contains what no
 *   watch saw (the fallback above: a pop-up's first load, an OOPIF): a refused hop is recorded and
 *   the frame sent to about:blank, so the agent never sees it.
 * - The context's egress proxy (egress-proxy.ts), whenever the browser was launched locally,
 *   refuses private targets at connection time for every request, redirect hops and
 *   sub-resources included.
 * - A refused main-frame navigation fails the agent's action (NavigationRefused); a refused
 *   iframe only blanks that frame and is reported in the action's outcome.
 * - `checkPublicUrl` classifies addresses by their bytes (src/net/private-address.ts), so
 *   127.0.0.1 spelled `[::ffff:7f00:1]` or `[::127.0.0.1]` is loopback too. An allowed origin
 *   is exempt only in its exact spelling: another spelling of the same address is checked.
 * - A run's domain policy (the project's safety boundary, src/safety/) is set with `setPolicy`
 *   and checked before the private-address check, for documents only (main frames, pop-ups,
 *   frames, redirect hops), with private networks allowed or not (the route is then installed
 *   when a policy is first set). A main-frame refusal is also kept as the lease's `violation`
 *   (the run ends failed with safety_boundary_violated); a refused frame is only blanked.
 */
import { Effect, Result } from "effect"
import type { Browser, BrowserContext, Frame, Page, Request, Route } from "playwright-core"
import { checkPublicUrl } from "../net/private-address.ts"
import { NavigationRefused } from "./errors.ts"
import { type HopDecision, hopChannelOf } from "./hop-channel.ts"

export interface GuardOptions {
  /** When true nothing is checked (WA_ALLOW_PRIVATE_NETWORKS). */
  readonly allowPrivateNetworks: boolean
  /**
   * Origins (`scheme://host:port`) exempt from the check even when private, for an operator's
   * intranet allow-list and for tests whose fixture site necessarily lives on loopback.
   */
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
  /**
   * Whether the context's connections go through the egress proxy (egress-proxy.ts), which
   * refuses private targets of redirect hops itself; without it the hops are checked here.
   */
  readonly egressProxy?: boolean | undefined
}

/** A run's domain policy: undefined when a document may load from the URL, else why not. */
export type DomainPolicy = (url: string) => { readonly reason: string } | undefined

/** A main-frame navigation the domain policy refused. */
export interface PolicyViolation {
  readonly url: string
  readonly reason: string
}

export interface NavigationGuard {
  /** Sets (or, with undefined, clears) the run's domain policy; forgets an earlier violation. */
  readonly setPolicy: (policy: DomainPolicy | undefined) => Promise<void>
  /** The first main-frame navigation the policy refused since it was set. */
  readonly violation: () => PolicyViolation | undefined
  /** Returns (and forgets) the main-frame refusals recorded since the last call, oldest first. */
  readonly takeRefusals: () => ReadonlyArray<NavigationRefused>
  /** Returns (and forgets) the iframe navigations refused since the last call. */
  readonly takeBlockedFrames: () => ReadonlyArray<NavigationRefused>
  /** Checks a URL the agent is about to open; succeeds when allowed. */
  readonly check: (url: string) => Effect.Effect<void, NavigationRefused>
  /** Resolves once the redirect-hop watch of every open page is in place (new tabs and pop-ups are watched from their creation, before they run). */
  readonly ready: () => Promise<void>
}

const originOf = (url: string): string | undefined => {
  try {
    return new URL(url).origin
  } catch {
    return undefined
  }
}

/** Installs the guard on a context. With private networks allowed it installs nothing. */
export const installNavigationGuard = async (
  context: BrowserContext,
  options: GuardOptions
): Promise<NavigationGuard> => {
  const allowed = new Set((options.allowedOrigins ?? []).map((o) => originOf(o) ?? o))
  const refusals: Array<NavigationRefused> = []
  let policy: DomainPolicy | undefined
  let violation: PolicyViolation | undefined

  const policyRefusal = (url: string): NavigationRefused | undefined => {
    const refused = policy?.(url)
    return refused === undefined
      ? undefined
      : new NavigationRefused({ url, address: "", message: `navigation refused by the project's safety boundary: ${refused.reason}` })
  }

  const check = (url: string): Effect.Effect<void, NavigationRefused> => {
    const byPolicy = policyRefusal(url)
    if (byPolicy !== undefined) {
      violation ??= { url, reason: policy?.(url)?.reason ?? byPolicy.message }
      return Effect.fail(byPolicy)
    }
    if (options.allowPrivateNetworks) return Effect.void
    const origin = originOf(url)
    if (origin !== undefined && allowed.has(origin)) return Effect.void
    return checkPublicUrl(url, false).pipe(
      Effect.mapError((e) => new NavigationRefused({ url: e.url, address: e.address, message: `navigation refused: ${e.message}` }))
    )
  }

  const verdict = async (url: string): Promise<NavigationRefused | undefined> => {
    const byPolicy = policyRefusal(url)
    if (byPolicy !== undefined) return byPolicy
    if (options.allowPrivateNetworks) return undefined
    const result = await Effect.runPromise(Effect.result(check(url))).catch(() =>
      Result.fail(new NavigationRefused({ url, address: "", message: `navigation refused: ${url} could not be checked` }))
    )
    return Result.isFailure(result) ? result.failure : undefined
  }

  /** Main-frame refusals fail the agent's action; refused iframes are only reported. */
  const blockedFrames: Array<NavigationRefused> = []
  const recordFor = (request: Request, refusal: NavigationRefused) => {
    let main = true
    try {
      main = request.frame().parentFrame() === null
    } catch {
      // Service-worker requests have no frame; treat them as the page's own.
    }
    record(main, refusal)
  }

  const record = (main: boolean, refusal: NavigationRefused) => {
    ;(main ? refusals : blockedFrames).push(refusal)
    if (main && refusal.address === "" && policy?.(refusal.url) !== undefined) {
      violation ??= { url: refusal.url, reason: policy(refusal.url)?.reason ?? refusal.message }
    }
  }

  /**
   * Redirect hops, refused before they are followed: Playwright's routes never see a hop, so the
   * document responses of the context's pages are intercepted over CDP (Fetch, response stage,
   * documents only: one pause per page load or hop, none for sub-resources). A 30x whose Location
   * the guard refuses fails right there (the browser never asks the hop's host); any other
   * response goes on at once. The interception is set up by the browser's hop channel
   * (hop-channel.ts) in every page of the context and every cross-site frame in its own process,
   * before the target runs: a pop-up's very first load and an OOPIF's navigations are watched
   * too. Without a browser (a persistent context) or when the channel cannot be opened, each page
   * gets a CDP session of its own from its `page` event instead (pop-ups' first loads and OOPIFs
   * are then left to the containment below).
   */
  let hopsWatched = false
  const decideHop: HopDecision = async (event, main) => {
    const status = event.responseStatusCode ?? 0
    const location = status >= 300 && status < 400 ? event.responseHeaders?.find((h) => h.name.toLowerCase() === "location")?.value : undefined
    if (location === undefined) return false
    let next: string
    try {
      next = new URL(location, event.request.url).href
    } catch {
      return false
    }
    const refused = await verdict(next).catch(() => undefined)
    if (refused === undefined) return false
    const from = event.request.url.length > 200 ? `${event.request.url.slice(0, 200)}…` : event.request.url
    record(
      main,
      new NavigationRefused({ url: refused.url, address: refused.address, message: `${refused.message} (a redirect from ${from}; the redirect was not followed)` })
    )
    return true
  }
  const watchPage = async (page: Page) => {
    try {
      const session = await context.newCDPSession(page)
      let mainFrameId: string | undefined
      session.on("Fetch.requestPaused", (event) => {
        void decideHop(event, event.frameId === mainFrameId).catch(() => false).then((fail) =>
          session.send(fail ? "Fetch.failRequest" : "Fetch.continueRequest", fail
            ? { requestId: event.requestId, errorReason: "BlockedByClient" }
            : { requestId: event.requestId }).catch(() => undefined)
        )
      })
      await session.send("Fetch.enable", { patterns: [{ urlPattern: "*", resourceType: "Document", requestStage: "Response" }] })
      mainFrameId = (await session.send("Page.getFrameTree")).frameTree.frame.id
    } catch {
      // The page closed meanwhile.
    }
  }
  /** Set-ups under way (`ready` waits for them). */
  const attaching = new Set<Promise<void>>()
  const track = (setUp: Promise<void>) => {
    attaching.add(setUp)
    void setUp.finally(() => attaching.delete(setUp))
    return setUp
  }
  const watchEachPage = async () => {
    context.on("page", (page) => void track(watchPage(page)))
    await Promise.all(context.pages().map((page) => track(watchPage(page))))
  }
  /** Watches the context through the browser's hop channel; false when that is not possible. */
  const watchThroughChannel = async (browser: Browser, page: Page): Promise<boolean> => {
    try {
      const session = await context.newCDPSession(page)
      const contextId = (await session.send("Target.getTargetInfo")).targetInfo.browserContextId
      void session.detach().catch(() => undefined)
      if (contextId === undefined) return false
      const stop = await (await hopChannelOf(browser)).watchContext(contextId, decideHop)
      context.once("close", stop)
      return true
    } catch {
      return false
    }
  }
  const watchHops = async () => {
    if (hopsWatched) return
    hopsWatched = true
    const browser = context.browser()
    if (browser === null) return watchEachPage()
    const first = context.pages().find((page) => !page.isClosed())
    if (first !== undefined) {
      return track(watchThroughChannel(browser, first).then((ok) => (ok ? undefined : watchEachPage())))
    }
    // No page yet: the first one tells the context's id (`ready` waits for the watch).
    context.once("page", (page) => void track(watchThroughChannel(browser, page).then((ok) => (ok ? undefined : watchEachPage()))))
  }

  let installed = false
  const install = async () => {
    if (installed) return
    installed = true
    await context.route("**/*", async (route: Route, request: Request) => {
      if (!request.isNavigationRequest()) return route.fallback()
      const refused = await verdict(request.url())
      if (refused === undefined) return route.fallback()
      recordFor(request, refused)
      return route.abort("blockedbyclient").catch(() => undefined)
    })

    context.on("request", (request: Request) => {
      if (!request.isNavigationRequest() || request.redirectedFrom() === null) return
      void verdict(request.url()).then((refused) => {
        if (refused === undefined) return
        recordFor(request, new NavigationRefused({ url: refused.url, address: refused.address, message: `${refused.message} (reached by a redirect)` }))
        const frame: Frame = request.frame()
        return frame.goto("about:blank", { timeout: 5_000 }).then(() => undefined, () => undefined)
      }).catch(() => undefined)
    })
  }
  if (!options.allowPrivateNetworks) await install()
  // Without the egress proxy nothing else stops a private hop before the browser asks it.
  if (!options.allowPrivateNetworks && options.egressProxy !== true) await watchHops()

  return {
    setPolicy: async (next) => {
      policy = next
      violation = undefined
      if (next !== undefined) {
        await install()
        await watchHops()
      }
    },
    violation: () => violation,
    takeRefusals: () => refusals.splice(0, refusals.length),
    takeBlockedFrames: () => blockedFrames.splice(0, blockedFrames.length),
    check,
    ready: async () => {
      while (attaching.size > 0) await Promise.all([...attaching])
    }
  }
}
