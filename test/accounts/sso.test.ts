/**
 * SSO sign-in end to end: a real OpenID Connect provider (`oidc-provider`, its development login
 * and consent pages) on loopback, the real service configured with it (WA_OIDC_PROVIDERS), and a
 * real Chromium that starts at the service, signs in at the provider, consents, and lands back
 * signed in (cookie session). Also: the providers list, linking to an existing account by verified
 * email, refusing an unverified email, a callback from another browser (login CSRF) or a replayed
 * state, an unknown provider and a return_to that leaves the service.
 */
import { type Browser, chromium } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chromiumPath } from "../browser/support.ts"
import { freePort, type OidcProvider, startOidcProvider } from "../fixtures/oidc/provider.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { createUser, expectEnvelope, ssoSignIn } from "./support.ts"

let service: Service
let oidc: OidcProvider
let browser: Browser

beforeAll(async () => {
  const servicePort = await freePort()
  // Verified unless the login name is "unverified".
  oidc = await startOidcProvider(servicePort, { verified: (login) => login !== "unverified" })
  service = await startService({
    env: {
      WA_PORT: String(servicePort),
      WA_OIDC_PROVIDERS: oidc.providersEnv
    }
  })
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox"] })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await stopAndClean(service)
  await oidc?.close()
})

const signInWithBrowser = (login: string, returnTo?: string) => ssoSignIn(browser, service, login, returnTo)

describe("SSO (OpenID Connect, authorization code + PKCE)", () => {
  it("lists the configured provider", async () => {
    const providers = await service.request("GET", "/v1/auth/providers", { key: null })
    expect(providers.json).toEqual({ providers: [{ provider_id: "corp", display_name: "Corp SSO" }] })
  })

  it("a new person signs in through the provider in Chromium and lands signed in with a cookie session", async () => {
    const result = await signInWithBrowser("sam")
    expect(new URL(result.url).pathname, result.text).toBe("/v1/auth/me")
    const me = JSON.parse(result.text)
    expect(me).toMatchObject({ email: "sam@corp.example.com", session: "cookie", tenants: [] })
    const session = result.cookies.find((c) => c.name === "wa_session")!
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Strict" })
    expect(result.cookies.find((c) => c.name === "wa_csrf")).toBeDefined()
    // The session works from outside the browser too, and a second sign-in is the same account.
    const again = await signInWithBrowser("sam")
    expect(JSON.parse(again.text).user_id).toBe(me.user_id)
    const viaCookie = await service.request("GET", "/v1/auth/me", { key: null, headers: { cookie: `wa_session=${session.value}` } })
    expect(viaCookie.json.user_id).toBe(me.user_id)
  })

  it("links to the existing account with the provider's verified email", async () => {
    const existing = await createUser(service, "lee@corp.example.com", "lee-password", ["--tenant", "ten_default", "--role", "member"])
    const result = await signInWithBrowser("lee")
    const me = JSON.parse(result.text)
    expect(me.user_id).toBe(existing.user_id)
    expect(me.tenants).toEqual([expect.objectContaining({ tenant_id: "ten_default", role: "member" })])
  })

  it("refuses an account whose email the provider has not verified", async () => {
    const result = await signInWithBrowser("unverified")
    expect(new URL(result.url).pathname).toBe("/v1/auth/sso/corp/callback")
    expect(JSON.parse(result.text)).toMatchObject({ code: "sso_failed" })
    expect(result.cookies.find((c) => c.name === "wa_session")).toBeUndefined()
  })

  it("refuses a callback in another browser (no state cookie), a replayed state, an unknown provider, an outside return_to", async () => {
    const start = await service.fetch(`${service.url}/v1/auth/sso/corp/start`, { redirect: "manual" })
    expect(start.status).toBe(302)
    const location = new URL(start.headers.get("location")!)
    expect(location.searchParams.get("code_challenge_method")).toBe("S256")
    expect(location.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const state = location.searchParams.get("state")!
    const stateCookie = start.headers.getSetCookie().find((c) => c.startsWith("wa_sso_state="))!
    expect(stateCookie).toMatch(/HttpOnly/)
    expect(stateCookie).toMatch(/SameSite=Lax/)
    // The victim's browser has no (or another) state cookie: an attacker's callback URL fails.
    const forged = await service.request("GET", `/v1/auth/sso/corp/callback?code=x&state=${state}`, { key: null })
    expectEnvelope(forged, 401, "sso_failed")
    const otherCookie = await service.request("GET", `/v1/auth/sso/corp/callback?code=x&state=${state}`, { key: null, headers: { cookie: "wa_sso_state=other" } })
    expectEnvelope(otherCookie, 401, "sso_failed")
    // With the right cookie but a made-up code, the exchange fails and the state is used up.
    const badCode = await service.request("GET", `/v1/auth/sso/corp/callback?code=made-up&state=${state}`, { key: null, headers: { cookie: `wa_sso_state=${state}` } })
    expectEnvelope(badCode, 401, "sso_failed")
    const replay = await service.request("GET", `/v1/auth/sso/corp/callback?code=made-up&state=${state}`, { key: null, headers: { cookie: `wa_sso_state=${state}` } })
    expectEnvelope(replay, 401, "sso_failed")
    expect(replay.json.detail).toContain("unknown, used")
    expectEnvelope(await service.request("GET", "/v1/auth/sso/nope/start", { key: null }), 404, "provider_not_found")
    for (const returnTo of ["//evil.example/", "https://evil.example/", "evil", "/\\evil.example"]) {
      expectEnvelope(await service.request("GET", `/v1/auth/sso/corp/start?return_to=${encodeURIComponent(returnTo)}`, { key: null }), 422, "validation_error")
    }
  })
})
