/**
 * Tenants, members, invitations, tenant projects and bug reports over real HTTP: the invitation
 * lifecycle (pending, accepted, revoked, expired; accept by a new account or a signed-in one),
 * role rules (README "Accounts"), disabling a member, the last admin, API keys recording the user
 * who created them, and bug report limits.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"
import { as, createUser, expectEnvelope, loginBearer } from "./support.ts"

let service: Service
let alice: { id: string; token: string }
let tenantId: string
let projectId: string

const admin = () => as(service, alice.token)

/** Invites `email` as `role` with alice and returns the invitation id and token. */
const invite = async (email: string, role?: "admin" | "member") => {
  const response = await admin()("POST", `/v1/tenants/${tenantId}/invitations`, { email, ...(role === undefined ? {} : { role }) })
  expect(response.status, response.text).toBe(201)
  const url = new URL(response.json.invite_url)
  return { id: response.json.invitation_id as string, token: url.searchParams.get("token")!, json: response.json }
}

const invitation = async (id: string) => {
  const list = await admin()("GET", `/v1/tenants/${tenantId}/invitations?limit=100`)
  return list.json.items.find((i: { id: string }) => i.id === id)
}

/** A member joined through an invitation (a new account), signed in with a bearer session. */
const join = async (email: string, role: "admin" | "member" = "member") => {
  const { token } = await invite(email, role)
  const accepted = await service.request("POST", "/v1/invitations/accept", { key: null, body: { token, password: `${email}-pw` } })
  expect(accepted.status, accepted.text).toBe(200)
  return { id: accepted.json.user_id as string, token: await loginBearer(service, email, `${email}-pw`) }
}

beforeAll(async () => {
  service = await startService({ env: { WA_BUG_REPORT_SCREENSHOT_MAX_BYTES: "2000" } })
  const user = await createUser(service, "alice@example.com", "alice-password")
  alice = { id: user.user_id, token: await loginBearer(service, "alice@example.com", "alice-password") }
  const tenant = await admin()("POST", "/v1/tenants", { name: "Acme" })
  expect(tenant.status, tenant.text).toBe(201)
  tenantId = tenant.json.tenant_id
  const project = await admin()("POST", `/v1/tenants/${tenantId}/projects`, { name: "acme-web" })
  expect(project.status, project.text).toBe(201)
  projectId = project.json.id
}, 120_000)

afterAll(async () => {
  await stopAndClean(service)
})

