/**
 * One key, two API nodes on one database: the concurrent-session cap and Idempotency-Key hold
 * across nodes (they are counted and recorded in the shared database). Runs only where
 * TEST_DATABASE_URL and TEST_REDIS_URL are set.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { externalDatabase, type Service, startService, stopAndClean } from "../support/service.ts"
import { clusterNodeEnv } from "./nodes.ts"
import { waitForRunStatus } from "../support/runs.ts"

const databaseUrl = process.env["TEST_DATABASE_URL"] || undefined
const redisUrl = process.env["TEST_REDIS_URL"] || undefined

describe.skipIf(databaseUrl === undefined || redisUrl === undefined)("limits across two API nodes", () => {
  let model: ScriptedModel
  let database: Awaited<ReturnType<typeof externalDatabase>>
  let a: Service
  let b: Service

  beforeAll(async () => {
    // Every run asks a person and waits, so its session stays open.
    model = await startScriptedModel(() => ({ tool: "ask_human", args: { prompt: "hold" } }))
    database = await externalDatabase()
    const env = clusterNodeEnv(database!.url, redisUrl!, model.baseUrl, {
      WA_MAX_CONCURRENT_SESSIONS: "2",
      // Runs left waiting for a person need not hold up the stop at the end.
      WA_DRAIN_SECONDS: "1"
    })
    a = await startService({ env })
    b = await startService({ env, credentials: { projectId: a.projectId, apiKey: a.apiKey } })
  }, 180_000)
  afterAll(async () => {
    await Promise.all([stopAndClean(a), stopAndClean(b)])
    await database?.drop()
    await model?.close()
  }, 120_000)

  const sessions = (node: Service) => `/v1/projects/${node.projectId}/do_anything/sessions`

  it("the same Idempotency-Key sent to either node creates one session and replays it", async () => {
    const headers = { "idempotency-key": crypto.randomUUID() }
    const body = { instructions: "idempotent", keep_alive: false }
    const first = await a.request("POST", sessions(a), { body, headers })
    expect(first.status).toBe(201)
    const second = await b.request("POST", sessions(b), { body, headers })
    expect(second.status).toBe(201)
    expect(second.text).toBe(first.text)
    expect(second.headers.get("idempotent-replayed")).toBe("true")
    await a.request("POST", `${sessions(a)}/${first.json.id}/close`)
  })

  it("the key's session cap counts sessions opened through both nodes", async () => {
    const one = await a.request("POST", sessions(a), { body: { instructions: "one" } })
    const two = await b.request("POST", sessions(b), { body: { instructions: "two" } })
    expect([one.status, two.status]).toEqual([201, 201])
    for (const [node, session] of [[a, one], [b, two]] as const) {
      await waitForRunStatus(node, `${sessions(node)}/${session.json.id}/runs/${session.json.latest_run_id}`, ["awaiting_input"])
    }
    for (const node of [a, b]) {
      const refused = await node.request("POST", sessions(node), { body: { instructions: "three" } })
      expect(refused.status).toBe(429)
      expect(refused.json.code).toBe("too_many_concurrent_sessions")
      expect(refused.json.extra).toMatchObject({ limit: 2, active: 2 })
    }
    // Closing one through the other node frees a slot for both.
    expect((await b.request("POST", `${sessions(b)}/${one.json.id}/close`)).status).toBe(200)
    const three = await a.request("POST", sessions(a), { body: { instructions: "three", keep_alive: false } })
    expect(three.status).toBe(201)
  })

  it("50 parallel creates through both nodes open exactly as many sessions as the cap allows", async () => {
    // Free the slots the tests above hold, so the cap of 2 is the only limit.
    for (const node of [a, b]) {
      const open = (await node.request("GET", `${sessions(node)}?limit=100`)).json.items as Array<{ id: string; status: string }>
      for (const session of open.filter((s) => s.status !== "closed")) await node.request("POST", `${sessions(node)}/${session.id}/close`)
    }
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) =>
      (i % 2 === 0 ? a : b).request("POST", sessions(i % 2 === 0 ? a : b), { body: { instructions: `parallel ${i}` } })))
    const statuses = responses.map((r) => r.status)
    expect(statuses.filter((s) => s === 201)).toHaveLength(2)
    expect(statuses.filter((s) => s === 429)).toHaveLength(48)
    const open = (await a.request("GET", `${sessions(a)}?limit=100`)).json.items.filter((s: { status: string }) => s.status !== "closed")
    expect(open).toHaveLength(2)
  })
})
