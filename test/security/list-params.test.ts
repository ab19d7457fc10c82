/**
 * Every list of the OpenAPI document refuses bad paging and filter parameters with a 400 or 422 in
 * the envelope, never a 500: a cursor the server did not issue, limits outside 1..100 or not a
 * number, a status the parameter's schema does not allow. A handler's 400 that is not a declared
 * error of its endpoint cannot be encoded and turns into a 500, so this also checks the contract's
 * `error` declarations of every list.
 */
import * as http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fillPath, isEnvelope, mainBranch, operationsOf, type Operation, rawRequest, type SchemaObject } from "../support/openapi-fuzz.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { createUser, loginBearer } from "../accounts/support.ts"

let service: Service
let doc: SchemaObject
let lists: Array<Operation>
/** A real monitor, for the lists under one (its runs, snapshots, deliveries). */
let monitorId: string
/** A real schedule, for its firings. */
let scheduleId: string
/** A DoAnything session, for the lists under it (its inbox). */
let sessionId: string
/** A DoAnything run and a DeepResearch run, for their artifacts; a workspace, for its files. */
let runId: string
let researchRunId: string
let workspaceId: string
/** A console session of an admin of the project's tenant, for the account lists (API keys get 403 there). */
let sessionToken: string
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 })

beforeAll(async () => {
  service = await startService({ env: { WA_RATE_LIMIT_REQUESTS: "1000000" } })
  doc = (await service.request("GET", "/openapi.json", { key: null })).json
  monitorId = (await service.request("POST", `/v1/projects/${service.projectId}/track/monitors`, {
    body: { intent: "list parameters", notify_channel: { kind: "console_inbox" }, schedule: { kind: "interval", interval_seconds: 3600 }, target_urls: ["http://127.0.0.1:9/"] }
  })).json.id
  const scheduled = await service.request("POST", `/v1/projects/${service.projectId}/do_anything/sessions`, {
    body: { instructions: "list parameters", schedule: { kind: "interval", interval_seconds: 3600 } }
  })
  const schedules = await service.request("GET", `/v1/projects/${service.projectId}/schedules?session_id=${scheduled.json.id}`)
  scheduleId = schedules.json.items[0].id
  sessionId = scheduled.json.id
  // The lists under one run (its artifacts) and one workspace (its files).
  runId = scheduled.json.runs[0].id
  researchRunId = (await service.request("POST", `/v1/projects/${service.projectId}/deep_research/runs`, {
    body: { topic: "list parameters", depth: "light", require_outline_approval: false }
  })).json.id
  workspaceId = (await service.request("POST", `/v1/projects/${service.projectId}/workspaces`, { body: { name: "list parameters" } })).json.id
  await createUser(service, "lists@example.com", "list-parameters-1", ["--tenant", "ten_default", "--role", "admin"])
  sessionToken = await loginBearer(service, "lists@example.com", "list-parameters-1")
  lists = operationsOf(doc).filter((op) =>
    op.method === "GET" && ["cursor", "limit"].every((name) => op.parameters.some((p) => p.in === "query" && p.name === name))
  )
})
afterAll(async () => {
  agent.destroy()
  await stopAndClean(service)
})

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64url")

const badCursors = [
  "!!!",
  "",
  b64("garbage \u0001\u0002 not json"),
  Buffer.from([0xff, 0xfe, 0x00, 0x80]).toString("base64url"),
  b64("{\"a\":1}"),
  b64("{\"b\":\"run_x\"}"),
  b64("[]"),
  b64("null"),
  b64("\"run_x\""),
  b64("{\"a\":"),
  "x".repeat(201)
]
const badLimits = ["0", "-1", "101", "1e999", "abc", "1.5", "", "NaN", "Infinity"]

/** A status the parameter's schema refuses: outside its enum, or longer than its maxLength. */
const badStatuses = (schema: SchemaObject): Array<string> => {
  const s = mainBranch(doc, schema)
  const out: Array<string> = []
  if (Array.isArray(s["enum"])) out.push("bogus_status", "")
  if (typeof s["maxLength"] === "number") out.push("s".repeat(s["maxLength"] + 1))
  return out
}

