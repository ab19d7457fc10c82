/**
 * DoAnything limits and failures through HTTP: step budget and continue, refused private
 * addresses, the per-key session cap, and a Chromium killed in the middle of a run. The duration
 * limit, the idle timeout, keep_alive false and a service without a model are tested in-process
 * under TestClock (test/in-process/limits.test.ts).
 */
import { execFileSync } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { waitForRunStatus } from "../support/runs.ts"

let site: FixtureSites
let model: ScriptedModel

beforeAll(async () => {
  site = await startFixtureSites()
  model = await startScriptedModel(() => ({ text: "no script" }))
})
afterAll(async () => {
  await model.close()
  await site.close()
})

const terminal = ["done", "failed", "canceled"]
const base = (service: Service) => `/v1/projects/${service.projectId}/do_anything`

const waitForStatus = (service: Service, sid: string, rid: string, statuses: ReadonlyArray<string>) =>
  waitForRunStatus(service, `${base(service)}/sessions/${sid}/runs/${rid}`, statuses)

const create = async (service: Service, body: Record<string, unknown>) => {
  const response = await service.request("POST", `${base(service)}/sessions`, { body: { keep_alive: false, ...body } })
  expect(response.status, response.text).toBe(201)
  return { sid: response.json.id as string, rid: response.json.latest_run_id as string }
}

const modelEnv = () => ({ WA_MODEL_BASE_URL: model.baseUrl, WA_MODEL: "scripted", WA_ALLOW_PRIVATE_NETWORKS: "true" })

describe("steps", () => {
  let service: Service
  // A run has three steps.
  beforeAll(async () => {
    service = await startService({ env: { ...modelEnv(), WA_MAX_STEPS: "3" } })
  })
  afterAll(() => stopAndClean(service))

  it("a run that uses its step budget is marked expired, and continue starts a follow-up with a fresh budget", async () => {
    model.setScript(() => ({ tool: "navigate", args: { url: `${site.url}/page/1` } }))
    // A run may list only skills its project has (422 unknown_skills otherwise).
    const skill = await service.request("POST", `/v1/projects/${service.projectId}/skills`, {
      body: { name: "careful", description: "check each page before acting", instructions: "Read the page before each action." }
    })
    expect(skill.status, skill.text).toBe(201)
    const { sid, rid } = await create(service, { instructions: "loop", allowed_actions: ["navigate"], skills: ["careful"], keep_alive: true })
    const run = await waitForStatus(service, sid, rid, terminal)
    expect(run.status).toBe("failed")
    expect(run.expired).toBe(true)
    expect(run.error.code).toBe("max_steps_exceeded")
    expect(run.step_count).toBe(3)

    model.setScript(() => ({ tool: "done", args: { output: "finished after continue" } }))
    const continued = await service.request("POST", `${base(service)}/sessions/${sid}/runs/${rid}/continue`, { body: { content: "keep going" } })
    expect(continued.status).toBe(201)
    expect(continued.json.parent_run_id).toBe(rid)
    expect(continued.json.allowed_actions).toEqual(["navigate"])
    expect(continued.json.skills).toEqual(["careful"])
    const next = await waitForStatus(service, sid, continued.json.id, terminal)
    expect(next.status).toBe("done")
    expect(next.output).toBe("finished after continue")

    const notExpired = await service.request("POST", `${base(service)}/sessions/${sid}/runs/${continued.json.id}/continue`, { body: { content: "more" } })
    expect(notExpired.status).toBe(409)
  })
})

