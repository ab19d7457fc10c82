/** First end-to-end DoAnything run: a scripted model reads a value only JavaScript renders. */
import { afterAll, beforeAll, expect, it } from "vitest"
import { startFixtureSites, type FixtureSites } from "../fixtures/sites/server.ts"
import { lastUserText, type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { TERMINAL, waitForRunStatus } from "../support/runs.ts"

let site: FixtureSites
let model: ScriptedModel
let service: Service

beforeAll(async () => {
  site = await startFixtureSites()
  model = await startScriptedModel(() => ({ text: "unset" }))
  service = await startService({ env: { WA_MODEL_BASE_URL: model.baseUrl, WA_MODEL: "scripted", WA_ALLOW_PRIVATE_NETWORKS: "true" } })
})
afterAll(async () => {
  await stopAndClean(service)
  await model.close()
  await site.close()
})

const waitForRun = (sid: string, rid: string) =>
  waitForRunStatus(service, `/v1/projects/${service.projectId}/do_anything/sessions/${sid}/runs/${rid}`, TERMINAL, { timeoutMs: 30_000 })

it("reads a value that only JavaScript renders", async () => {
  model.setScript((request, turn) => {
    const page = lastUserText(request)
    if (turn === 0) return { tool: "navigate", args: { url: `${site.url}/js-rendered?delay=300` } }
    const match = page.match(/Rendered by JavaScript[^\n]*/)
    if (match) return { tool: "done", args: { output: { text: match[0] } } }
    return { tool: "wait_for", args: { text: "Rendered by JavaScript", timeout_ms: 5000 } }
  })
  const created = await service.request("POST", `/v1/projects/${service.projectId}/do_anything/sessions`, {
    body: { instructions: "Read the text the page renders with JavaScript", keep_alive: false }
  })
  expect(created.status).toBe(201)
  const run = await waitForRun(created.json.id, created.json.latest_run_id)
  expect(run.error).toBeNull()
  expect(run.status).toBe("done")
  expect(run.output.text).toContain("Rendered by JavaScript")
})