describe("invitations", () => {
  it("invite, accept as a new account, then the invitation is accepted and cannot be used again", async () => {
    const sent = await invite("bob@example.com")
    expect(sent.json).toEqual({ invitation_id: expect.stringMatching(/^inv_/), invite_url: expect.stringContaining("/console/accept-invitation?token="), expires_at: expect.any(String) })
    expect(sent.token.length).toBeGreaterThanOrEqual(8)
    const pending = await invitation(sent.id)
    expect(pending).toMatchObject({ tenant_id: tenantId, email: "bob@example.com", role: "member", status: "pending", invited_by: alice.id, accepted_at: null, revoked_at: null })
    const accepted = await service.request("POST", "/v1/invitations/accept", { key: null, body: { token: sent.token, password: "bob-password", display_name: "Bob" } })
    expect(accepted.status, accepted.text).toBe(200)
    expect(accepted.json).toEqual({ tenant_id: tenantId, user_id: expect.stringMatching(/^usr_/), role: "member" })
    expect(await invitation(sent.id)).toMatchObject({ status: "accepted", accepted_at: expect.any(String) })
    const again = await service.request("POST", "/v1/invitations/accept", { key: null, body: { token: sent.token, password: "bob-password" } })
    expectEnvelope(again, 409, "invitation_accepted")
    const members = await admin()("GET", `/v1/tenants/${tenantId}/members`)
    expect(members.json.items).toContainEqual({
      user_id: accepted.json.user_id,
      auth_identity_id: expect.stringMatching(/^aid_/),
      role: "member",
      status: "active",
      display_name: "Bob",
      email: "bob@example.com",
      invited_by_user_id: alice.id,
      created_at: expect.any(String)
    })
    // Bob signs in with the password he chose.
    await loginBearer(service, "bob@example.com", "bob-password")
  })

  it("revoked and expired invitations cannot be accepted; an unknown token is 404", async () => {
    const revoked = await invite("carol@example.com")
    const revoke = await admin()("DELETE", `/v1/tenants/${tenantId}/invitations/${revoked.id}`)
    expect(revoke.status, revoke.text).toBe(200)
    expect(revoke.json).toMatchObject({ id: revoked.id, status: "revoked", revoked_at: expect.any(String) })
    expectEnvelope(await admin()("DELETE", `/v1/tenants/${tenantId}/invitations/${revoked.id}`), 409, "invitation_not_pending")
    expectEnvelope(await service.request("POST", "/v1/invitations/accept", { key: null, body: { token: revoked.token, password: "carol-password" } }), 409, "invitation_revoked")

    const expiring = await invite("dan@example.com")
    const db = await embeddedDatabaseClient(service.dataDir)
    try {
      await db.query("UPDATE invitations SET expires_at = now() - interval '1 second' WHERE id = $1", [expiring.id])
    } finally {
      await db.end()
    }
    expect(await invitation(expiring.id)).toMatchObject({ status: "expired" })
    expectEnvelope(await service.request("POST", "/v1/invitations/accept", { key: null, body: { token: expiring.token, password: "dan-password" } }), 409, "invitation_expired")
    // An expired invitation no longer blocks a new one for the same email.
    await invite("dan@example.com")

    expectEnvelope(await service.request("POST", "/v1/invitations/accept", { key: null, body: { token: "no-such-token-at-all" } }), 404, "invitation_not_found")
    // Nobody joined.
    const emails = (await admin()("GET", `/v1/tenants/${tenantId}/members`)).json.items.map((m: { email: string }) => m.email)
    expect(emails).not.toContain("carol@example.com")
    expect(emails).not.toContain("dan@example.com")
  })

  it("a signed-in user accepts with their account; another account's email is 403; a duplicate is 409", async () => {
    await createUser(service, "erin@example.com", "erin-password")
    const erin = await loginBearer(service, "erin@example.com", "erin-password")
    await createUser(service, "mallory@example.com", "mallory-password")
    const mallory = await loginBearer(service, "mallory@example.com", "mallory-password")
    const sent = await invite("ERIN@example.com", "admin")
    expectEnvelope(await as(service, mallory)("POST", "/v1/invitations/accept", { token: sent.token }), 403, "forbidden")
    // Not signed in and no password: the account exists, so it must sign in (no password given: 422).
    expectEnvelope(await service.request("POST", "/v1/invitations/accept", { key: null, body: { token: sent.token } }), 422, "validation_error")
    const accepted = await as(service, erin)("POST", "/v1/invitations/accept", { token: sent.token })
    expect(accepted.status, accepted.text).toBe(200)
    expect(accepted.json).toMatchObject({ tenant_id: tenantId, role: "admin" })
    expectEnvelope(await admin()("POST", `/v1/tenants/${tenantId}/invitations`, { email: "erin@example.com" }), 409, "already_member")
    await invite("frank@example.com")
    expectEnvelope(await admin()("POST", `/v1/tenants/${tenantId}/invitations`, { email: "Frank@example.com" }), 409, "invitation_pending")
    // Accepting without a session for an email that has an account: sign in first.
    const forMallory = await invite("mallory@example.com")
    expectEnvelope(await service.request("POST", "/v1/invitations/accept", { key: null, body: { token: forMallory.token, password: "whatever-123" } }), 409, "email_taken")
  })

  it("validates invitation requests strictly", async () => {
    const path = `/v1/tenants/${tenantId}/invitations`
    expectEnvelope(await admin()("POST", path, { email: "not-an-email" }), 422, "validation_error")
    expectEnvelope(await admin()("POST", path, { email: "x@example.com", role: "owner" }), 422, "validation_error")
    expectEnvelope(await admin()("POST", path, { email: "x@example.com", extra: 1 }), 422, "validation_error")
    expectEnvelope(await admin()("POST", path, { email: `${"a".repeat(250)}@example.com` }), 422, "validation_error")
    expectEnvelope(await service.request("POST", "/v1/invitations/accept", { key: null, body: { token: "short" } }), 422, "validation_error")
  })
})

