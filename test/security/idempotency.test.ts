/**
 * Idempotency-Key records that cannot leak or stick: secrets are not kept in replay records, a
 * 429 is not replayed, and a claim left by a process killed mid-request expires after its lease.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeEngines, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
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
