/**
 * Account pre-hijacking, end to end: the real service with the OpenID Connect fixture
 * (test/fixtures/oidc), a mail server on loopback (test/support/smtp-receiver.ts, the service's
 * WA_SMTP_URL) and Chromium for every SSO sign-in.
 *
 * The attack: a user makes a tenant, invites the victim's address and accepts the invitation
 * himself with a password of his choosing, so an account exists for an address nobody proved.
 * Before the fix, the victim's SSO sign-in was linked to that account and the attacker's password
 * opened everything the victim later joined. Now the account is unverified, SSO refuses it
 * (409 email_unverified), the victim takes it back with a mailed password reset (which proves the
 * address and ends every session), and the attacker ends with nothing of the victim's.
 *
 * Also: a legitimate unverified account verifies its address by mail (only its own session can use
 * the mailed token) and is then linked by SSO; reset links are single use, expire, and are answered
 * the same for an unknown email; `wa users reset-password`; the password change is throttled like
 * sign-in; the SSO return_to is judged as a browser reads it.
 */
import { createHash } from "node:crypto"
import * as http from "node:http"
import { type Browser, chromium } from "playwright-core"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type BrowserWatch, watchBrowser } from "../support/contract-browser.ts"
import { buildConsole, isStale } from "../../console/build.ts"
import { chromiumPath } from "../browser/support.ts"
import { freePort, type OidcProvider, startOidcProvider } from "../fixtures/oidc/provider.ts"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"
import { type SmtpReceiver, startSmtpReceiver, tokenOfLink } from "../support/smtp-receiver.ts"
import { as, cliUsers, createUser, expectEnvelope, loginBearer, ssoSignIn } from "./support.ts"

let service: Service
let oidc: OidcProvider
let smtp: SmtpReceiver
let browser: Browser
/** What the browser gets from the service goes through the contract hook. */
let browserWatch: BrowserWatch | undefined

beforeAll(async () => {
  if (isStale()) await buildConsole()
  const servicePort = await freePort()
  oidc = await startOidcProvider(servicePort)
  smtp = await startSmtpReceiver()
  service = await startService({
    env: {
      WA_PORT: String(servicePort),
      WA_OIDC_PROVIDERS: oidc.providersEnv,
      WA_SMTP_URL: smtp.url,
      WA_MAIL_FROM: "Agents <agents@service.example>",
      WA_LOGIN_ATTEMPTS_PER_ACCOUNT: "6"
    }
  })
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox"] })
}, 300_000)

afterEach(async () => {
  expect(await browserWatch?.takeMismatches() ?? []).toEqual([])
})
afterAll(async () => {
  await browser?.close()
  await stopAndClean(service)
  await oidc?.close()
  await smtp?.close()
})

/** SSO as `login` (`<login>@corp.example.com`) in Chromium: the page the service answered and its session cookie. */
const ssoInChromium = async (login: string, returnTo?: string) => {
  const { url, text, cookies } = await ssoSignIn(browser, service, login, returnTo)
  const session = cookies.find((c) => c.name === "wa_session")
  return { url, text, cookie: session === undefined ? undefined : `wa_session=${session.value}` }
}

const withSessionCookie = (cookie: string) => (method: string, pathname: string) =>
  service.request(method, pathname, { key: null, headers: { cookie } })

/** The attacker's move: a tenant of his own, an invitation for `victimEmail`, accepted by himself with his password. */
const squat = async (attackerEmail: string, victimEmail: string, attackerPassword: string) => {
  await createUser(service, attackerEmail, "attacker-own-password")
  const attacker = as(service, await loginBearer(service, attackerEmail, "attacker-own-password"))
  const tenant = await attacker("POST", "/v1/tenants", { name: "Squat" })
  expect(tenant.status, tenant.text).toBe(201)
  const invite = await attacker("POST", `/v1/tenants/${tenant.json.tenant_id}/invitations`, { email: victimEmail, role: "admin" })
  expect(invite.status, invite.text).toBe(201)
  const token = new URL(invite.json.invite_url).searchParams.get("token")!
  const accepted = await service.request("POST", "/v1/invitations/accept", { key: null, body: { token, password: attackerPassword } })
  expect(accepted.status, accepted.text).toBe(200)
  return { attacker, squatTenantId: tenant.json.tenant_id as string, squattedUserId: accepted.json.user_id as string }
}