describe("roles", () => {
  it("a member reads the tenant and uses its projects but cannot invite, change roles, create projects or keys", async () => {
    const member = await join("member1@example.com")
    const m = as(service, member.token)
    expect((await m("GET", `/v1/tenants/${tenantId}/members`)).status).toBe(200)
    expect((await m("GET", `/v1/tenants/${tenantId}/projects`)).json.items).toEqual([expect.objectContaining({ id: projectId, tenant_id: tenantId })])
    expect((await m("GET", `/v1/projects/${projectId}/do_anything/sessions`)).status).toBe(200)
    expectEnvelope(await m("POST", `/v1/tenants/${tenantId}/invitations`, { email: "z@example.com" }), 403, "forbidden")
    expectEnvelope(await m("GET", `/v1/tenants/${tenantId}/invitations`), 403, "forbidden")
    expectEnvelope(await m("PATCH", `/v1/tenants/${tenantId}/members/${member.id}`, { role: "admin" }), 403, "forbidden")
    expectEnvelope(await m("POST", `/v1/tenants/${tenantId}/projects`, { name: "mine" }), 403, "forbidden")
    expectEnvelope(await m("POST", `/v1/projects/${projectId}/api_keys`, { name: "k" }), 403, "forbidden")
    expectEnvelope(await m("GET", `/v1/projects/${projectId}/webhook_secret`), 403, "forbidden")
    // The bootstrap project is in the default tenant, which the member is not in.
    expectEnvelope(await m("GET", `/v1/projects/${service.projectId}/do_anything/sessions`), 403, "forbidden")
    expectEnvelope(await m("POST", `/v1/projects/${service.projectId}/api_keys`, { name: "k" }), 403, "forbidden")
    // Nothing was created.
    expect((await admin()("GET", `/v1/tenants/${tenantId}/projects`)).json.items).toHaveLength(1)
    expect((await admin()("GET", `/v1/projects/${projectId}/api_keys`)).json.total).toBe(0)
  })

  it("an admin's API key records the admin as user_id and works as a project key", async () => {
    const created = await admin()("POST", `/v1/projects/${projectId}/api_keys`, { name: "from console" })
    expect(created.status, created.text).toBe(201)
    expect(created.json).toMatchObject({ project_id: projectId, user_id: alice.id, created_by_key_id: null, scope: "run" })
    const list = await as(service, created.json.secret_token)("GET", `/v1/projects/${projectId}/do_anything/sessions`)
    expect(list.status).toBe(200)
    // A key created with an API key keeps user_id null.
    const viaKey = await as(service, service.apiKey)("POST", `/v1/projects/${service.projectId}/api_keys`, { name: "k2" })
    expect(viaKey.json).toMatchObject({ user_id: null })
  })

  it("a disabled member's session gets 403 on the tenant and its projects until re-enabled", async () => {
    const member = await join("member2@example.com")
    const m = as(service, member.token)
    const disabled = await admin()("PATCH", `/v1/tenants/${tenantId}/members/${member.id}`, { status: "disabled" })
    expect(disabled.status, disabled.text).toBe(200)
    expect(disabled.json).toMatchObject({ user_id: member.id, status: "disabled" })
    expectEnvelope(await m("GET", `/v1/tenants/${tenantId}/members`), 403, "forbidden")
    expectEnvelope(await m("GET", `/v1/projects/${projectId}/do_anything/sessions`), 403, "forbidden")
    expectEnvelope(await m("POST", `/v1/projects/${projectId}/bug_reports`, { message: "x", page_path: "/" }), 403, "forbidden")
    // The account itself still works (its own page), only the tenant is closed to it.
    expect((await m("GET", "/v1/auth/me")).json.tenants).toContainEqual(expect.objectContaining({ tenant_id: tenantId, status: "disabled" }))
    await admin()("PATCH", `/v1/tenants/${tenantId}/members/${member.id}`, { status: "active" })
    expect((await m("GET", `/v1/projects/${projectId}/do_anything/sessions`)).status).toBe(200)
  })

  it("the last active admin cannot be demoted or disabled; with a second admin it can", async () => {
    const tenant = await admin()("POST", "/v1/tenants", { name: "Solo" })
    const solo = tenant.json.tenant_id
    expectEnvelope(await admin()("PATCH", `/v1/tenants/${solo}/members/${alice.id}`, { role: "member" }), 409, "last_admin")
    expectEnvelope(await admin()("PATCH", `/v1/tenants/${solo}/members/${alice.id}`, { status: "disabled" }), 409, "last_admin")
    expectEnvelope(await admin()("PATCH", `/v1/tenants/${solo}/members/${alice.id}`, {}), 422, "validation_error")
    expectEnvelope(await admin()("PATCH", `/v1/tenants/${solo}/members/usr_nobody`, { role: "member" }), 404, "member_not_found")
    const members = (await admin()("GET", `/v1/tenants/${solo}/members`)).json.items
    expect(members).toEqual([expect.objectContaining({ user_id: alice.id, role: "admin", status: "active" })])
  })
})

describe("idempotency and rate limits on account writes", () => {
  it("the same Idempotency-Key replays the tenant creation (same id, one tenant); responses carry RateLimit headers", async () => {
    const key = crypto.randomUUID()
    const headers = { "idempotency-key": key }
    const first = await service.request("POST", "/v1/tenants", { key: alice.token, headers, body: { name: "Once" } })
    const second = await service.request("POST", "/v1/tenants", { key: alice.token, headers, body: { name: "Once" } })
    expect(first.status, first.text).toBe(201)
    expect(second.status).toBe(201)
    expect(second.json.tenant_id).toBe(first.json.tenant_id)
    const named = (await admin()("GET", "/v1/tenants")).json.items.filter((t: { name: string }) => t.name === "Once")
    expect(named).toHaveLength(1)
    const other = await service.request("POST", "/v1/tenants", { key: alice.token, headers, body: { name: "Different" } })
    expectEnvelope(other, 422)
    expect(first.headers.get("ratelimit")).toMatch(/limit=\d+, remaining=\d+/)
  })
})

