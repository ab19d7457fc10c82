/**
 * callback_url end to end, with private networks NOT allowed:
 * - at request time, a malformed URL or one on 127.0.0.1 (in any spelling, IPv6-mapped included)
 *   is a 422 validation_error naming ["body", "callback_url"], and nothing is created: DoAnything
 *   (both conventions, new sessions and follow-up runs) and DeepResearch (all three paths);
 * - at delivery, a target that is not public is refused once, without retries: the delivery is
 *   `failed` with attempts 1 and last_error saying why. To get such a delivery the stored run's
 *   callback_url is rewritten in the database after the request was accepted (the state a URL
 *   whose DNS changed after validation, or one stored before validation existed, leaves).
 * The only listener is this file's loopback receiver, which must never be called.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"

let model: ScriptedModel
let service: Service
let receiver: Server
let received = 0
let port = 0

const hold = (() => {
  let open: () => void = () => {}
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { wait: () => opened, release: () => open() }
})()

beforeAll(async () => {
  receiver = createServer((req, res) => {
    received++
    req.resume()
    res.writeHead(204).end()
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  port = (receiver.address() as AddressInfo).port
  model = await startScriptedModel(async () => {
    await hold.wait()
    return { tool: "done", args: { output: "late" } }
  })
  service = await startService({
    env: {
      WA_MODEL_BASE_URL: model.baseUrl,
      WA_MODEL: "scripted",
      WA_ALLOW_PRIVATE_NETWORKS: "false",
      WA_MAX_CONCURRENT_SESSIONS: "100",
      WA_WEBHOOK_RETRY_BASE_MS: "50"
    }
  })
}, 120_000)

afterAll(async () => {
  hold.release()
  await stopAndClean(service)
  await model.close()
  await new Promise<void>((resolve) => receiver.close(() => resolve()))
})

const loopbackSpellings = () => [
  `http://[::ffff:127.0.0.1]:${port}/hook`,
  `http://[::ffff:7f00:1]:${port}/hook`,
  `http://[0:0:0:0:0:ffff:7f00:1]:${port}/hook`,
  `http://[::127.0.0.1]:${port}/hook`,
  `http://127.0.0.1:${port}/hook`,
  `http://localhost:${port}/hook`,
  `http://localhost.:${port}/hook`
]

const malformed = [
  "file:///etc/passwd",
  "javascript:alert(1)",
  "not a url",
  "/relative/hook",
  "ftp://example.com/hook",
  "http://user:secret@example.com/hook",
  `https://example.com/${"x".repeat(2084)}`
]

const expectRefused = (response: { status: number; json: any; text: string }, what: string) => {
  expect(response.status, `${what}: ${response.text.slice(0, 300)}`).toBe(422)
  expect(response.json.code).toBe("validation_error")
  expect(response.json.extra.errors, what).toEqual(expect.arrayContaining([expect.objectContaining({ loc: ["body", "callback_url"], msg: expect.any(String), type: expect.any(String) })]))
}

const doAnything = () => `/v1/projects/${service.projectId}/do_anything`
const flat = () => `/api/v1/projects/${service.projectId}/do_anything/runs`
const researchPaths = () => [`/v1/projects/${service.projectId}/deep_research/runs`, `/api/v1/projects/${service.projectId}/deep_research/runs`, "/v1/deep_research"]

describe("callback_url at request time", () => {
  it("DoAnything: 422 for a malformed or loopback callback_url, nothing created", async () => {
    for (const url of [...loopbackSpellings(), ...malformed]) {
      expectRefused(await service.request("POST", `${doAnything()}/sessions`, { body: { instructions: "x", keep_alive: false, callback_url: url } }), `A ${url}`)
      expectRefused(await service.request("POST", flat(), { body: { instructions: "x", keep_alive: false, callback_url: url } }), `B ${url}`)
    }
    const sessions = await service.request("GET", `${doAnything()}/sessions?limit=100`)
    expect(sessions.json.items).toEqual([])
    expect(received).toBe(0)
  })

  it("DoAnything follow-up runs: 422 and the session keeps its one run", async () => {
    const created = await service.request("POST", `${doAnything()}/sessions`, { body: { instructions: "hold", keep_alive: true } })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id as string
    for (const url of [...loopbackSpellings().slice(0, 4), "javascript:alert(1)"]) {
      expectRefused(await service.request("POST", `${doAnything()}/sessions/${sid}/runs`, { body: { instructions: "next", callback_url: url } }), `A follow-up ${url}`)
      expectRefused(await service.request("POST", flat(), { body: { instructions: "next", session_id: sid, callback_url: url } }), `B follow-up ${url}`)
    }
    const session = await service.request("GET", `${doAnything()}/sessions/${sid}`)
    expect(session.json.runs).toHaveLength(1)
    await service.request("POST", `${doAnything()}/sessions/${sid}/runs/${session.json.runs[0].id}/cancel`, { body: {} })
    await service.request("POST", `${doAnything()}/sessions/${sid}/close`)
    expect(received).toBe(0)
  })

  it("DeepResearch: 422 on all three paths, no run created", async () => {
    for (const path of researchPaths()) {
      for (const url of [...loopbackSpellings(), ...malformed]) {
        expectRefused(await service.request("POST", path, { body: { topic: "t", callback_url: url } }), `${path} ${url}`)
      }
    }
    for (const path of researchPaths()) {
      const listed = await service.request("GET", path)
      expect(listed.json.items, path).toEqual([])
    }
    expect(received).toBe(0)
  })
})

describe("callback delivery to a refused target", () => {
  it("is recorded failed after one attempt with the reason, not retried", async () => {
    const db = await embeddedDatabaseClient(service.dataDir)
    try {
      const targets = [`http://127.0.0.1:${port}/hook`, `http://[::ffff:7f00:1]:${port}/hook`]
      const runIds: Array<string> = []
      for (const target of targets) {
        const created = await service.request("POST", `${doAnything()}/sessions`, { body: { instructions: "hold", keep_alive: false } })
        expect(created.status, created.text).toBe(201)
        const sid = created.json.id as string
        const rid = created.json.latest_run_id as string
        // The URL passed validation (there was none); now it points at loopback.
        await db.query(`UPDATE runs SET request = jsonb_set(request, '{callback_url}', to_jsonb($1::text)) WHERE id = $2`, [target, rid])
        const canceled = await service.request("POST", `${doAnything()}/sessions/${sid}/runs/${rid}/cancel`, { body: {} })
        expect(canceled.status, canceled.text).toBe(200)
        runIds.push(rid)
      }
      let rows: Array<{ run_id: string; status: string; attempts: number; last_error: string | null; url: string }> = []
      for (let i = 0; i < 100; i++) {
        rows = (await db.query(`SELECT run_id, status, attempts, last_error, url FROM webhook_deliveries WHERE run_id = ANY($1)`, [runIds])).rows
        if (rows.length === runIds.length && rows.every((row) => row.status !== "pending" && row.status !== "retrying")) break
        await new Promise((r) => setTimeout(r, 100))
      }
      // Retries would have come within a few 50 ms backoffs; give them the time to show up.
      await new Promise((r) => setTimeout(r, 1_500))
      rows = (await db.query(`SELECT run_id, status, attempts, last_error, url FROM webhook_deliveries WHERE run_id = ANY($1)`, [runIds])).rows
      expect(rows).toHaveLength(2)
      for (const row of rows) {
        expect(row, row.url).toMatchObject({ status: "failed", attempts: 1 })
        expect(row.last_error, row.url).toMatch(/refused: .*127\.0\.0\.1.*loopback/)
      }
      expect(received).toBe(0)
    } finally {
      await db.end()
    }
  }, 60_000)
})
