/**
 * The authorization matrix over EVERY operation of the service's own OpenAPI document, with every
 * identity kind: no credential, an API key of another project, a tenant member and a tenant admin
 * (console sessions), and delegation tokens of the tenant's project with and without the scope the
 * operation needs (one token holding every `:read` scope, one every `:manage` scope, so each
 * operation meets one of each), and the scoped token on another project.
 *
 * Asserted per cell: no 2xx where access must be denied (the rules of README "Accounts" and
 * "Delegation"), every refusal in the `{code, detail, extra}` envelope, no 5xx, and 0 leaks: no
 * response to an identity outside the tenant (and no refusal to anyone) carries the tenant's
 * name, its users' emails or its project's data, and nothing answered on the other project
 * carries that project's data.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { requiredScope } from "../../src/delegation/scopes.ts"
import { delegationScopes } from "../../src/delegation/scopes.ts"
import { as } from "../accounts/support.ts"
import { fillPath, isEnvelope, type Operation, operationsOf, runBounded, sample, type SchemaObject } from "../support/openapi-fuzz.ts"
import { type ApiResponse, type Service, startService, stopAndClean } from "../support/service.ts"
import { createAccessKey, delegate, makeTenant, type Tenant } from "./support.ts"

type Identity = "none" | "otherKey" | "member" | "admin" | "tokenWith" | "tokenWithout" | "tokenOtherProject"
const identities: ReadonlyArray<Identity> = ["none", "otherKey", "member", "admin", "tokenWith", "tokenWithout", "tokenOtherProject"]

let service: Service
let doc: SchemaObject
let tenant: Tenant
let readToken: string
let manageToken: string
const TENANT_NAME = "matrix tenant"
const PROFILE_MARKER = "matrix-profile-secret-7Q"
const OTHER_MARKER = "other-project-secret-9Z"

beforeAll(async () => {
  for (const name of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CHROMIUM_PATH"]) delete process.env[name]
  service = await startService({
    env: {
      WA_RATE_LIMIT_REQUESTS: "1000000",
      WA_AUTH_FAILURES_PER_MINUTE: "1000000",
      WA_MAX_CONCURRENT_SESSIONS: "100000",
      // No browser, no model, no reachable engine: an allowed create ends at once instead of working.
      CHROMIUM_PATH: "/nonexistent/matrix-no-browser",
      WA_DUCKDUCKGO_BASE_URL: "http://127.0.0.1:9",
      WA_SEARCH_ENGINE_TIMEOUT_MS: "1000",
      WA_WEB_SEARCH_WAIT_SECONDS: "2",
      WA_DRAIN_SECONDS: "2"
    }
  })
  doc = (await service.request("GET", "/openapi.json", { key: null })).json
  tenant = await makeTenant(service, "matrix")
  expect(TENANT_NAME).toBe("matrix tenant")
  const key = await createAccessKey(service, tenant)
  readToken = (await delegate(service, key, tenant.memberCookie, { scopes: delegationScopes.filter((s) => s.endsWith(":read")) }, tenant.projectId)).token
  manageToken = (await delegate(service, key, tenant.memberCookie, { scopes: delegationScopes.filter((s) => s.endsWith(":manage")) }, tenant.projectId)).token
  // Data of the tenant's project and of the other (bootstrap) project that must not leak.
  expect((await as(service, tenant.adminToken)("POST", `/v1/projects/${tenant.projectId}/profiles`, { name: PROFILE_MARKER })).status).toBe(201)
  expect((await service.request("POST", `/v1/projects/${service.projectId}/profiles`, { body: { name: OTHER_MARKER } })).status).toBe(201)
}, 180_000)

afterAll(async () => {
  await stopAndClean(service)
})

/** The document's template as the router's (`{pid}` → `:pid`). */
const routeOf = (op: Operation) => op.path.replace(/\{([^}]+)\}/g, ":$1")

const tenantSecrets = () => [TENANT_NAME, tenant.adminEmail, tenant.memberEmail, PROFILE_MARKER]

