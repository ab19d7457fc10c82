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
 *   continues redirected requests itself). Redirect hops are therefore checked from the
 *   context's `request` event (`request.redirectedFrom()`): a refused hop is recorded and the
 *   frame is sent to about:blank, so the agent never sees its content and its action fails
 *   with NavigationRefused. On its own this is containment, not prevention, for redirect hops.
 * - The gap is closed by the context's egress proxy (egress-proxy.ts), which refuses the
 *   connection itself for every request, redirect hops and sub-resources included, whenever the
 *   browser was launched locally. With a remote CDP browser only this guard applies.
 * - A refused main-frame navigation fails the agent's action (NavigationRefused); a refused
 *   iframe only blanks that frame and is reported in the action's outcome.
 * - `checkPublicUrl` classifies addresses by their bytes (src/net/private-address.ts), so
 *   127.0.0.1 spelled `[::ffff:7f00:1]` or `[::127.0.0.1]` is loopback too. An allowed origin
 *   is exempt only in its exact spelling: another spelling of the same address is checked.
 * - A run's domain policy (the project's safety boundary, src/safety/) is set with `setPolicy`
 *   and checked before the private-address check, for documents only (main frames, pop-ups,
 *   frames, redirect hops), with private networks allowed or not (the route is then installed
 *   when a policy is first set). A main-frame refusal is also kept as the lease's `violation`
 *   (the run ends failed with safety_boundary_violated); a refused frame is only blanked. A
 *   redirect hop is seen only once the browser requested it: its response never reaches the agent.
 */
import { Effect, Result } from "effect"
import type { BrowserContext, Frame, Request, Route } from "playwright-core"
import { checkPublicUrl } from "../net/private-address.ts"
import { NavigationRefused } from "./errors.ts"

export interface GuardOptions {
  /** When true nothing is checked (WA_ALLOW_PRIVATE_NETWORKS). */
  readonly allowPrivateNetworks: boolean
  /**
   * Origins (`scheme://host:port`) exempt from the check even when private, for an operator's
   * intranet allow-list and for tests whose fixture site necessarily lives on loopback.
   */
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
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
    ;(main ? refusals : blockedFrames).push(refusal)
    if (main && refusal.address === "" && policy?.(refusal.url) !== undefined) {
      violation ??= { url: refusal.url, reason: policy(refusal.url)?.reason ?? refusal.message }
    }
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

  return {
    setPolicy: async (next) => {
      policy = next
      violation = undefined
      if (next !== undefined) await install()
    },
    violation: () => violation,
    takeRefusals: () => refusals.splice(0, refusals.length),
    takeBlockedFrames: () => blockedFrames.splice(0, blockedFrames.length),
    check
  }
}