const pathOf = (op: Operation) =>
  fillPath(op.path, {
    pid: encodeURIComponent(service.projectId),
    mid: monitorId,
    schedule_id: scheduleId,
    sid: sessionId,
    tid: "ten_default",
    wid: workspaceId,
    rid: op.path.includes("deep_research") ? researchRunId : runId
  })

/** Account and tenant lists take a console session; every other list the project's API key. */
const tokenOf = (op: Operation) => /^\/v1\/(tenants|delegations)/.test(op.path) ? sessionToken : service.apiKey

const check = async (op: Operation, query: string) => {
  const path = `${pathOf(op)}?${query}`
  const response = await rawRequest(service.url, agent, {
    method: "GET",
    path,
    headers: { authorization: `Bearer ${tokenOf(op)}` }
  })
  return { label: `GET ${path.slice(0, 160)} -> ${response.status} ${response.text.slice(0, 200)}`, response }
}

describe("list parameters", () => {
  it("the document has lists (api keys, sessions, DeepResearch runs under all three prefixes)", () => {
    const paths = lists.map((op) => op.path)
    expect(paths).toEqual(expect.arrayContaining([
      "/v1/projects/{pid}/api_keys",
      "/v1/projects/{pid}/do_anything/sessions",
      "/v1/projects/{pid}/deep_research/runs",
      "/api/v1/projects/{pid}/deep_research/runs",
      "/v1/deep_research",
      // Paginated since issue 27: a workspace's files, the caller's tenants, a run's artifacts.
      "/v1/projects/{pid}/workspaces/{wid}/files",
      "/v1/tenants",
      "/v1/projects/{pid}/do_anything/sessions/{sid}/runs/{rid}/artifacts",
      "/api/v1/projects/{pid}/do_anything/runs/{rid}/artifacts",
      "/v1/projects/{pid}/deep_research/runs/{rid}/artifacts",
      "/api/v1/projects/{pid}/deep_research/runs/{rid}/artifacts"
    ]))
  })

  it("a cursor the server did not issue is a 400 or 422 envelope on every list", async () => {
    const failures: Array<string> = []
    for (const op of lists) {
      for (const cursor of badCursors) {
        const { label, response } = await check(op, `cursor=${encodeURIComponent(cursor)}`)
        if (![400, 422].includes(response.status) || !isEnvelope(response.json)) failures.push(label)
      }
    }
    expect(failures).toEqual([])
  })

  it("a limit outside 1..100 or not an integer is a 400 or 422 envelope on every list", async () => {
    const failures: Array<string> = []
    for (const op of lists) {
      for (const limit of badLimits) {
        const { label, response } = await check(op, `limit=${encodeURIComponent(limit)}`)
        if (![400, 422].includes(response.status) || !isEnvelope(response.json)) failures.push(label)
      }
    }
    expect(failures).toEqual([])
  })

  it("a status the schema does not allow is a 400 or 422 envelope on every list that filters by status", async () => {
    const failures: Array<string> = []
    const filtered = lists.filter((op) => op.parameters.some((p) => p.in === "query" && p.name === "status"))
    expect(filtered.length).toBeGreaterThanOrEqual(4)
    for (const op of filtered) {
      const schema = op.parameters.find((p) => p.name === "status")!.schema
      const statuses = badStatuses(schema)
      expect(statuses.length, `${op.path}: the status parameter has an enum or a maxLength`).toBeGreaterThan(0)
      for (const status of statuses) {
        const { label, response } = await check(op, `status=${encodeURIComponent(status)}`)
        if (![400, 422].includes(response.status) || !isEnvelope(response.json)) failures.push(label)
      }
      // A well-formed status that matches nothing is not an error, but never a 500 either.
      const { label, response } = await check(op, "status=no_such_status")
      if (response.status >= 500 || (response.status >= 300 && !isEnvelope(response.json))) failures.push(label)
    }
    expect(failures).toEqual([])
  })

  it("good parameters still page (limit=1 gives a page with next_cursor or null)", async () => {
    for (const op of lists) {
      const { label, response } = await check(op, "limit=1")
      expect(response.status, label).toBe(200)
      expect(response.json, label).toMatchObject({ items: expect.any(Array) })
    }
  })
})