const adminOnly = (op: Operation) =>
  /\/api_keys|\/webhook_secret|\/access_keys|\/invitations/.test(op.path) ||
  (op.method === "PATCH" && op.path.includes("/members/")) ||
  (op.method === "POST" && op.path === "/v1/tenants/{tid}/projects")

/** Whether the identity must be refused on the operation (on the tenant's project and tenant). */
const mustDeny = (identity: Identity, op: Operation): boolean => {
  const project = op.path.includes("{pid}")
  const consoleOnly = op.path.startsWith("/v1/auth/") || op.path.startsWith("/v1/tenants") || op.path.startsWith("/v1/delegations")
  const signed = op.path.startsWith("/api/v3/eak/")
  switch (identity) {
    case "none":
    case "tokenWithout":
      return true
    case "otherKey":
      return project || consoleOnly || signed
    case "member":
      return adminOnly(op) || signed
    case "admin":
      return signed
    case "tokenWith":
    case "tokenOtherProject":
      return identity === "tokenOtherProject" ? project || consoleOnly || signed : consoleOnly || signed || requiredScope(op.method, routeOf(op)) === undefined
  }
}

const credentialOf = (identity: Identity, op: Operation): string | null => {
  const needed = requiredScope(op.method, routeOf(op))
  const withToken = needed?.endsWith(":read") ? readToken : manageToken
  const withoutToken = needed?.endsWith(":read") ? manageToken : readToken
  return {
    none: null,
    otherKey: service.apiKey,
    member: tenant.memberToken,
    admin: tenant.adminToken,
    tokenWith: withToken,
    tokenWithout: withoutToken,
    tokenOtherProject: withToken
  }[identity]
}

const skipped = (identity: Identity, op: Operation) =>
  // Signing out would end the session the other cells use.
  (op.path === "/v1/auth/logout" && (identity === "member" || identity === "admin"))

describe("authorization matrix over every operation", () => {
  it("no 2xx where access must be denied, refusals in the envelope, no 5xx, 0 leaks", async () => {
    const operations = operationsOf(doc).filter((op) => op.secured)
    expect(operations.length).toBeGreaterThan(100)
    const cells = operations.flatMap((op) => identities.filter((identity) => !skipped(identity, op)).map((identity) => ({ op, identity })))
    const problems: Array<string> = []
    const leaks: Array<string> = []
    let allowed = 0
    await runBounded(6, cells.map(({ op, identity }) => async () => {
      const pid = identity === "tokenOtherProject" ? service.projectId : tenant.projectId
      const path = fillPath(op.path, { pid, tid: tenant.tenantId })
      const body = op.body === undefined ? undefined : sample(doc, op.body)
      const response: ApiResponse = await service.request(op.method, path, { key: credentialOf(identity, op), ...(body === undefined ? {} : { body }) })
      const label = `${op.method} ${op.path} as ${identity}: ${response.status}`
      if (response.status >= 500) problems.push(`${label} (5xx) ${response.text.slice(0, 160)}`)
      if (response.status >= 200 && response.status < 300) {
        allowed++
        if (mustDeny(identity, op)) problems.push(`${label} (must be denied) ${response.text.slice(0, 160)}`)
      } else if (!isEnvelope(response.json)) {
        problems.push(`${label} (not the envelope) ${response.text.slice(0, 160)}`)
      }
      const outsider = identity === "none" || identity === "otherKey" || identity === "tokenOtherProject"
      if (outsider || response.status >= 400) {
        for (const secret of tenantSecrets()) if (response.text.includes(secret)) leaks.push(`${label}: ${secret}`)
      }
      if (identity === "tokenOtherProject" && response.text.includes(OTHER_MARKER)) leaks.push(`${label}: ${OTHER_MARKER}`)
    }))
    expect(problems).toEqual([])
    expect(leaks).toEqual([])
    // The matrix is not vacuous: the allowed identities did get through somewhere.
    expect(allowed).toBeGreaterThan(50)
  })
})
