/**
 * The authorization matrix of the account endpoints and of a tenant's project, over real HTTP:
 * every endpoint tried with every identity kind (no credential, an API key of another project, a
 * signed-in user outside the tenant, a disabled member, a member, an admin, and an admin's cookie
 * session without the CSRF header). Each cell's status is asserted, state-changing cells that must
 * be refused are checked to have changed nothing, and no refused response (nor any response to an
 * identity outside the tenant) carries anything of the tenant: its name, its members' emails, its
 * project, its invitations or its bug reports.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ApiResponse, Service } from "../support/service.ts"
import { startService, stopAndClean } from "../support/service.ts"
import { as, type CookieSession, createUser, loginBearer, loginCookie, withCookie } from "./support.ts"

type Identity = "none" | "otherKey" | "outsider" | "disabled" | "member" | "admin" | "cookieNoCsrf"
const identities: ReadonlyArray<Identity> = ["none", "otherKey", "outsider", "disabled", "member", "admin", "cookieNoCsrf"]
/** Identities that must learn nothing about the tenant, whatever the status. */
const strangers = new Set<Identity>(["none", "otherKey", "outsider"])

let service: Service
let tenantId: string
let projectId: string
let memberId: string
let adminCookie: CookieSession
const tokens: Partial<Record<Identity, string | null>> = {}
const pendingInvitations: Partial<Record<Identity, string>> = {}

const secrets = ["Matrix Secret Tenant", "matrix-member@example.com", "matrix-admin@example.com", "matrix-disabled@example.com", "secret-project", "secret bug text", "invitee-secret@example.com"]

const send = (identity: Identity, method: string, path: string, body?: unknown): Promise<ApiResponse> =>
  identity === "cookieNoCsrf" ? withCookie(service, adminCookie, null)(method, path, body) : as(service, tokens[identity] ?? null)(method, path, body)

interface Cell {
  readonly name: string
  readonly method: string
  readonly path: () => string
  readonly body?: (identity: Identity) => unknown
  readonly expected: Record<Identity, number>
}

