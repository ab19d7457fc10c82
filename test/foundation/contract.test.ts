/**
 * The contract's common rules through real HTTP against the real service (embedded PostgreSQL):
 * errors in the envelope, limits, auth, idempotency, pagination, request ids, OpenAPI.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"

let service: Service
const keysPath = () => `/v1/projects/${service.projectId}/api_keys`

beforeAll(async () => {
  service = await startService({ env: { WA_KEY_REVOCATION_GRACE_SECONDS: "2" } })
})
afterAll(() => stopAndClean(service))

const expectEnvelope = (json: any, code: string) => {
  expect(json).toMatchObject({ code, detail: expect.any(String), extra: expect.any(Object) })
  expect(Object.keys(json).sort()).toEqual(["code", "detail", "extra"])
}

describe("health", () => {
  it("answers /healthz and /readyz without a key", async () => {
    expect((await service.request("GET", "/healthz", { key: null })).json).toEqual({ status: "ok" })
    expect((await service.request("GET", "/readyz", { key: null })).json).toEqual({ status: "ready" })
  })
})

describe("request ids", () => {
  it("echoes a given X-Request-Id and generates one otherwise, and logs it", async () => {
    const given = await service.request("GET", "/healthz", { headers: { "x-request-id": "trace-123.abc" } })
    expect(given.headers.get("x-request-id")).toBe("trace-123.abc")
    const generated = await service.request("GET", "/healthz")
    expect(generated.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
    const unsafe = await service.request("GET", "/healthz", { headers: { "x-request-id": "bad id with spaces" } })
    expect(unsafe.headers.get("x-request-id")).not.toBe("bad id with spaces")
    await new Promise((r) => setTimeout(r, 100))
    expect(service.logs.some((line) => line.annotations?.["request_id"] === "trace-123.abc" && line.annotations?.["status"] === 200)).toBe(true)
  })
})

describe("framework errors are in the envelope", () => {
  it("unknown route is 404 not_found", async () => {
    const response = await service.request("GET", "/v1/nothing-here")
    expect(response.status).toBe(404)
    expectEnvelope(response.json, "not_found")
  })

  it("wrong method is 405 with Allow", async () => {
    const response = await service.request("PUT", keysPath())
    expect(response.status).toBe(405)
    expectEnvelope(response.json, "method_not_allowed")
    expect(response.headers.get("allow")).toContain("GET")
  })

  it("malformed JSON is 400 bad_request and creates nothing", async () => {
    const before = (await service.request("GET", keysPath())).json.total
    const response = await service.request("POST", keysPath(), { rawBody: '{"name":' })
    expect(response.status).toBe(400)
    expectEnvelope(response.json, "bad_request")
    expect((await service.request("GET", keysPath())).json.total).toBe(before)
  })

  it("schema failure is 422 with extra.errors of {loc, msg, type}", async () => {
    const response = await service.request("POST", keysPath(), { body: { name: 42 } })
    expect(response.status).toBe(422)
    expectEnvelope(response.json, "validation_error")
    expect(response.json.extra.errors).toEqual([{ loc: ["body", "name"], msg: expect.any(String), type: "type_error" }])
  })

  it("the documented minimum of intent, email, new password and invitation token is the enforced one (issue 27)", async () => {
    const spec = (await service.request("GET", "/openapi.json", { key: null })).json
    const bodyOf = (path: string) => {
      const schema = spec.paths[path].post.requestBody.content["application/json"].schema
      return schema.$ref === undefined ? schema : spec.components.schemas[schema.$ref.split("/").pop()]
    }
    const monitors = `/v1/projects/${service.projectId}/track/monitors`
    // [path, documented path, field, body with the field set; another field is always bad so nothing is created]
    const cases: Array<[string, string, string, (value: string) => Record<string, unknown>]> = [
      [monitors, "/v1/projects/{pid}/track/monitors", "intent", (v) => ({ intent: v, notify_channel: { kind: "nowhere" } })],
      ["/v1/auth/password/forgot", "/v1/auth/password/forgot", "email", (v) => ({ email: v, extra_field: 1 })],
      ["/v1/auth/password/reset", "/v1/auth/password/reset", "new_password", (v) => ({ token: "t", new_password: v })],
      ["/v1/invitations/accept", "/v1/invitations/accept", "token", (v) => ({ token: v, display_name: "" })]
    ]
    for (const [path, documented, field, body] of cases) {
      const minimum = bodyOf(documented).properties[field].minLength as number
      expect({ field, minimum }).toEqual({ field, minimum: { intent: 4, email: 3, new_password: 8, token: 8 }[field] })
      const locs = async (value: string) => {
        const response = await service.request("POST", path, path.startsWith("/v1/projects") ? { body: body(value) } : { body: body(value), key: null })
        expect(response.status, `${path} ${response.text}`).toBe(422)
        return (response.json.extra.errors as Array<{ loc: Array<string> }>).map((e) => e.loc.join("."))
      }
      expect(await locs("x".repeat(minimum - 1)), `${field} at ${minimum - 1}`).toContain(`body.${field}`)
      expect(await locs("x".repeat(minimum)), `${field} at ${minimum}`).not.toContain(`body.${field}`)
    }
  })

  it("unknown fields are refused on the run-creation bodies too, as the document says (issue 27), and nothing is created", async () => {
    const sessions = `/v1/projects/${service.projectId}/do_anything/sessions`
    const before = (await service.request("GET", sessions)).json.total
    for (const path of [sessions, `/api/v1/projects/${service.projectId}/do_anything/runs`, `/v1/projects/${service.projectId}/web_search/runs`]) {
      const body = path.includes("web_search") ? { queries: ["q"], bogus: 1 } : { instructions: "x", bogus: 1 }
      const response = await service.request("POST", path, { body })
      expect(response.status, `${path}: ${response.text}`).toBe(422)
      expect(response.json.extra.errors).toContainEqual({ loc: ["body", "bogus"], msg: expect.any(String), type: "extra_forbidden" })
    }
    expect((await service.request("GET", sessions)).json.total).toBe(before)
  })

  it("unknown fields are forbidden where the spec says so", async () => {
    const response = await service.request("POST", keysPath(), { body: { name: "x", admin: true } })
    expect(response.status).toBe(422)
    expect(response.json.extra.errors).toContainEqual({ loc: ["body", "admin"], msg: expect.any(String), type: "extra_forbidden" })
  })
})

describe("limits", () => {
  it("API key name is at most 100 characters", async () => {
    expect((await service.request("POST", keysPath(), { body: { name: "n".repeat(100) } })).status).toBe(201)
    const response = await service.request("POST", keysPath(), { body: { name: "n".repeat(101) } })
    expect(response.status).toBe(422)
    expect(response.json.extra.errors[0].loc).toEqual(["body", "name"])
  })

  it("list limit is 1..100", async () => {
    for (const limit of ["0", "101", "abc"]) {
      const response = await service.request("GET", `${keysPath()}?limit=${limit}`)
      expect(response.status).toBe(422)
      expect(response.json.extra.errors[0].loc).toEqual(["query", "limit"])
    }
    expect((await service.request("GET", `${keysPath()}?limit=100`)).status).toBe(200)
  })
})

describe("authentication", () => {
  it("401 for a missing, malformed, mistyped or unknown key", async () => {
    const typo = service.apiKey.slice(0, -1) + (service.apiKey.endsWith("A") ? "B" : "A")
    const unknown = (await service.request("POST", keysPath(), { body: { name: "to-forget" } })).json.secret_token as string
    await embeddedDatabaseClient(service.dataDir).then(async (db) => {
      await db.query("DELETE FROM api_keys WHERE name = 'to-forget'")
      await db.end()
    })
    for (const key of [null, "", "wa_short", "sk_" + service.apiKey.slice(3), typo]) {
      const response = await service.request("GET", keysPath(), { key })
      expect(response.status, `key ${key}`).toBe(401)
      expectEnvelope(response.json, "unauthorized")
    }
    // Well-formed with a valid checksum, but the database does not know it.
    const response = await service.request("GET", keysPath(), { key: unknown })
    expect(response.status).toBe(401)
  })

  it("403 for a valid key on another project's path", async () => {
    const other = await service.cli("projects", "create", "--name", "other")
    const otherProject = JSON.parse(other.stdout).project_id
    const response = await service.request("GET", `/v1/projects/${otherProject}/api_keys`)
    expect(response.status).toBe(403)
    expectEnvelope(response.json, "forbidden")
  })

  it("the secret is returned once, only its hash is stored, and revocation has a grace window", async () => {
    const created = await service.request("POST", keysPath(), { body: { name: "rotating" } })
    expect(created.status).toBe(201)
    const secret: string = created.json.secret_token
    expect(secret).toMatch(/^wa_[0-9A-Za-z]{28,}$/)
    const listed = (await service.request("GET", `${keysPath()}?limit=100`)).json.items
    expect(JSON.stringify(listed)).not.toContain(secret)
    expect(listed.find((k: any) => k.id === created.json.id)).toMatchObject({ prefix: secret.slice(0, 11), name: "rotating" })
    const db = await embeddedDatabaseClient(service.dataDir)
    const stored = await db.query("SELECT secret_hash FROM api_keys WHERE id = $1", [created.json.id])
    await db.end()
    expect(stored.rows[0].secret_hash).toMatch(/^[0-9a-f]{64}$/)
    expect(JSON.stringify(stored.rows)).not.toContain(secret)

    const revoked = await service.request("DELETE", `${keysPath()}/${created.json.id}`)
    expect(revoked.status).toBe(200)
    expect(revoked.json.disabled_at).not.toBeNull()
    expect(new Date(revoked.json.grace_until).getTime()).toBeGreaterThan(Date.now())
    // Inside the grace window (2 s in this test) the key still works for the products (it manages
    // no keys: a run key, and revoked) ...
    const sessionsPath = `/v1/projects/${service.projectId}/do_anything/sessions`
    expect((await service.request("GET", sessionsPath, { key: secret })).status).toBe(200)
    expect((await service.request("GET", keysPath(), { key: secret })).status).toBe(403)
    // ... and after it the key is refused (waited out to its grace_until, plus a margin).
    await new Promise((r) => setTimeout(r, Math.max(0, new Date(revoked.json.grace_until).getTime() + 500 - Date.now())))
    expect((await service.request("GET", sessionsPath, { key: secret })).status).toBe(401)
    expect((await service.request("GET", keysPath(), { key: secret })).status).toBe(401)
    expect((await service.request("DELETE", `${keysPath()}/key_unknown`)).status).toBe(404)
  })
})

describe("idempotency", () => {
  it("replays the identical response for the same key and body", async () => {
    const headers = { "idempotency-key": crypto.randomUUID() }
    const first = await service.request("POST", keysPath(), { body: { name: "idem" }, headers })
    const second = await service.request("POST", keysPath(), { body: { name: "idem" }, headers })
    expect(first.status).toBe(201)
    expect(second.status).toBe(201)
    // Identical but for the secret, which exists only in the first response.
    expect(second.json).toEqual({ ...first.json, secret_token: null })
    const all = (await service.request("GET", `${keysPath()}?limit=100`)).json.items
    expect(all.filter((k: any) => k.id === first.json.id)).toHaveLength(1)
  })

  it("replays a 4xx outcome too", async () => {
    const headers = { "idempotency-key": crypto.randomUUID() }
    const first = await service.request("DELETE", `${keysPath()}/key_missing`, { headers })
    const second = await service.request("DELETE", `${keysPath()}/key_missing`, { headers })
    expect(first.status).toBe(404)
    expect(second.status).toBe(404)
    expect(second.text).toBe(first.text)
  })

  it("same key with a different body is 422", async () => {
    const headers = { "idempotency-key": crypto.randomUUID() }
    await service.request("POST", keysPath(), { body: { name: "a" }, headers })
    const response = await service.request("POST", keysPath(), { body: { name: "b" }, headers })
    expect(response.status).toBe(422)
    expectEnvelope(response.json, "validation_error")
  })

  it("same key while the first request is in flight is 409", async () => {
    const key = crypto.randomUUID()
    const db = await embeddedDatabaseClient(service.dataDir)
    const keyRow = await db.query("SELECT id FROM api_keys WHERE project_id = $1 AND name = 'default'", [service.projectId])
    const body = JSON.stringify({ name: "slow" })
    const { createHash } = await import("node:crypto")
    // The record a first request leaves while its handler still runs: claimed, its lease renewed,
    // no response yet.
    const hash = createHash("sha256").update(`POST ${keysPath()}\n${body}`).digest("hex")
    await db.query(
      "INSERT INTO idempotency_records (project_id, api_key_id, idempotency_key, request_hash, locked_until) VALUES ($1, $2, $3, $4, now() + interval '1 minute')",
      [service.projectId, keyRow.rows[0].id, key, hash]
    )
    await db.end()
    const response = await service.request("POST", keysPath(), { rawBody: body, headers: { "idempotency-key": key } })
    expect(response.status).toBe(409)
    expectEnvelope(response.json, "conflict")
  })

  it("keys are scoped to the API key", async () => {
    const otherKey = (await service.request("POST", keysPath(), { body: { name: "second", scope: "admin" } })).json.secret_token
    const headers = { "idempotency-key": crypto.randomUUID() }
    const a = await service.request("POST", keysPath(), { body: { name: "scoped" }, headers })
    const b = await service.request("POST", keysPath(), { body: { name: "scoped" }, headers, key: otherKey })
    expect(a.status).toBe(201)
    expect(b.status).toBe(201)
    expect(b.json.id).not.toBe(a.json.id)
  })

  it("concurrent duplicates create exactly one record", async () => {
    const headers = { "idempotency-key": crypto.randomUUID() }
    const responses = await Promise.all(
      Array.from({ length: 8 }, () => service.request("POST", keysPath(), { body: { name: "burst" }, headers }))
    )
    const created = responses.filter((r) => r.status === 201)
    expect(created.length).toBeGreaterThan(0)
    expect(new Set(created.map((r) => r.json.id)).size).toBe(1)
    expect(responses.every((r) => r.status === 201 || r.status === 409)).toBe(true)
  })
})

describe("pagination", () => {
  it("pages through every key once, stable under concurrent inserts", async () => {
    const created = await service.cli("projects", "create", "--name", "paging")
    const projectId = JSON.parse(created.stdout).project_id as string
    const key = JSON.parse((await service.cli("keys", "create", "--project", projectId)).stdout).secret_token as string
    for (let i = 0; i < 24; i++) await service.request("POST", `/v1/projects/${projectId}/api_keys`, { body: { name: `k${i}` }, key })
    const seen: Array<string> = []
    let cursor: string | null = null
    let pages = 0
    do {
      const query: string = cursor === null ? "?limit=10" : `?limit=10&cursor=${cursor}`
      const page = await service.request("GET", `/v1/projects/${projectId}/api_keys${query}`, { key })
      expect(page.status).toBe(200)
      seen.push(...page.json.items.map((k: any) => k.id))
      cursor = page.json.next_cursor
      pages++
      // New rows arriving between pages must not shift or repeat what the client reads.
      await service.request("POST", `/v1/projects/${projectId}/api_keys`, { body: { name: `late${pages}` }, key })
    } while (cursor !== null)
    expect(pages).toBe(3)
    expect(seen).toHaveLength(25)
    expect(new Set(seen).size).toBe(25)
    expect([...seen].sort().reverse()).toEqual(seen)
  })

  it("a cursor the server did not issue is 400", async () => {
    const response = await service.request("GET", `${keysPath()}?cursor=not-a-cursor`)
    expect(response.status).toBe(400)
    expectEnvelope(response.json, "bad_request")
  })
})

describe("OpenAPI and docs", () => {
  it("serves OpenAPI 3.1 generated from the contract and a bundled reference UI", async () => {
    const spec = (await service.request("GET", "/openapi.json", { key: null })).json
    expect(spec.openapi).toBe("3.1.0")
    const paths = Object.keys(spec.paths)
    expect(paths).toContain("/v1/projects/{pid}/api_keys")
    // Both route conventions, and DeepResearch's standalone path (project from the token).
    expect(paths).toEqual(expect.arrayContaining([
      "/v1/projects/{pid}/do_anything/sessions",
      "/api/v1/projects/{pid}/do_anything/runs",
      "/v1/projects/{pid}/web_search/runs",
      "/api/v1/projects/{pid}/web_search/runs",
      "/v1/projects/{pid}/deep_research/runs",
      "/api/v1/projects/{pid}/deep_research/runs",
      "/v1/deep_research",
      "/v1/deep_research/{rid}"
    ]))
    expect(Object.keys(spec.paths["/v1/deep_research"])).toEqual(expect.arrayContaining(["post", "get"]))
    // The bearer scheme is declared, and every project endpoint requires it (a client generator
    // reads this to send the key; an operation without it would be shown as public).
    const schemes: Record<string, { type?: string; scheme?: string }> = spec.components?.securitySchemes ?? {}
    const bearer = Object.entries(schemes).find(([, scheme]) => scheme.type === "http" && scheme.scheme?.toLowerCase() === "bearer")
    expect(bearer, `securitySchemes: ${JSON.stringify(schemes)}`).toBeDefined()
    const [schemeName] = bearer!
    const methods = ["get", "put", "post", "delete", "patch"]
    const projectOperations = Object.entries(spec.paths as Record<string, Record<string, any>>)
      .filter(([path]) => /^\/(api\/)?v1\/(projects\/\{pid\}|deep_research)/.test(path))
      .flatMap(([path, item]) => Object.entries(item).filter(([method]) => methods.includes(method)).map(([method, operation]) => ({ where: `${method.toUpperCase()} ${path}`, operation })))
    expect(projectOperations.length).toBeGreaterThan(20)
    const unsecured = projectOperations
      .filter(({ operation }) => !((operation.security ?? spec.security ?? []) as Array<Record<string, unknown>>).some((requirement) => schemeName in requirement))
      .map(({ where }) => where)
    expect(unsecured, "project operations without the bearer requirement").toEqual([])
    const docs = await service.request("GET", "/docs", { key: null })
    expect(docs.status).toBe(200)
    expect(docs.text).not.toMatch(/<script[^>]+src="https?:/)
  })
})
