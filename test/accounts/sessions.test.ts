/**
 * Console sign-in over real HTTP against the real service: the first user from `wa users create`,
 * cookie sessions (HttpOnly, SameSite=Strict, CSRF header on writes) and bearer sessions, and the
 * misuse a stolen or stale credential meets: a cookie write without the CSRF token, a session
 * presented the other way than it was issued, a token after sign-out, sessions after a password
 * change, and sign-in throttling (429 with Retry-After). Without WA_SMTP_URL a reset mail is
 * logged for the operator.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { as, cliUsersCreate, createUser, expectEnvelope, loginBearer, loginCookie, withCookie } from "./support.ts"

let service: Service
const password = "first-user-password"

beforeAll(async () => {
  service = await startService({ env: { WA_LOGIN_ATTEMPTS_PER_ACCOUNT: "4" } })
  await createUser(service, "owner@example.com", password, ["--tenant", "ten_default", "--name", "Owner"])
}, 120_000)

afterAll(async () => {
  await stopAndClean(service)
})

describe("wa users create", () => {
  // Runs `wa users create` (a process start each): minutes on a loaded 2-core host.
  it("refuses a missing --password-stdin, a short password and a taken email, creating nothing", { timeout: 180_000 }, async () => {
    const noStdin = await cliUsersCreate(service, ["--email", "x@example.com"], "long-enough-1")
    expect(noStdin.code).toBe(2)
    expect(noStdin.stderr).toContain("--password-stdin")
    const short = await cliUsersCreate(service, ["--email", "x@example.com", "--password-stdin"], "short")
    expect(short.code).toBe(1)
    expect(short.stderr).toContain("8 to 200")
    const taken = await cliUsersCreate(service, ["--email", "OWNER@example.com", "--password-stdin"], "long-enough-1")
    expect(taken.code).toBe(1)
    expect(taken.stderr).toContain("already exists")
    const login = await service.request("POST", "/v1/auth/login", { key: null, body: { email: "x@example.com", password: "long-enough-1" } })
    expectEnvelope(login, 401, "unauthorized")
  })
})

describe("cookie sessions", () => {
  it("sign-in sets an HttpOnly SameSite=Strict session cookie and a readable CSRF cookie; the body has no token", async () => {
    const session = await loginCookie(service, "Owner@Example.com", password)
    const sessionCookie = session.setCookies.find((c) => c.startsWith("wa_session="))!
    expect(sessionCookie).toMatch(/HttpOnly/)
    expect(sessionCookie).toMatch(/SameSite=Strict/)
    expect(sessionCookie).toMatch(/Path=\//)
    const csrfCookie = session.setCookies.find((c) => c.startsWith("wa_csrf="))!
    expect(csrfCookie).not.toMatch(/HttpOnly/)
    expect(csrfCookie.split(";")[0]).toBe(`wa_csrf=${session.csrf}`)
    const me = await withCookie(service, session, null)("GET", "/v1/auth/me")
    expect(me.status, me.text).toBe(200)
    expect(me.json).toMatchObject({ email: "owner@example.com", display_name: "Owner", session: "cookie" })
    expect(me.json.tenants).toEqual([expect.objectContaining({ tenant_id: "ten_default", role: "admin", status: "active" })])
  })

  it("a cookie write without the CSRF token, or with a wrong one, is 403 and changes nothing", async () => {
    const session = await loginCookie(service, "owner@example.com", password)
    const before = (await withCookie(service, session)("GET", "/v1/tenants")).json.items.length
    expectEnvelope(await withCookie(service, session, null)("POST", "/v1/tenants", { name: "forged" }), 403, "csrf_failed")
    expectEnvelope(await withCookie(service, session, "A".repeat(43))("POST", "/v1/tenants", { name: "forged" }), 403, "csrf_failed")
    // The CSRF token of another session does not fit this one.
    const other = await loginCookie(service, "owner@example.com", password)
    expectEnvelope(await withCookie(service, session, other.csrf)("POST", "/v1/tenants", { name: "forged" }), 403, "csrf_failed")
    // Project endpoints too: a bug report through the cookie needs the header.
    const bugs = `/v1/projects/${service.projectId}/bug_reports`
    const bugsBefore = (await withCookie(service, session)("GET", bugs)).json.total
    expectEnvelope(await withCookie(service, session, null)("POST", bugs, { message: "forged", page_path: "/" }), 403, "csrf_failed")
    expect((await withCookie(service, session)("GET", bugs)).json.total).toBe(bugsBefore)
    expect((await withCookie(service, session)("GET", "/v1/tenants")).json.items.length).toBe(before)
    const created = await withCookie(service, session)("POST", "/v1/tenants", { name: "real" })
    expect(created.status, created.text).toBe(201)
    expect(created.json).toMatchObject({ tenant_id: expect.stringMatching(/^ten_/), name: "real", role: "admin" })
  })

  it("a session is accepted only the way it was issued (cookie token as bearer, bearer token as cookie: 401)", async () => {
    const session = await loginCookie(service, "owner@example.com", password)
    const cookieToken = session.cookie.slice("wa_session=".length)
    expectEnvelope(await as(service, cookieToken)("GET", "/v1/auth/me"), 401, "unauthorized")
    const bearer = await loginBearer(service, "owner@example.com", password)
    const asCookie = await service.request("GET", "/v1/auth/me", { key: null, headers: { cookie: `wa_session=${bearer}` } })
    expectEnvelope(asCookie, 401, "unauthorized")
  })

  it("sign-out ends the session and clears the cookies", async () => {
    const session = await loginCookie(service, "owner@example.com", password)
    const out = await withCookie(service, session)("POST", "/v1/auth/logout")
    expect(out.status, out.text).toBe(200)
    const cleared = out.headers.getSetCookie()
    expect(cleared.find((c) => c.startsWith("wa_session="))).toMatch(/Max-Age=0|Expires=Thu, 01 Jan 1970/)
    // The old cookie value, replayed, is dead everywhere.
    expectEnvelope(await withCookie(service, session)("GET", "/v1/auth/me"), 401, "unauthorized")
    expectEnvelope(await withCookie(service, session)("GET", `/v1/projects/${service.projectId}/bug_reports`), 401, "unauthorized")
  })
})

describe("bearer sessions", () => {
  it("act on the account and on the tenant's projects; after sign-out they are 401", async () => {
    const token = await loginBearer(service, "owner@example.com", password)
    expect(token).toMatch(/^was_[A-Za-z0-9_-]{43}$/)
    const me = await as(service, token)("GET", "/v1/auth/me")
    expect(me.json).toMatchObject({ session: "bearer" })
    const sessions = await as(service, token)("GET", `/v1/projects/${service.projectId}/do_anything/sessions`)
    expect(sessions.status, sessions.text).toBe(200)
    expect((await as(service, token)("POST", "/v1/auth/logout")).status).toBe(200)
    expectEnvelope(await as(service, token)("GET", "/v1/auth/me"), 401, "unauthorized")
    expectEnvelope(await as(service, token)("GET", `/v1/projects/${service.projectId}/do_anything/sessions`), 401, "unauthorized")
  })

  // Runs `wa users create` (a process start each): minutes on a loaded 2-core host.
  it("a password change ends every other session; a wrong current password changes nothing", { timeout: 180_000 }, async () => {
    await createUser(service, "changer@example.com", "old-password-1", ["--tenant", "ten_default", "--role", "member"])
    const mine = await loginBearer(service, "changer@example.com", "old-password-1")
    const stolen = await loginBearer(service, "changer@example.com", "old-password-1")
    const wrong = await as(service, mine)("POST", "/v1/auth/password", { current_password: "not-it", new_password: "new-password-2" })
    expectEnvelope(wrong, 401, "unauthorized")
    expect((await as(service, stolen)("GET", "/v1/auth/me")).status).toBe(200)
    expectEnvelope(await as(service, mine)("POST", "/v1/auth/password", { current_password: "old-password-1", new_password: "short" }), 422, "validation_error")
    const changed = await as(service, mine)("POST", "/v1/auth/password", { current_password: "old-password-1", new_password: "new-password-2" })
    expect(changed.status, changed.text).toBe(200)
    expectEnvelope(await as(service, stolen)("GET", "/v1/auth/me"), 401, "unauthorized")
    expectEnvelope(await as(service, stolen)("GET", `/v1/projects/${service.projectId}/bug_reports`), 401, "unauthorized")
    expect((await as(service, mine)("GET", "/v1/auth/me")).status).toBe(200)
    expectEnvelope(await service.request("POST", "/v1/auth/login", { key: null, body: { email: "changer@example.com", password: "old-password-1" } }), 401)
    expect((await service.request("POST", "/v1/auth/login", { key: null, body: { email: "changer@example.com", password: "new-password-2" } })).status).toBe(200)
  })
})

describe("sign-in", () => {
  it("answers a wrong password and an unknown email alike; validates the body strictly", async () => {
    const wrongPassword = await service.request("POST", "/v1/auth/login", { key: null, body: { email: "owner@example.com", password: "nope" } })
    const unknown = await service.request("POST", "/v1/auth/login", { key: null, body: { email: "ghost@example.com", password: "nope" } })
    expectEnvelope(wrongPassword, 401, "unauthorized")
    expect(unknown.json).toEqual(wrongPassword.json)
    // Clear the owner's count with a success (later tests sign in as the owner).
    await loginBearer(service, "owner@example.com", password)
    const extra = await service.request("POST", "/v1/auth/login", { key: null, body: { email: "owner@example.com", password, admin: true } })
    expectEnvelope(extra, 422, "validation_error")
    const long = await service.request("POST", "/v1/auth/login", { key: null, body: { email: "owner@example.com", password: "x".repeat(129) } })
    expectEnvelope(long, 422, "validation_error")
    const shortEmail = await service.request("POST", "/v1/auth/login", { key: null, body: { email: "ab", password } })
    expectEnvelope(shortEmail, 422, "validation_error")
  })

  it("throttles an account after 4 attempts in the window: 429 with Retry-After, even for the right password", async () => {
    await createUser(service, "target@example.com", "target-password")
    for (let i = 0; i < 4; i++) {
      expectEnvelope(await service.request("POST", "/v1/auth/login", { key: null, body: { email: "target@example.com", password: `guess${i}` } }), 401)
    }
    const blocked = await service.request("POST", "/v1/auth/login", { key: null, body: { email: "TARGET@example.com", password: "target-password" } })
    expectEnvelope(blocked, 429, "rate_limit_exceeded")
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    expect(blocked.json.extra).toMatchObject({ scope: "account", limit: 4 })
    // Other accounts from the same address still sign in.
    expect((await service.request("POST", "/v1/auth/login", { key: null, body: { email: "owner@example.com", password } })).status).toBe(200)
  })

  it("lists no SSO providers while none is configured", async () => {
    const providers = await service.request("GET", "/v1/auth/providers", { key: null })
    expect(providers.status).toBe(200)
    expect(providers.json).toEqual({ providers: [] })
  })
})

describe("mail without WA_SMTP_URL", () => {
  it("a reset mail is written to the log for the operator, and its link works", async () => {
    await createUser(service, "nomail@example.com", "nomail-password-1")
    const asked = await service.request("POST", "/v1/auth/password/forgot", { key: null, body: { email: "nomail@example.com" } })
    expect(asked.status, asked.text).toBe(202)
    await expect.poll(() => service.logs.some((line) => line.annotations["mail_to"] === "nomail@example.com")).toBe(true)
    const logged = service.logs.find((line) => line.annotations["mail_to"] === "nomail@example.com")!
    expect(logged.level).toBe("WARN")
    expect(logged.annotations["mail_subject"]).toBe("Reset your password")
    const token = /\/console\/reset-password\?token=([A-Za-z0-9_-]+)/.exec(String(logged.annotations["mail_text"]))![1]!
    const reset = await service.request("POST", "/v1/auth/password/reset", { key: null, body: { token, new_password: "nomail-password-2" } })
    expect(reset.status, reset.text).toBe(200)
    await loginBearer(service, "nomail@example.com", "nomail-password-2")
  })
})