let unique = 0
const cells: ReadonlyArray<Cell> = [
  { name: "me", method: "GET", path: () => "/v1/auth/me", expected: { none: 401, otherKey: 403, outsider: 200, disabled: 200, member: 200, admin: 200, cookieNoCsrf: 200 } },
  { name: "list tenants", method: "GET", path: () => "/v1/tenants", expected: { none: 401, otherKey: 403, outsider: 200, disabled: 200, member: 200, admin: 200, cookieNoCsrf: 200 } },
  { name: "create tenant", method: "POST", path: () => "/v1/tenants", body: () => ({ name: "another" }), expected: { none: 401, otherKey: 403, outsider: 201, disabled: 201, member: 201, admin: 201, cookieNoCsrf: 403 } },
  { name: "list members", method: "GET", path: () => `/v1/tenants/${tenantId}/members`, expected: { none: 401, otherKey: 403, outsider: 404, disabled: 403, member: 200, admin: 200, cookieNoCsrf: 200 } },
  { name: "change a role", method: "PATCH", path: () => `/v1/tenants/${tenantId}/members/${memberId}`, body: () => ({ role: "member" }), expected: { none: 401, otherKey: 403, outsider: 404, disabled: 403, member: 403, admin: 200, cookieNoCsrf: 403 } },
  { name: "invite", method: "POST", path: () => `/v1/tenants/${tenantId}/invitations`, body: () => ({ email: `matrix-invite-${unique++}@example.com` }), expected: { none: 401, otherKey: 403, outsider: 404, disabled: 403, member: 403, admin: 201, cookieNoCsrf: 403 } },
  { name: "list invitations", method: "GET", path: () => `/v1/tenants/${tenantId}/invitations`, expected: { none: 401, otherKey: 403, outsider: 404, disabled: 403, member: 403, admin: 200, cookieNoCsrf: 200 } },
  { name: "list tenant projects", method: "GET", path: () => `/v1/tenants/${tenantId}/projects`, expected: { none: 401, otherKey: 403, outsider: 404, disabled: 403, member: 200, admin: 200, cookieNoCsrf: 200 } },
  { name: "create tenant project", method: "POST", path: () => `/v1/tenants/${tenantId}/projects`, body: () => ({ name: "p" }), expected: { none: 401, otherKey: 403, outsider: 404, disabled: 403, member: 403, admin: 201, cookieNoCsrf: 403 } },
  { name: "list API keys", method: "GET", path: () => `/v1/projects/${projectId}/api_keys`, expected: { none: 401, otherKey: 403, outsider: 403, disabled: 403, member: 403, admin: 200, cookieNoCsrf: 200 } },
  { name: "create API key", method: "POST", path: () => `/v1/projects/${projectId}/api_keys`, body: () => ({ name: "k" }), expected: { none: 401, otherKey: 403, outsider: 403, disabled: 403, member: 403, admin: 201, cookieNoCsrf: 403 } },
  { name: "webhook secret", method: "GET", path: () => `/v1/projects/${projectId}/webhook_secret`, expected: { none: 401, otherKey: 403, outsider: 403, disabled: 403, member: 403, admin: 200, cookieNoCsrf: 200 } },
  { name: "list webhook endpoints", method: "GET", path: () => `/v1/projects/${projectId}/webhooks`, expected: { none: 401, otherKey: 403, outsider: 403, disabled: 403, member: 403, admin: 200, cookieNoCsrf: 200 } },
  { name: "get a webhook endpoint", method: "GET", path: () => `/v1/projects/${projectId}/webhooks/wh_00000000000000000000000000`, expected: { none: 401, otherKey: 403, outsider: 403, disabled: 403, member: 403, admin: 404, cookieNoCsrf: 404 } },
  { name: "list sessions", method: "GET", path: () => `/v1/projects/${projectId}/do_anything/sessions`, expected: { none: 401, otherKey: 403, outsider: 403, disabled: 403, member: 200, admin: 200, cookieNoCsrf: 200 } },
  { name: "create bug report", method: "POST", path: () => `/v1/projects/${projectId}/bug_reports`, body: () => ({ message: "m", page_path: "/" }), expected: { none: 401, otherKey: 403, outsider: 403, disabled: 403, member: 201, admin: 201, cookieNoCsrf: 403 } },
  { name: "list bug reports", method: "GET", path: () => `/v1/projects/${projectId}/bug_reports`, expected: { none: 401, otherKey: 403, outsider: 403, disabled: 403, member: 200, admin: 200, cookieNoCsrf: 200 } },
  { name: "accept a bogus invitation", method: "POST", path: () => "/v1/invitations/accept", body: () => ({ token: "not-a-real-token" }), expected: { none: 404, otherKey: 401, outsider: 404, disabled: 404, member: 404, admin: 404, cookieNoCsrf: 403 } },
  { name: "password change (wrong current)", method: "POST", path: () => "/v1/auth/password", body: () => ({ current_password: "wrong-wrong", new_password: "whatever-123" }), expected: { none: 401, otherKey: 403, outsider: 401, disabled: 401, member: 401, admin: 401, cookieNoCsrf: 403 } }
]

beforeAll(async () => {
  service = await startService()
  await createUser(service, "matrix-admin@example.com", "admin-password")
  await createUser(service, "matrix-member@example.com", "member-password")
  await createUser(service, "matrix-disabled@example.com", "disabled-password")
  await createUser(service, "matrix-outsider@example.com", "outsider-password")
  tokens.admin = await loginBearer(service, "matrix-admin@example.com", "admin-password")
  tokens.member = await loginBearer(service, "matrix-member@example.com", "member-password")
  tokens.disabled = await loginBearer(service, "matrix-disabled@example.com", "disabled-password")
  tokens.outsider = await loginBearer(service, "matrix-outsider@example.com", "outsider-password")
  tokens.none = null
  // The bootstrap project is in the default tenant: its key is a key of another project.
  tokens.otherKey = service.apiKey
  adminCookie = await loginCookie(service, "matrix-admin@example.com", "admin-password")
  const a = as(service, tokens.admin)
  tenantId = (await a("POST", "/v1/tenants", { name: "Matrix Secret Tenant" })).json.tenant_id
  projectId = (await a("POST", `/v1/tenants/${tenantId}/projects`, { name: "secret-project" })).json.id
  for (const [email, token] of [["matrix-member@example.com", tokens.member], ["matrix-disabled@example.com", tokens.disabled]] as const) {
    const sent = await a("POST", `/v1/tenants/${tenantId}/invitations`, { email })
    const invite = new URL(sent.json.invite_url).searchParams.get("token")
    const accepted = await as(service, token)("POST", "/v1/invitations/accept", { token: invite })
    expect(accepted.status, accepted.text).toBe(200)
    if (email === "matrix-member@example.com") memberId = accepted.json.user_id
    else expect((await a("PATCH", `/v1/tenants/${tenantId}/members/${accepted.json.user_id}`, { status: "disabled" })).status).toBe(200)
  }
  expect((await a("POST", `/v1/projects/${projectId}/bug_reports`, { message: "secret bug text", page_path: "/" })).status).toBe(201)
  for (const identity of identities) {
    const sent = await a("POST", `/v1/tenants/${tenantId}/invitations`, { email: identity === "admin" ? "invitee-secret@example.com" : `revoke-${identity}@example.com` })
    pendingInvitations[identity] = sent.json.invitation_id
  }
}, 180_000)

