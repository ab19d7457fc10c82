/**
 * All-in-one mode: the service is killed (SIGKILL) in the middle of a run and started again on the
 * same data dir. The run's persisted Execute message is delivered again and the run resumes from
 * its last checkpoint, or fails with `cannot_resume` when a form held unsubmitted input.
 */
import { afterAll, beforeAll, expect, it } from "vitest"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { lastUserText, refOf, type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { newDataDir, type Service, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import { eventually, TERMINAL, waitForRunStatus } from "../support/runs.ts"

let site: FixtureSites
let model: ScriptedModel
let release: () => void = () => {}
let held: Promise<void> = Promise.resolve()
let reachedHold: () => void = () => {}
let holding: Promise<void> = Promise.resolve()

const arm = () => {
  held = new Promise((resolve) => (release = resolve))
  holding = new Promise((resolve) => (reachedHold = resolve))
}

beforeAll(async () => {
  site = await startFixtureSites()
  model = await startScriptedModel(async (request) => {
    const page = lastUserText(request)
    const task = JSON.stringify(request.messages).match(/Task:\\n([a-z ]+)/)?.[1] ?? ""
    const step = Number(page.match(/Step (\d+)\./)?.[1])
    if (task === "log in then wait") {
      if (page.includes("Logged in as ada")) {
        reachedHold()
        await held
        return { tool: "done", args: { output: { state: "logged-in", step } } }
      }
      const textbox = refOf(page, "textbox")
      if (textbox !== undefined && page.includes("/login")) return { tool: "type", args: { ref: textbox, text: "ada", submit: true } }
      return { tool: "navigate", args: { url: `${site.url}/login` } }
    }
    if (task === "wait past the deadline") {
      if (step === 1) return { tool: "navigate", args: { url: `${site.url}/page/1` } }
      reachedHold()
      await held
      return { tool: "scroll", args: { direction: "down" } }
    }
    if (task === "fill the form then wait") {
      if (step === 1) return { tool: "navigate", args: { url: `${site.url}/form` } }
      if (step === 2) return { tool: "type", args: { ref: refOf(page, "textbox")!, text: "half typed" } }
      reachedHold()
      await held
      return { tool: "done", args: { output: "too late" } }
    }
    return { tool: "done", args: { output: "ok" } }
  })
})
afterAll(async () => {
  release()
  await model.close()
  await site.close()
})

const env = (extra: Record<string, string> = {}) => ({
  WA_MODEL_BASE_URL: model.baseUrl,
  WA_MODEL: "scripted",
  WA_ALLOW_PRIVATE_NETWORKS: "true",
  ...extra
})

/** Kills the service while the run holds; it stays down until `downUntilMs` after the run was created (its deadline counts from then). */
const runUntilKilled = async (instructions: string, body: Record<string, unknown> = {}, extraEnv: Record<string, string> = {}, downUntilMs = 0) => {
  arm()
  const dataDir = newDataDir()
  const first = await startService({ dataDir, env: env(extraEnv) })
  const created = await first.request("POST", `/v1/projects/${first.projectId}/do_anything/sessions`, { body: { instructions, keep_alive: false, ...body } })
  expect(created.status).toBe(201)
  const createdAt = Date.now()
  const firstPath = `/v1/projects/${first.projectId}/do_anything/sessions/${created.json.id}/runs/${created.json.latest_run_id}`
  // The run must reach the hold on the first runner; if it ends there first (a slow host can spend
  // a short deadline before step 2), say so instead of waiting on a hold that never comes.
  let reached = false
  void holding.then(() => (reached = true))
  const outcome = await eventually("the run to reach the hold on the first runner", async () => {
    if (reached) return "held"
    const run = await first.request("GET", firstPath)
    return TERMINAL.includes(run.json?.status) ? run.json : undefined
  }, { timeoutMs: 60_000 })
  if (outcome !== "held") throw new Error(`the run ended on the first runner before it reached the hold: ${outcome.status} ${JSON.stringify(outcome.error)}`)
  await first.kill()
  const credentials = { projectId: first.projectId, apiKey: first.apiKey }
  release()
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, createdAt + downUntilMs - Date.now())))
  const second = await startService({ dataDir, env: env(extraEnv), credentials })
  const path = `/v1/projects/${second.projectId}/do_anything/sessions/${created.json.id}/runs/${created.json.latest_run_id}`
  const run = await waitForRunStatus(second, path, TERMINAL, { timeoutMs: 30_000 })
  const { events } = await readSse(`${second.url}${path}/events`, { authorization: `Bearer ${second.apiKey}` })
  return { service: second, run, events }
}

let service: Service | undefined
afterAll(() => stopAndClean(service))

it("a run interrupted by a crash resumes at its next step after the restart, still logged in", async () => {
  const result = await runUntilKilled("log in then wait")
  service = result.service
  expect(result.run.status, JSON.stringify(result.run.error)).toBe("done")
  expect(result.run.output).toEqual({ state: "logged-in", step: 3 })
  expect(result.events.find((event) => event.event === "run.resumed")?.data.data).toMatchObject({ from_step: 2 })
  const ids = result.events.map((event) => event.id)
  expect(ids).toEqual(ids.map((_, i) => i + 1))
  // One cost update per step, and the browser time up to the end (`final`, without a step).
  expect(result.events.filter((event) => event.event === "run.cost_update").map((event) => event.data.data.step ?? "final")).toEqual([1, 2, 3, "final"])
  await stopAndClean(service)
  service = undefined
})

it("a run whose form held unsubmitted input when the service died fails with cannot_resume", async () => {
  const result = await runUntilKilled("fill the form then wait")
  service = result.service
  expect(result.run.status).toBe("failed")
  expect(result.run.error.code).toBe("cannot_resume")
})

// The deadline (one "minute" of WA_RUN_MINUTE_MS) must leave the first runner time to start its
// browser and reach step 2 on a loaded host: at 6 s it once did not, the first runner canceled the
// run itself, and the test waited on a hold that never came.
it("a run whose duration limit passed while its runner was down ends canceled with duration_exceeded", async () => {
  await stopAndClean(service)
  // A minute lasts fifteen seconds here; the service dies within it and stays down past it (until
  // 15.5 s after the run was created, when its deadline was set).
  const result = await runUntilKilled("wait past the deadline", { max_duration_minutes: 1 }, { WA_RUN_MINUTE_MS: "15000" }, 15_500)
  service = result.service
  // The restarted service took the run up again (so the first one had not ended it) ...
  expect(result.events.some((event) => event.event === "run.resumed")).toBe(true)
  // ... and ended it at its limit instead of going on.
  expect(result.run.status).toBe("canceled")
  expect(result.run.error.code).toBe("duration_exceeded")
}, 180_000)
