/**
 * Helpers of the delegation suites: a tenant with an admin, a member and a project; an access key;
 * signed requests; consent driven over HTTP with a cookie session (the Chromium tests drive the
 * page itself); and the whole flow up to a delegation token.
 */
import { expect } from "vitest"
import { signRequest } from "../../src/delegation/signing.ts"
import type { ApiResponse, Service } from "../support/service.ts"
import { as, createUser, loginBearer, loginCookie, type CookieSession } from "../accounts/support.ts"

export interface Tenant {
  readonly tenantId: string
  readonly projectId: string
  readonly adminEmail: string
  readonly adminToken: string
  readonly adminCookie: CookieSession
  readonly memberEmail: string
  readonly memberToken: string
  readonly memberCookie: CookieSession
  readonly memberId: string
}

export const PASSWORD = "delegation-password"

export const makeTenant = async (service: Service, label: string): Promise<Tenant> => {
  const adminEmail = `${label}-admin@example.com`
  const memberEmail = `${label}-member@example.com`
  await createUser(service, adminEmail, PASSWORD)
  await createUser(service, memberEmail, PASSWORD)
  const adminToken = await loginBearer(service, adminEmail, PASSWORD)
  const memberToken = await loginBearer(service, memberEmail, PASSWORD)
  const a = as(service, adminToken)
  const tenantId = (await a("POST", "/v1/tenants", { name: `${label} tenant` })).json.tenant_id
  const projectId = (await a("POST", `/v1/tenants/${tenantId}/projects`, { name: `${label}-project` })).json.id
  const sent = await a("POST", `/v1/tenants/${tenantId}/invitations`, { email: memberEmail })
  const accepted = await as(service, memberToken)("POST", "/v1/invitations/accept", { token: new URL(sent.json.invite_url).searchParams.get("token") })
  expect(accepted.status, accepted.text).toBe(200)
  return {
    tenantId,
    projectId,
    adminEmail,
    adminToken,
    adminCookie: await loginCookie(service, adminEmail, PASSWORD),
    memberEmail,
    memberToken,
    memberCookie: await loginCookie(service, memberEmail, PASSWORD),
    memberId: accepted.json.user_id
  }
}

export interface AccessKey {
  readonly id: string
  readonly secret: string
}

export const createAccessKey = async (service: Service, tenant: Tenant, body: unknown = {}): Promise<AccessKey> => {
  const created = await as(service, tenant.adminToken)("POST", `/v1/tenants/${tenant.tenantId}/access_keys`, body)
  expect(created.status, created.text).toBe(201)
  return { id: created.json.id, secret: created.json.secret_key }
}

/** A request signed with the access key (options override the timestamp, nonce, secret, or send another body than signed). */
export const signed = async (
  service: Service,
  key: AccessKey,
  method: string,
  pathname: string,
  body: unknown,
  options: { readonly timestamp?: number; readonly nonce?: string; readonly secret?: string; readonly sendBody?: string; readonly authorization?: string } = {}
): Promise<ApiResponse & { readonly authorization: string }> => {
  const text = JSON.stringify(body)
  const authorization = options.authorization ?? signRequest({
    accessKeyId: key.id,
    secret: options.secret ?? key.secret,
    method,
    pathWithQuery: pathname,
    body: text,
    ...(options.timestamp === undefined ? {} : { timestamp: options.timestamp }),
    ...(options.nonce === undefined ? {} : { nonce: options.nonce })
  })
  const response = await service.request(method, pathname, { key: null, rawBody: options.sendBody ?? text, headers: { authorization } })
  return { ...response, authorization }
}

export const requestBody = (overrides: Record<string, unknown> = {}) => ({
  mode: "interactive",
  agent: "acme-assistant",
  scopes: ["web_agent.do_anything:read", "web_agent.web_search:manage"],
  redirectUri: "http://localhost:9/callback",
  state: `state-${Math.random().toString(36).slice(2)}`,
  userId: "acme-user-42",
  expiresIn: 3600,
  ...overrides
})

export const startDelegation = async (service: Service, key: AccessKey, overrides: Record<string, unknown> = {}) => {
  const body = requestBody(overrides)
  const response = await signed(service, key, "POST", "/api/v3/eak/delegations", body)
  expect(response.status, response.text).toBe(201)
  return { grantId: response.json.grantId as string, authorizationUrl: response.json.authorizationUrl as string, state: body.state as string }
}

const cookieHeaders = (session: CookieSession) => ({ cookie: session.cookie })

/** The consent page as a signed-in browser sees it (the cookie session), and its form's CSRF token. */
export const consentPage = async (service: Service, session: CookieSession, grantId: string) => {
  const response = await service.request("GET", `/v1/delegations/consent?grant_id=${grantId}`, { key: null, headers: cookieHeaders(session) })
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(response.text)?.[1]
  return { response, csrf }
}

/** Submits the consent form; answers the redirect's Location (not followed). */
export const decide = async (service: Service, session: CookieSession, grantId: string, decision: "approve" | "deny", extra: Record<string, string> = {}) => {
  const { csrf, response } = await consentPage(service, session, grantId)
  expect(csrf, response.text).toBeDefined()
  const form = new URLSearchParams({ grant_id: grantId, csrf_token: csrf!, decision, ...extra })
  const posted = await service.fetch(`${service.url}/v1/delegations/consent`, {
    method: "POST",
    redirect: "manual",
    headers: { ...cookieHeaders(session), "content-type": "application/x-www-form-urlencoded", origin: service.url },
    body: form.toString()
  })
  return { status: posted.status, location: posted.headers.get("location"), text: await posted.text() }
}

/** The whole flow over HTTP: request, approval by `session`, exchange. */
export const delegate = async (service: Service, key: AccessKey, session: CookieSession, overrides: Record<string, unknown> = {}, projectId?: string) => {
  const started = await startDelegation(service, key, overrides)
  const decided = await decide(service, session, started.grantId, "approve", projectId === undefined ? {} : { project_id: projectId })
  expect(decided.status, decided.text).toBe(303)
  const callback = new URL(decided.location!)
  const code = callback.searchParams.get("code")!
  const completed = await signed(service, key, "POST", "/api/v3/eak/delegations/complete", { grantId: started.grantId, code, state: started.state })
  expect(completed.status, completed.text).toBe(200)
  return { ...started, code, grant: completed.json, token: completed.json.delegationToken as string }
}
