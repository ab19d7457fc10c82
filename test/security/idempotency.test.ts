/**
 * Idempotency-Key records that cannot leak or stick: secrets are not kept in replay records (for
 * every write of /openapi.json), a 429 is not replayed, and a claim left by a process killed
 * mid-request expires after its lease.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createUser, loginBearer } from "../accounts/support.ts"
import { type FakeEngines, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { fillPath, type Json, type Operation, operationsOf, sample, type SchemaObject } from "../support/openapi-fuzz.ts"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"

describe("replay records", () => {
  let model: ScriptedModel
  let service: Service
  beforeAll(async () => {
    // Every run waits for a person, so its session stays open.
    model = await startScriptedModel(() => ({ tool: "ask_human", args: { prompt: "hold" } }))
    service = await startService({
      env: { WA_MODEL_BASE_URL: model.baseUrl, WA_MODEL: "scripted", WA_MAX_CONCURRENT_SESSIONS: "1", WA_STEP_SCREENSHOTS: "false", WA_DRAIN_SECONDS: "1" }
    })
  }, 120_000)
  afterAll(async () => {
    await stopAndClean(service)
    await model?.close()
  })

  it("a created key's secret is in the first response only, never in the stored record", async () => {
    const headers = { "idempotency-key": randomUUID() }
    const path = `/v1/projects/${service.projectId}/api_keys`
    const first = await service.request("POST", path, { body: { name: "ci" }, headers })
    expect(first.status).toBe(201)
    expect(first.json.secret_token).toMatch(/^wa_/)
    const replay = await service.request("POST", path, { body: { name: "ci" }, headers })
    expect(replay.status).toBe(201)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect(replay.json.id).toBe(first.json.id)
    expect(replay.json.secret_token).toBeNull()
    const db = await embeddedDatabaseClient(service.dataDir)
    try {
      const rows = (await db.query("SELECT response_body FROM idempotency_records")).rows
      expect(rows.length).toBeGreaterThan(0)
      for (const row of rows) expect(row.response_body ?? "").not.toContain(first.json.secret_token)
    } finally {
      await db.end()
    }
    // The key itself works: the secret was real.
    expect((await service.request("GET", `/v1/projects/${service.projectId}/do_anything/sessions`, { key: first.json.secret_token })).status).toBe(200)
  })

  it("a 429 is not replayed: the same key succeeds once a session is free", async () => {
    const sessions = `/v1/projects/${service.projectId}/do_anything/sessions`
    const holder = await service.request("POST", sessions, { body: { instructions: "hold the only slot" } })
    expect(holder.status).toBe(201)
    const headers = { "idempotency-key": randomUUID() }
    const body = { instructions: "wait for a slot", keep_alive: false }
    const refused = await service.request("POST", sessions, { body, headers })
    expect(refused.status).toBe(429)
    expect(refused.json.code).toBe("too_many_concurrent_sessions")
    expect((await service.request("POST", `${sessions}/${holder.json.id}/close`)).status).toBe(200)
    const retried = await service.request("POST", sessions, { body, headers })
    expect(retried.status).toBe(201)
    expect(retried.headers.get("idempotent-replayed")).toBeNull()
    // And now it is the outcome, replayed as such.
    const again = await service.request("POST", sessions, { body, headers })
    expect(again.status).toBe(201)
    expect(again.json.id).toBe(retried.json.id)
  })
})

describe("a claim left by a killed process", () => {
  let engines: FakeEngines
  let service: Service | undefined
  beforeAll(async () => {
    engines = await startFakeEngines({ results: (_, query) => [{ title: `About ${query}`, url: `https://example.org/${query}`, snippet: "hit" }] })
  })
  afterAll(async () => {
    await stopAndClean(service)
    await engines.close()
  })

  it("expires after its lease, so a retry with the same key runs instead of answering 409 for 24 hours", async () => {
    const env = {
      WA_SEARXNG_URL: engines.url,
      WA_WEB_SEARCH_WAIT_SECONDS: "20",
      WA_IDEMPOTENCY_LEASE_SECONDS: "2",
      WA_ALLOW_PRIVATE_NETWORKS: "true"
    }
    const first = await startService({ env })
    service = first
    const path = `/v1/projects/${first.projectId}/web_search/runs`
    const headers = { "idempotency-key": randomUUID() }
    const body = { queries: ["lease"], engines: ["searxng"] }
    engines.setBehavior("searxng", { failure: "hang" })
    const inFlight = first.request("POST", path, { body, headers }).catch(() => undefined)
    for (let i = 0; i < 100 && engines.requestsTo("searxng").length === 0; i++) await new Promise((r) => setTimeout(r, 100))
    expect(engines.requestsTo("searxng").length).toBeGreaterThan(0)
    // While the first request runs, the key is taken.
    expect((await first.request("POST", path, { body, headers })).status).toBe(409)
    await first.kill()
    // Nothing renews the claim after the kill: its 2 s lease is over 2.5 s later (the restart takes part of that).
    const killedAt = Date.now()
    await inFlight
    engines.setBehavior("searxng", {})

    service = await startService({ env, dataDir: first.dataDir, credentials: { projectId: first.projectId, apiKey: first.apiKey } })
    await new Promise((r) => setTimeout(r, Math.max(0, killedAt + 2_500 - Date.now())))
    const retried = await service.request("POST", path, { body, headers })
    expect([200, 202]).toContain(retried.status)
    expect(retried.json.run_id ?? retried.json.id).toBeDefined()
  }, 120_000)
})

/**
 * The credentials a response may carry, found by their form (not by the schema's annotation, which
 * is what is under test): the service's secret prefixes, and the token of a URL.
 */