describe("account pre-hijacking", () => {
  it("the attacker's squatted account: unverified, refused by SSO; the victim takes it back by mail and the attacker ends with nothing", async () => {
    const victimEmail = "vic@corp.example.com"
    const { attacker, squattedUserId } = await squat("mallory@evil.example", victimEmail, "mallory-chose-this")

    // The attacker holds a session of the squatted account; accepting the invitation proved nothing.
    const squatter = as(service, await loginBearer(service, victimEmail, "mallory-chose-this"))
    const squattedMe = await squatter("GET", "/v1/auth/me")
    expect(squattedMe.json).toMatchObject({ user_id: squattedUserId, email: victimEmail, email_verified: false })
    // Its own verification mail goes to the victim's inbox, and the victim's click cannot verify it (next test).

    // The victim signs in by SSO (a verified address at the provider): refused, no session.
    const refused = await ssoInChromium("vic")
    expect(new URL(refused.url).pathname, refused.text).toBe("/v1/auth/sso/corp/callback")
    expect(JSON.parse(refused.text)).toMatchObject({ code: "email_unverified" })
    expect(refused.cookie).toBeUndefined()
    // Nothing was linked: the squatter's session still sees only his tenant.
    expect((await squatter("GET", "/v1/auth/me")).json.tenants).toHaveLength(1)

    // The victim asks for a password reset in the console (Chromium); the link arrives at the victim's mailbox only.
    const context = await browser.newContext()
    browserWatch ??= watchBrowser(service.url)
    browserWatch.watch(context)
    try {
      const page = await context.newPage()
      await page.goto(`${service.url}/console/`)
      await page.getByRole("link", { name: "Forgot your password?" }).click()
      const before = smtp.mails.length
      await page.fill("form[aria-label='forgot password'] input[name=email]", "VIC@corp.example.com")
      await page.click("form[aria-label='forgot password'] button[type=submit]")
      await page.getByRole("status").getByText("If an account has this email").waitFor()
      const mail = await smtp.waitFor(victimEmail, (m) => m.subject === "Reset your password", before)
      expect(mail.from).toBe("agents@service.example")
      const link = /https?:\/\/\S+\/console\/reset-password\?token=\S+/.exec(mail.text)![0]
      expect(new URL(link).origin).toBe(service.url)
      await page.goto(link)
      await page.fill("form[aria-label='reset password'] input[name=password]", "victim-now-owns-this")
      await page.fill("form[aria-label='reset password'] input[name=repeat]", "victim-now-owns-this")
      await page.click("form[aria-label='reset password'] button[type=submit]")
      await page.getByRole("status").getByText("every session of the account was signed out").waitFor()
      // Single use: the same link again is refused.
      const again = await service.request("POST", "/v1/auth/password/reset", { key: null, body: { token: tokenOfLink(mail, "/console/reset-password"), new_password: "x-password-1" } })
      expectEnvelope(again, 409, "token_used")
    } finally {
      await context.close()
    }

    // The squatter is out: his session ended and his password no longer works.
    expectEnvelope(await squatter("GET", "/v1/auth/me"), 401)
    expectEnvelope(await service.request("POST", "/v1/auth/login", { key: null, body: { email: victimEmail, password: "mallory-chose-this" } }), 401, "unauthorized")

    // Now SSO signs the victim into the (verified) account.
    const signedIn = await ssoInChromium("vic")
    expect(new URL(signedIn.url).pathname, signedIn.text).toBe("/v1/auth/me")
    expect(JSON.parse(signedIn.text)).toMatchObject({ user_id: squattedUserId, email: victimEmail, email_verified: true })
    const victim = withSessionCookie(signedIn.cookie!)

    // The victim is made admin of the company's tenant (by its own admin), with a project and an API key.
    await createUser(service, "boss@corp.example.com", "boss-password-1")
    const boss = as(service, await loginBearer(service, "boss@corp.example.com", "boss-password-1"))
    const corp = (await boss("POST", "/v1/tenants", { name: "Corp" })).json.tenant_id as string
    const project = (await boss("POST", `/v1/tenants/${corp}/projects`, { name: "prod" })).json.id as string
    const invite = await boss("POST", `/v1/tenants/${corp}/invitations`, { email: victimEmail, role: "admin" })
    const inviteToken = new URL(invite.json.invite_url).searchParams.get("token")!
    const victimBearer = as(service, await loginBearer(service, victimEmail, "victim-now-owns-this"))
    expect((await victimBearer("POST", "/v1/invitations/accept", { token: inviteToken })).status).toBe(200)
    const key = await victimBearer("POST", `/v1/projects/${project}/api_keys`, { name: "victim's key" })
    expect(key.status, key.text).toBe(201)
    expect((await victim("GET", "/v1/auth/me")).json.tenants.map((t: { tenant_id: string }) => t.tenant_id)).toContain(corp)

    // The attacker has nothing of it: not the password, not a session, not the tenant, not the keys.
    expectEnvelope(await service.request("POST", "/v1/auth/login", { key: null, body: { email: victimEmail, password: "mallory-chose-this" } }), 401, "unauthorized")
    expectEnvelope(await squatter("GET", `/v1/tenants/${corp}/members`), 401)
    expectEnvelope(await attacker("GET", `/v1/tenants/${corp}/members`), 404, "tenant_not_found")
    expectEnvelope(await attacker("GET", `/v1/projects/${project}/api_keys`), 403, "forbidden")
    // A reset he asks for goes to the victim's mailbox, never to him.
    const count = smtp.mails.length
    expect((await service.request("POST", "/v1/auth/password/forgot", { key: null, body: { email: victimEmail } })).status).toBe(202)
    const second = await smtp.waitFor(victimEmail, (m) => m.subject === "Reset your password", count)
    expect(second.to).toEqual([victimEmail])
    expect(smtp.mails.slice(count).every((m) => m.to.every((to) => to === victimEmail))).toBe(true)
  }, 240_000)

  it("a legitimate unverified account verifies its address by mail with its own session (not another account's); SSO then links it", async () => {
    const email = "ann@corp.example.com"
    const { squattedUserId: annId } = await squat("inviter@corp.example.com", email, "ann-chose-this")
    const ann = as(service, await loginBearer(service, email, "ann-chose-this"))
    expect((await ann("GET", "/v1/auth/me")).json.email_verified).toBe(false)

    const before = smtp.mails.length
    const asked = await ann("POST", "/v1/auth/email/verification")
    expect(asked.status, asked.text).toBe(200)
    expect(asked.json).toEqual({ email, email_verified: false, mail_sent: true })
    const mail = await smtp.waitFor(email, (m) => m.subject === "Verify your email address", before)
    const token = tokenOfLink(mail, "/console/verify-email")
    expect(mail.text).toContain(token) // also given as a code

    // Another account's session cannot use it (a squatter's mail clicked by the owner verifies nothing).
    await createUser(service, "other@corp.example.com", "other-password-1")
    const other = as(service, await loginBearer(service, "other@corp.example.com", "other-password-1"))
    expectEnvelope(await other("POST", "/v1/auth/email/verify", { token }), 404, "token_not_found")
    expectEnvelope(await ann("POST", "/v1/auth/email/verify", { token: "made-up-token-000000" }), 404, "token_not_found")
    // Ann opens the mailed link in Chromium where she is signed in to the console, and confirms.
    const context = await browser.newContext()
    browserWatch ??= watchBrowser(service.url)
    browserWatch.watch(context)
    try {
      const page = await context.newPage()
      await page.goto(`${service.url}/console/`)
      await page.fill("form[aria-label='account sign-in'] input[name=email]", email)
      await page.fill("form[aria-label='account sign-in'] input[name=password]", "ann-chose-this")
      await page.click("form[aria-label='account sign-in'] button[type=submit]")
      await page.waitForFunction(() => document.cookie.includes("wa_csrf="))
      await page.goto(/https?:\/\/\S+\/console\/verify-email\?token=\S+/.exec(mail.text)![0])
      await page.getByRole("button", { name: `Verify ${email}` }).click()
      await page.getByRole("status").getByText(`${email} is verified.`).waitFor()
    } finally {
      await context.close()
    }
    expectEnvelope(await ann("POST", "/v1/auth/email/verify", { token }), 409, "token_used")
    expect((await ann("GET", "/v1/auth/me")).json.email_verified).toBe(true)
    // Verified: nothing more to send.
    expect((await ann("POST", "/v1/auth/email/verification")).json).toEqual({ email, email_verified: true, mail_sent: false })

    // SSO now links to it, and the password Ann chose keeps working.
    const signedIn = await ssoInChromium("ann")
    expect(JSON.parse(signedIn.text)).toMatchObject({ user_id: annId, email_verified: true })
    expect((await service.request("POST", "/v1/auth/login", { key: null, body: { email, password: "ann-chose-this" } })).status).toBe(200)
  }, 240_000)

  it("reset links: the same answer for an unknown email (no mail), single use, expired after 30 minutes, and earlier links die with a reset", async () => {
    const before = smtp.mails.length
    const unknown = await service.request("POST", "/v1/auth/password/forgot", { key: null, body: { email: "nobody@corp.example.com" } })
    expect(unknown.status).toBe(202)
    expect(unknown.json).toEqual({ accepted: true })

    const email = "rex@corp.example.com"
    await createUser(service, email, "rex-password-1")
    const ask = async () => {
      const count = smtp.mails.length
      expect((await service.request("POST", "/v1/auth/password/forgot", { key: null, body: { email } })).status).toBe(202)
      return tokenOfLink(await smtp.waitFor(email, (m) => m.subject === "Reset your password", count), "/console/reset-password")
    }
    const first = await ask()
    const second = await ask()
    const third = await ask()

    // A forged Host (or X-Forwarded-Host) does not get into the mailed link: the asker is anyone,
    // the link carries the owner's token.
    const count = smtp.mails.length
    const forged = await new Promise<number>((resolve, reject) => {
      const request = http.request(`${service.url}/v1/auth/password/forgot`, {
        method: "POST",
        headers: { host: "evil.example", "x-forwarded-host": "evil.example", "x-forwarded-proto": "https", "content-type": "application/json" }
      }, (response) => {
        response.resume()
        resolve(response.statusCode ?? 0)
      })
      request.on("error", reject)
      request.end(JSON.stringify({ email }))
    })
    expect(forged).toBe(202)
    const poisoned = await smtp.waitFor(email, (m) => m.subject === "Reset your password", count)
    expect(poisoned.text).not.toContain("evil.example")
    const link = /https?:\/\/\S+\/console\/reset-password\?token=\S+/.exec(poisoned.text)![0]
    expect(new URL(link).origin).toBe(service.url)
    expect(smtp.mails.slice(before).some((m) => m.to.includes("nobody@corp.example.com"))).toBe(false)

    // The third expires: its row is moved past its end.
    const db = await embeddedDatabaseClient(service.dataDir)
    try {
      const hash = createHash("sha256").update(third).digest("hex")
      expect((await db.query("UPDATE account_tokens SET expires_at = now() - interval '1 minute' WHERE token_hash = $1", [hash])).rowCount).toBe(1)
    } finally {
      await db.end()
    }
    expectEnvelope(await service.request("POST", "/v1/auth/password/reset", { key: null, body: { token: third, new_password: "rex-password-3" } }), 409, "token_expired")
    expectEnvelope(await service.request("POST", "/v1/auth/password/reset", { key: null, body: { token: "not-a-token-at-all", new_password: "rex-password-3" } }), 404, "token_not_found")

    const session = await loginBearer(service, email, "rex-password-1")
    expect((await service.request("POST", "/v1/auth/password/reset", { key: null, body: { token: first, new_password: "rex-password-2" } })).status).toBe(200)
    expectEnvelope(await service.request("POST", "/v1/auth/password/reset", { key: null, body: { token: first, new_password: "rex-password-x" } }), 409, "token_used")
    // The other link of before the reset is spent too.
    expectEnvelope(await service.request("POST", "/v1/auth/password/reset", { key: null, body: { token: second, new_password: "rex-password-x" } }), 409, "token_used")
    expectEnvelope(await as(service, session)("GET", "/v1/auth/me"), 401)
    await loginBearer(service, email, "rex-password-2")
  }, 240_000)

  it("wa users reset-password: a new password for an operator without mail, every session ended, the address verified", async () => {
    const email = "sue@corp.example.com"
    await squat("sue-inviter@corp.example.com", email, "someone-set-this")
    const session = as(service, await loginBearer(service, email, "someone-set-this"))
    const result = await cliUsers(service, "reset-password", ["--email", email, "--password-stdin"], "operator-gave-this")
    expect(result.code, result.stderr).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ email, email_verified: true, sessions_ended: true })
    expectEnvelope(await session("GET", "/v1/auth/me"), 401)
    expectEnvelope(await service.request("POST", "/v1/auth/login", { key: null, body: { email, password: "someone-set-this" } }), 401)
    const me = await as(service, await loginBearer(service, email, "operator-gave-this"))("GET", "/v1/auth/me")
    expect(me.json.email_verified).toBe(true)
    const missing = await cliUsers(service, "reset-password", ["--email", "ghost@corp.example.com", "--password-stdin"], "long-enough-1")
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain("no account")
  }, 240_000)
})