describe("the tenant list", () => {
  it("pages by tenant id with a cursor, every tenant once", async () => {
    for (const name of ["Paged 1", "Paged 2", "Paged 3"]) expect((await admin()("POST", "/v1/tenants", { name })).status).toBe(201)
    const all = await admin()("GET", "/v1/tenants?limit=100")
    expect(all.json.next_cursor).toBeNull()
    const ids: Array<string> = all.json.items.map((t: { tenant_id: string }) => t.tenant_id)
    expect(ids.length).toBeGreaterThanOrEqual(4)
    expect(ids).toEqual([...ids].sort())
    const paged: Array<string> = []
    let cursor: string | null = null
    do {
      const page: { json: { items: Array<{ tenant_id: string }>; next_cursor: string | null } } =
        await admin()("GET", `/v1/tenants?limit=2${cursor === null ? "" : `&cursor=${cursor}`}`)
      expect(page.json.items.length).toBeLessThanOrEqual(2)
      paged.push(...page.json.items.map((t) => t.tenant_id))
      cursor = page.json.next_cursor
    } while (cursor !== null && paged.length <= ids.length)
    expect(paged).toEqual(ids)
    expectEnvelope(await admin()("GET", "/v1/tenants?cursor=not-ours"), 400)
  })
})

describe("bug reports", () => {
  const path = () => `/v1/projects/${projectId}/bug_reports`
  const png = "data:image/png;base64," + Buffer.from("png-bytes").toString("base64")

  it("create with every field; a member lists their own, an admin and an API key list all", async () => {
    const member = await join("reporter@example.com")
    const created = await as(service, member.token)("POST", path(), {
      message: "the button does nothing",
      page_path: "/console/sessions",
      input_method: "voice",
      screenshot_data_url: png,
      user_agent: "Mozilla/5.0",
      viewport_width: 1280,
      viewport_height: 0
    })
    expect(created.status, created.text).toBe(201)
    expect(created.json).toEqual({
      id: expect.stringMatching(/^bug_/),
      project_id: projectId,
      user_id: member.id,
      message: "the button does nothing",
      page_path: "/console/sessions",
      screenshot_data_url: png,
      input_method: "voice",
      viewport_width: 1280,
      viewport_height: 0,
      user_agent: "Mozilla/5.0",
      status: "open",
      created_at: expect.any(String)
    })
    const byAdmin = await admin()("POST", path(), { message: "admin report", page_path: "/" })
    expect(byAdmin.json).toMatchObject({ input_method: "text", screenshot_data_url: null, user_id: alice.id })
    const mine = await as(service, member.token)("GET", path())
    expect(mine.json.items.map((r: { id: string }) => r.id)).toEqual([created.json.id])
    expect(mine.json.total).toBe(1)
    const all = await admin()("GET", path())
    expect(all.json.items.map((r: { id: string }) => r.id)).toEqual([byAdmin.json.id, created.json.id])
    const key = await admin()("POST", `/v1/projects/${projectId}/api_keys`, { name: "reader" })
    const viaKey = await as(service, key.json.secret_token)("GET", `${path()}?limit=1`)
    expect(viaKey.json).toMatchObject({ total: 2, next_cursor: expect.any(String) })
    const byKey = await as(service, key.json.secret_token)("POST", path(), { message: "from a program", page_path: "/api" })
    expect(byKey.json).toMatchObject({ user_id: null })
  })

  it("refuses every field over its limit, a screenshot over the cap or not an image data URL, creating nothing", async () => {
    const before = (await admin()("GET", path())).json.total
    const base = { message: "m", page_path: "/" }
    for (const body of [
      { ...base, message: "" },
      { ...base, message: "x".repeat(2001) },
      { ...base, page_path: "x".repeat(2049) },
      { ...base, user_agent: "x".repeat(513) },
      { ...base, viewport_width: 10001 },
      { ...base, viewport_height: -1 },
      { ...base, input_method: "telepathy" },
      { ...base, status: "closed" },
      { ...base, screenshot_data_url: "data:image/png;base64," + "A".repeat(2000) },
      { ...base, screenshot_data_url: "data:text/html;base64,PGgxPmhpPC9oMT4=" },
      { ...base, screenshot_data_url: "https://example.com/x.png" }
    ]) {
      expectEnvelope(await admin()("POST", path(), body), 422, "validation_error")
    }
    expect((await admin()("GET", path())).json.total).toBe(before)
  })
})