const secretsIn = (value: unknown): Array<string> => {
  if (typeof value === "string") {
    const found: Array<string> = []
    // A whole secret, not a key's display prefix (`wa_` and 8 characters).
    if (/^(wa|was|wad|wask|whsec)_.{20,}/.test(value)) found.push(value)
    const token = /[?&]token=([^&#]+)/.exec(value)?.[1]
    if (token !== undefined) found.push(value, decodeURIComponent(token))
    return found
  }
  if (Array.isArray(value)) return value.flatMap(secretsIn)
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(secretsIn)
  return []
}

describe("no secret reaches the idempotency records", () => {
  let service: Service
  let consoleToken: string
  beforeAll(async () => {
    service = await startService({
      env: {
        WA_RATE_LIMIT_REQUESTS: "1000000",
        WA_MAX_CONCURRENT_SESSIONS: "1000",
        WA_ALLOW_PRIVATE_NETWORKS: "true",
        // Runs created by the walk end at once: no browser, no model, no reachable engine.
        CHROMIUM_PATH: "/nonexistent/idempotency-no-browser",
        WA_DUCKDUCKGO_BASE_URL: "http://127.0.0.1:9",
        WA_SEARCH_ENGINE_TIMEOUT_MS: "1000",
        WA_WEB_SEARCH_WAIT_SECONDS: "1",
        WA_DRAIN_SECONDS: "1"
      }
    })
    await createUser(service, "owner@example.com", "owner-password")
    consoleToken = await loginBearer(service, "owner@example.com", "owner-password")
  }, 120_000)
  afterAll(async () => {
    await stopAndClean(service)
  })

  it("every write of /openapi.json that succeeds with an Idempotency-Key stores no secret and replays secrets as null", async () => {
    const doc: SchemaObject = (await service.request("GET", "/openapi.json", { key: null })).json
    const tenant = await service.request("POST", "/v1/tenants", { key: consoleToken, body: { name: "walk" } })
    expect(tenant.status, tenant.text).toBe(201)
    const values: Record<string, string> = { pid: service.projectId, tid: tenant.json.tenant_id }
    // Bodies the plain sample cannot make valid (the rest are the sample of the request schema).
    const monitor = {
      intent: "watch the walk page",
      notify_channel: { kind: "callback_url", url: "http://127.0.0.1:9/monitor" },
      schedule: { kind: "interval", interval_seconds: 3600 },
      target_urls: ["http://127.0.0.1:9/page"]
    }
    const bodyOf = (op: Operation): Json | undefined => {
      if (op.path.endsWith("/invitations")) return { email: "invitee@example.com" }
      if (op.path.endsWith("/access_keys")) return { name: "walk", redirect_uris: ["https://app.example.com/callback"] }
      if (op.path.endsWith("/webhooks")) return { url: "http://127.0.0.1:9/walk" }
      if (op.path.endsWith("/monitors") || op.path.endsWith("/tracks")) return monitor
      if (op.body === undefined) return undefined
      const sampled = sample(doc, op.body)
      // Sessions and runs: with instructions (they end at once, there is no browser).
      return "instructions" in (op.body["properties"] ?? {}) ? { ...(sampled as object), instructions: "walk" } : sampled
    }
    // Sign-out last: it ends the console session the tenant writes use.
    const writes = operationsOf(doc)
      .filter((op) => ["POST", "PUT", "PATCH"].includes(op.method) && op.secured)
      .filter((op) => !/\{(?!pid\}|tid\})[^}]+\}/.test(op.path))
      .sort((a, b) => Number(a.path.endsWith("/logout")) - Number(b.path.endsWith("/logout")))
    const succeeded: Array<{ readonly name: string; readonly first: unknown; readonly replay: unknown }> = []
    for (const op of writes) {
      const name = `${op.method} ${op.path}`
      const key = op.path.startsWith("/v1/tenants") || op.path.startsWith("/v1/auth") ? consoleToken : service.apiKey
      const body = bodyOf(op)
      const headers = { "idempotency-key": randomUUID() }
      const path = fillPath(op.path, values)
      const first = await service.request(op.method, path, { key, headers, ...(body === undefined ? {} : { body }) })
      if (first.status < 200 || first.status > 299) continue
      const replay = await service.request(op.method, path, { key, headers, ...(body === undefined ? {} : { body }) })
      // An operation without Idempotency-Key support (a settings PUT) ran again: nothing was kept.
      if (replay.headers.get("idempotent-replayed") !== "true") continue
      expect(replay.status, `${name} replay: ${replay.text}`).toBe(first.status)
      succeeded.push({ name, first: first.json, replay: replay.json })
    }
    // The walk reached every create that returns a secret.
    expect(succeeded.map((s) => s.name)).toEqual(expect.arrayContaining([
      "POST /v1/projects/{pid}/api_keys",
      "POST /v1/tenants/{tid}/access_keys",
      "POST /v1/tenants/{tid}/invitations",
      "POST /v1/projects/{pid}/webhooks",
      "POST /v1/projects/{pid}/track/monitors"
    ]))
    const secrets = succeeded.flatMap((s) => secretsIn(s.first).map((secret) => ({ name: s.name, secret })))
    expect(secrets.map((s) => s.name)).toEqual(expect.arrayContaining(["POST /v1/tenants/{tid}/access_keys", "POST /v1/tenants/{tid}/invitations"]))
    // A replay carries none of them.
    for (const { name, replay } of succeeded) expect(secretsIn(replay), `${name} replays a secret`).toEqual([])
    const db = await embeddedDatabaseClient(service.dataDir)
    try {
      const stored = (await db.query("SELECT coalesce(response_body, '') AS body FROM idempotency_records")).rows.map((row) => row.body as string)
      expect(stored.length).toBeGreaterThanOrEqual(succeeded.length)
      for (const { name, secret } of secrets) {
        expect(stored.filter((body) => body.includes(secret)), `${name}: its secret is in idempotency_records`).toEqual([])
      }
    } finally {
      await db.end()
    }
  }, 180_000)

  it("a create whose process died after its commit, before its answer was kept, is found by the retry instead of made twice", async () => {
    const token = await loginBearer(service, "owner@example.com", "owner-password")
    const tenant = await service.request("POST", "/v1/tenants", { key: token, body: { name: "recovery" } })
    expect(tenant.status, tenant.text).toBe(201)
    const project = `/v1/projects/${service.projectId}`
    const creates: Array<{ readonly name: string; readonly path: string; readonly body: Json; readonly key?: string; readonly id: (json: any) => string }> = [
      { name: "api key", path: `${project}/api_keys`, body: { name: "recovered" }, id: (j) => j.id },
      { name: "workspace", path: `${project}/workspaces`, body: { name: "recovered" }, id: (j) => j.id },
      { name: "session", path: `${project}/do_anything/sessions`, body: { instructions: "recovered" }, id: (j) => j.id },
      { name: "web search", path: `${project}/web_search/runs`, body: { queries: ["recovered"], wait: false }, id: (j) => j.id },
      { name: "webhook endpoint", path: `${project}/webhooks`, body: { url: "http://127.0.0.1:9/recovered" }, id: (j) => j.id },
      {
        name: "monitor",
        path: `${project}/track/monitors`,
        body: { intent: "watch the recovered page", notify_channel: { kind: "console_inbox" }, schedule: { kind: "interval", interval_seconds: 3600 }, target_urls: ["http://127.0.0.1:9/page"] },
        id: (j) => j.id
      },
      { name: "tenant", path: "/v1/tenants", body: { name: "recovered" }, key: token, id: (j) => j.tenant_id },
      { name: "access key", path: `/v1/tenants/${tenant.json.tenant_id}/access_keys`, body: { name: "recovered" }, key: token, id: (j) => j.id }
    ]
    const db = await embeddedDatabaseClient(service.dataDir)
    try {
      for (const create of creates) {
        const headers = { "idempotency-key": randomUUID() }
        const send = () => service.request("POST", create.path, { body: create.body, headers, ...(create.key === undefined ? {} : { key: create.key }) })
        const first = await send()
        expect(first.status, `${create.name}: ${first.text}`).toBeGreaterThanOrEqual(200)
        expect(first.status, `${create.name}: ${first.text}`).toBeLessThan(300)
        // As the process that died between the create's commit and keeping its answer left it: an
        // expired claim with no response, only the resource recorded in the create's transaction.
        const left = await db.query(
          "UPDATE idempotency_records SET status = NULL, response_headers = NULL, response_body = NULL, locked_until = now() - interval '1 second' WHERE idempotency_key = $1 RETURNING resource_id",
          [headers["idempotency-key"]]
        )
        expect(left.rows[0]?.resource_id, `${create.name}: the create's transaction recorded its resource`).toBe(create.id(first.json))
        const retried = await send()
        expect(retried.status, `${create.name}: ${retried.text}`).toBe(first.status)
        expect(retried.headers.get("idempotent-replayed"), create.name).toBeNull()
        expect(create.id(retried.json), `${create.name}: the retry names the first attempt's resource`).toBe(create.id(first.json))
        // And that answer is now the one kept.
        const replay = await send()
        expect(replay.headers.get("idempotent-replayed"), create.name).toBe("true")
        expect(create.id(replay.json), create.name).toBe(create.id(first.json))
        if (create.name === "api key") {
          // The first answer never left the service: the key gets a new secret, and only that one works.
          expect(retried.json.secret_token).toMatch(/^wa_/)
          expect(retried.json.secret_token).not.toBe(first.json.secret_token)
          expect((await service.request("GET", `${project}/workspaces?limit=1`, { key: retried.json.secret_token })).status).toBe(200)
          expect((await service.request("GET", `${project}/workspaces?limit=1`, { key: first.json.secret_token })).status).toBe(401)
        }
        if (create.name === "access key") expect(retried.json.secret_key).toBe(first.json.secret_key)
        if (create.name === "webhook endpoint") expect(retried.json.secret).toBe(first.json.secret)
        if (create.name === "monitor") expect(retried.json.notify_secret).toBe(first.json.notify_secret)
      }
      // One of each, not two.
      const one = async (query: string) => expect((await db.query(query)).rows[0].n).toBe(1)
      await one("SELECT count(*)::int AS n FROM api_keys WHERE name = 'recovered'")
      await one("SELECT count(*)::int AS n FROM workspaces WHERE name = 'recovered'")
      await one("SELECT count(*)::int AS n FROM runs WHERE instructions = 'recovered'")
      await one("SELECT count(*)::int AS n FROM runs WHERE kind = 'web_search' AND request->'queries'->>0 = 'recovered'")
      await one("SELECT count(*)::int AS n FROM webhook_endpoints WHERE url = 'http://127.0.0.1:9/recovered'")
      await one("SELECT count(*)::int AS n FROM monitors WHERE intent_text = 'watch the recovered page'")
      await one("SELECT count(*)::int AS n FROM tenants WHERE name = 'recovered'")
      await one("SELECT count(*)::int AS n FROM access_keys WHERE name = 'recovered'")
    } finally {
      await db.end()
    }
  }, 180_000)
})