describe("password change is throttled like sign-in", () => {
  it("wrong current_password guesses stop at the account's sign-in limit with 429 and Retry-After; then even the right one waits", async () => {
    const email = "guess@corp.example.com"
    await createUser(service, email, "the-right-password")
    const session = as(service, await loginBearer(service, email, "the-right-password"))
    // The sign-in above cleared the account's count; the limit is 6 per window.
    const guesses = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      session("POST", "/v1/auth/password", { current_password: `guess-${i}`, new_password: "new-password-1" })))
    expect(guesses.filter((r) => r.status === 401)).toHaveLength(6)
    const throttled = guesses.filter((r) => r.status === 429)
    expect(throttled).toHaveLength(14)
    expectEnvelope(throttled[0]!, 429, "rate_limit_exceeded")
    expect(Number(throttled[0]!.headers.get("retry-after"))).toBeGreaterThan(0)
    expectEnvelope(await session("POST", "/v1/auth/password", { current_password: "the-right-password", new_password: "new-password-1" }), 429, "rate_limit_exceeded")
    // The same limiter as sign-in: the account's sign-ins wait as well.
    expectEnvelope(await service.request("POST", "/v1/auth/login", { key: null, body: { email, password: "the-right-password" } }), 429, "rate_limit_exceeded")
  }, 240_000)
})