afterAll(async () => {
  await stopAndClean(service)
})

const leaks = (identity: Identity, response: ApiResponse) =>
  strangers.has(identity) || response.status >= 400 ? secrets.filter((secret) => response.text.includes(secret)) : []

describe("authorization matrix", () => {
  it("every endpoint × every identity: the expected status, the error envelope, and 0 leaks", async () => {
    const mismatches: Array<string> = []
    const leaked: Array<string> = []
    for (const cell of cells) {
      for (const identity of identities) {
        const response = await send(identity, cell.method, cell.path(), cell.body?.(identity))
        if (response.status !== cell.expected[identity]) mismatches.push(`${cell.name} as ${identity}: ${response.status} ${response.text.slice(0, 200)}`)
        if (response.status >= 400) expect(Object.keys(response.json).sort()).toEqual(["code", "detail", "extra"])
        for (const secret of leaks(identity, response)) leaked.push(`${cell.name} as ${identity}: ${secret}`)
      }
    }
    expect(mismatches).toEqual([])
    expect(leaked).toEqual([])
  })

  it("revoking an invitation: only the admin (with CSRF for a cookie) can, the others leave it pending", async () => {
    const leaked: Array<string> = []
    for (const identity of identities) {
      const response = await send(identity, "DELETE", `/v1/tenants/${tenantId}/invitations/${pendingInvitations[identity]}`)
      const expected = { none: 401, otherKey: 403, outsider: 404, disabled: 403, member: 403, admin: 200, cookieNoCsrf: 403 }[identity]
      expect(response.status, `${identity}: ${response.text}`).toBe(expected)
      for (const secret of leaks(identity, response)) leaked.push(`${identity}: ${secret}`)
    }
    expect(leaked).toEqual([])
    const list = (await as(service, tokens.admin!)("GET", `/v1/tenants/${tenantId}/invitations?limit=100`)).json.items as Array<{ id: string; status: string }>
    for (const identity of identities) {
      expect(list.find((i) => i.id === pendingInvitations[identity])?.status).toBe(identity === "admin" ? "revoked" : "pending")
    }
  })

  it("refused writes created nothing: one key, projects and bug reports only from the allowed identities", async () => {
    const a = as(service, tokens.admin!)
    // admin created one key (the cookie without CSRF was refused).
    expect((await a("GET", `/v1/projects/${projectId}/api_keys`)).json.total).toBe(1)
    // The setup project plus the admin's one.
    expect((await a("GET", `/v1/tenants/${tenantId}/projects`)).json.items).toHaveLength(2)
    // The setup report plus the member's and the admin's.
    expect((await a("GET", `/v1/projects/${projectId}/bug_reports`)).json.total).toBe(3)
    // The admin is still admin and the member still member; the disabled member still disabled.
    const members = (await a("GET", `/v1/tenants/${tenantId}/members`)).json.items as Array<{ email: string; role: string; status: string }>
    expect(members.map((m) => [m.email, m.role, m.status]).sort()).toEqual([
      ["matrix-admin@example.com", "admin", "active"],
      ["matrix-disabled@example.com", "member", "disabled"],
      ["matrix-member@example.com", "member", "active"]
    ])
  })

  it("the OpenAPI document lists the account endpoints", async () => {
    const doc = (await service.request("GET", "/openapi.json", { key: null })).json
    for (const path of [
      "/v1/auth/login", "/v1/auth/logout", "/v1/auth/password", "/v1/auth/me", "/v1/auth/providers", "/v1/invitations/accept",
      "/v1/tenants", "/v1/tenants/{tid}/members", "/v1/tenants/{tid}/members/{user_id}", "/v1/tenants/{tid}/invitations",
      "/v1/tenants/{tid}/invitations/{invitation_id}", "/v1/tenants/{tid}/projects", "/v1/projects/{pid}/bug_reports"
    ]) {
      expect(doc.paths[path], path).toBeDefined()
    }
  })
})
