/**
 * The login probe: opens a site's start URL in a fresh browser context carrying the profile's
 * saved state and decides whether the identity is signed in there.
 *
 * The rule, in order (README "Profiles"):
 * 1. `logged_out_selector` given and present on the page: `logged_out`.
 * 2. `logged_in_selector` given: `logged_in` when present, else `logged_out`.
 * 3. The start URL answered 401 or 403: `logged_out`.
 * 4. The page ended on another URL (after redirects) that looks like a sign-in page (its path has
 *    login, signin, sign-in, auth, sso, oauth, ... as a segment, or its host starts with login.,
 *    auth., accounts., sso., id.): `logged_out`.
 * 5. The page shows a visible password field: `logged_out`.
 * 6. Otherwise `logged_in`.
 * A start URL that does not load at all gives `unknown` (nothing is concluded about the login).
 */
import { Effect } from "effect"
import type { Page } from "playwright-core"
import type { BrowserPool } from "../browser/pool.ts"

export type ProbeResult = "logged_in" | "logged_out" | "unknown"

export interface ProbeInput {
  readonly startUrl: string
  readonly loggedInSelector: string | null
  readonly loggedOutSelector: string | null
  readonly storageState: unknown | undefined
  readonly allowPrivateNetworks: boolean
}

export interface ProbeReport {
  readonly result: ProbeResult
  readonly finalUrl: string | null
  /** Why: which rule decided. */
  readonly reason: string
}

const signInSegment = /(^|[/_.-])(log-?in|log-?on|sign-?in|sign_in|auth|authenticate|authorize|sso|oauth2?|cas|session\/new|users\/sign_in)([/_.?-]|$)/i
const signInHost = /^(login|signin|auth|accounts|account|sso|id|idp)\./i

/** Whether a URL looks like a sign-in page (its path or its host). */
export const looksLikeSignIn = (url: string): boolean => {
  try {
    const parsed = new URL(url)
    return signInSegment.test(parsed.pathname) || signInHost.test(parsed.hostname)
  } catch {
    return false
  }
}

const sameUrl = (a: string, b: string): boolean => {
  try {
    const x = new URL(a)
    const y = new URL(b)
    x.hash = ""
    y.hash = ""
    return x.toString() === y.toString()
  } catch {
    return a === b
  }
}

const present = async (page: Page, selector: string): Promise<boolean> => (await page.locator(selector).count()) > 0

/** Applies the rule to a loaded page. */
export const judgePage = async (page: Page, input: Pick<ProbeInput, "startUrl" | "loggedInSelector" | "loggedOutSelector">, status: number | null): Promise<ProbeReport> => {
  const finalUrl = page.url()
  if (input.loggedOutSelector !== null && await present(page, input.loggedOutSelector)) {
    return { result: "logged_out", finalUrl, reason: `logged_out_selector ${input.loggedOutSelector} is on the page` }
  }
  if (input.loggedInSelector !== null) {
    return await present(page, input.loggedInSelector)
      ? { result: "logged_in", finalUrl, reason: `logged_in_selector ${input.loggedInSelector} is on the page` }
      : { result: "logged_out", finalUrl, reason: `logged_in_selector ${input.loggedInSelector} is not on the page` }
  }
  if (status === 401 || status === 403) return { result: "logged_out", finalUrl, reason: `the start URL answered ${status}` }
  if (!sameUrl(finalUrl, input.startUrl) && looksLikeSignIn(finalUrl)) {
    return { result: "logged_out", finalUrl, reason: `redirected to a sign-in page (${finalUrl})` }
  }
  if (await present(page, "input[type=password]:visible")) return { result: "logged_out", finalUrl, reason: "the page asks for a password" }
  return { result: "logged_in", finalUrl, reason: "the start URL shows no sign-in page" }
}

/** Runs the probe in a fresh context of the pool (closed afterwards). */
export const runProbe = (pool: BrowserPool["Service"], input: ProbeInput): Effect.Effect<ProbeReport> =>
  pool.withEphemeralPage(
    (page) =>
      Effect.tryPromise(async () => {
        const response = await page.goto(input.startUrl, { waitUntil: "domcontentloaded", timeout: 30_000 })
        // Pages that sign in with scripts redirect after the document loads.
        await page.waitForLoadState("load", { timeout: 5_000 }).catch(() => undefined)
        await page.waitForLoadState("networkidle", { timeout: 2_000 }).catch(() => undefined)
        return await judgePage(page, input, response?.status() ?? null)
      }),
    {
      allowPrivateNetworks: input.allowPrivateNetworks,
      ...(input.storageState === undefined ? {} : { storageState: input.storageState as never })
    }
  ).pipe(
    Effect.catch((error) =>
      Effect.succeed<ProbeReport>({
        result: "unknown",
        finalUrl: null,
        reason: `the start URL could not be loaded: ${String((error as { message?: unknown }).message ?? error).split("\n")[0]!.slice(0, 300)}`
      })
    )
  )