describe("SSO return_to is judged as a browser reads it", () => {
  it("refuses every form that leaves the origin: tabs, newlines, backslashes, encoded and protocol-relative forms", async () => {
    for (const returnTo of [
      "/\t/evil.example/path", "/\n/evil.example/path", "/\r\n/evil.example/", "/\\evil.example", "/\\/evil.example", "/\t\\evil.example",
      "//evil.example/", "///evil.example/", "https://evil.example/", "evil", "javascript:alert(1)", "\\\\evil.example"
    ]) {
      const started = await service.request("GET", `/v1/auth/sso/corp/start?return_to=${encodeURIComponent(returnTo)}`, { key: null })
      expectEnvelope(started, 422, "validation_error")
    }
    // The probe's exact request: the tab arrives percent-encoded in the query.
    expectEnvelope(await service.request("GET", "/v1/auth/sso/corp/start?return_to=/%09/evil.example/path", { key: null }), 422, "validation_error")
    // Encoded slashes, a doubly encoded tab and an inner space stay in the path of this origin: allowed.
    for (const returnTo of ["/%2F%2Fevil.example/", "/%09/evil.example/path", "/ /evil.example", "/console/?next=//evil.example"]) {
      const started = await service.fetch(`${service.url}/v1/auth/sso/corp/start?return_to=${encodeURIComponent(returnTo)}`, { redirect: "manual" })
      expect(started.status, returnTo).toBe(302)
    }
  }, 240_000)

  it("in Chromium, an allowed but odd return_to lands on this origin", async () => {
    await createUser(service, "odd@corp.example.com", "odd-password-1")
    const landed = await ssoInChromium("odd", "/%09/evil.example/v1/auth/me")
    expect(new URL(landed.url).origin).toBe(new URL(service.url).origin)
  }, 240_000)
})