describe("private addresses", () => {
  let service: Service
  beforeAll(async () => {
    service = await startService({ env: { WA_MODEL_BASE_URL: model.baseUrl, WA_MODEL: "scripted" } })
  })
  afterAll(() => stopAndClean(service))

  it("navigation to a metadata or loopback address is refused as a failed action the model sees", async () => {
    model.setScript((request, turn) => {
      if (turn === 0) return { tool: "navigate", args: { url: "http://169.254.169.254/latest/meta-data/" } }
      if (turn === 1) return { tool: "navigate", args: { url: `${site.url}/page/1` } }
      const results = JSON.stringify(request.messages.filter((m) => m.role === "tool").map((m) => m.content))
      return { tool: "done", args: { output: { refusals: (results.match(/NavigationRefused/g) ?? []).length } } }
    })
    const { sid, rid } = await create(service, { instructions: "try the metadata service" })
    const run = await waitForStatus(service, sid, rid, terminal)
    expect(run.status).toBe("done")
    expect(run.output).toEqual({ refusals: 2 })
    const { readSse } = await import("../support/sse.ts")
    const { events } = await readSse(`${service.url}${base(service)}/sessions/${sid}/runs/${rid}/events`, { authorization: `Bearer ${service.apiKey}` })
    const failed = events.filter((e) => e.event === "run.action.failed").map((e) => e.data.data)
    expect(failed).toHaveLength(2)
    expect(failed[0]).toMatchObject({ action: "navigate", code: "NavigationRefused" })
  })
})

describe("session cap", () => {
  let service: Service
  beforeAll(async () => {
    service = await startService({ env: { ...modelEnv(), WA_MAX_CONCURRENT_SESSIONS: "1" } })
  })
  afterAll(() => stopAndClean(service))

  it("a key over its concurrent-session cap gets 429 too_many_concurrent_sessions", async () => {
    model.setScript(() => ({ tool: "ask_human", args: { prompt: "hold" } }))
    const { sid, rid } = await create(service, { instructions: "hold the slot" })
    await waitForStatus(service, sid, rid, ["awaiting_input"])
    const refused = await service.request("POST", `${base(service)}/sessions`, { body: { instructions: "second" } })
    expect(refused.status).toBe(429)
    expect(refused.json.code).toBe("too_many_concurrent_sessions")
    expect(refused.json.extra).toMatchObject({ limit: 1, active: 1 })
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
    // Closing the session frees the slot.
    expect((await service.request("POST", `${base(service)}/sessions/${sid}/close`)).json.status).toBe("closed")
    model.setScript(() => ({ tool: "done", args: { output: 1 } }))
    expect((await service.request("POST", `${base(service)}/sessions`, { body: { instructions: "now", keep_alive: false } })).status).toBe(201)
  })
})

describe("browser crash", () => {
  let service: Service
  beforeAll(async () => {
    service = await startService({ env: modelEnv() })
  })
  afterAll(() => stopAndClean(service))

  /** Chromium processes started by this service (its descendants only, so parallel tests are safe). */
  const chromiumPids = (root: number): Array<number> => {
    const table = execFileSync("ps", ["-eo", "pid=,ppid=,comm="], { encoding: "utf8" })
      .trim().split("\n").map((line) => line.trim().split(/\s+/)).map(([pid, ppid, comm]) => ({ pid: Number(pid), ppid: Number(ppid), comm: comm ?? "" }))
    const descendants = new Set([root])
    for (let changed = true; changed;) {
      changed = false
      for (const row of table) if (descendants.has(row.ppid) && !descendants.has(row.pid)) descendants.add(row.pid), changed = true
    }
    return table.filter((row) => descendants.has(row.pid) && row.comm.includes("chrom")).map((row) => row.pid)
  }

  it("a Chromium killed mid-run gives a clean failure, and the next session works", async () => {
    let killed = false
    model.setScript(async (_request, turn) => {
      if (turn === 1 && !killed) {
        killed = true
        for (const pid of chromiumPids(service.process.pid!)) {
          try {
            process.kill(pid, "SIGKILL")
          } catch {
            // already gone
          }
        }
        await new Promise((r) => setTimeout(r, 300))
      }
      return { tool: "navigate", args: { url: `${site.url}/page/${turn + 1}` } }
    })
    const first = await create(service, { instructions: "crash" })
    const failed = await waitForStatus(service, first.sid, first.rid, terminal)
    expect(killed).toBe(true)
    expect(failed.status).toBe("failed")
    expect(failed.error.code).toBe("browser_crashed")

    model.setScript((_request, turn) =>
      turn === 0 ? { tool: "navigate", args: { url: `${site.url}/page/2` } } : { tool: "done", args: { output: "alive" } }
    )
    const second = await create(service, { instructions: "after the crash" })
    const ok = await waitForStatus(service, second.sid, second.rid, terminal)
    expect(ok.status).toBe("done")
    expect(ok.output).toBe("alive")
  })
})
