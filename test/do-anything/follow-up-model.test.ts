/**
 * Convention B follow-ups (`POST /api/v1/projects/{pid}/do_anything/runs` with `session_id`):
 * without instructions the run observes (read-only actions, a fixed instruction to report the
 * page's state) on the same session; `model` must name a configured model, else 422 naming them.
 */
import { afterAll, beforeAll, expect, it } from "vitest"
import { startFixtureSites, type FixtureSites } from "../fixtures/sites/server.ts"
import { lastUserText, type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { TERMINAL, waitForRunStatus } from "../support/runs.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"

let site: FixtureSites
let model: ScriptedModel
let service: Service

beforeAll(async () => {
  site = await startFixtureSites()
  model = await startScriptedModel(() => ({ tool: "done", args: { output: "ok" } }))
  service = await startService({ env: { WA_MODEL_BASE_URL: model.baseUrl, WA_MODEL: "scripted", WA_ALLOW_PRIVATE_NETWORKS: "true" } })
})
afterAll(async () => {
  await stopAndClean(service)
  await model.close()
  await site.close()
})

const runs = () => `/api/v1/projects/${service.projectId}/do_anything/runs`
const waitForRun = (rid: string) => waitForRunStatus(service, `${runs()}/${rid}`, TERMINAL, { timeoutMs: 30_000 })

it("a follow-up with session_id and no instructions is accepted and reports the page the session is on", async () => {
  model.setScript((_request, turn) => turn === 0
    ? { tool: "navigate", args: { url: `${site.url}/js-rendered?delay=0` } }
    : { tool: "done", args: { output: "navigated" } })
  const first = await service.request("POST", runs(), { body: { instructions: "Open the page" } })
  expect(first.status).toBe(202)
  expect((await waitForRun(first.json.run_id)).status).toBe("succeeded")

  const seen: Array<{ page: string; tools: ReadonlyArray<string> }> = []
  model.setScript((request) => {
    seen.push({ page: lastUserText(request), tools: (request.tools ?? []).map((t) => t.function.name) })
    return { tool: "done", args: { output: "observed" } }
  })
  const follow = await service.request("POST", runs(), { body: { session_id: first.json.session_id } })
  expect(follow.status, follow.text).toBe(202)
  expect(follow.json.session_id).toBe(first.json.session_id)
  expect(follow.json.instructions).toMatch(/Report the current state/)
  const done = await waitForRun(follow.json.run_id)
  expect(done.status).toBe("succeeded")
  expect(done.output).toBe("observed")
  // It ran on the same browser (the page the first run left) with read-only actions only.
  expect(seen[0]!.page).toContain("/js-rendered")
  expect(seen[0]!.tools).not.toContain("navigate")
  expect(seen[0]!.tools).not.toContain("click")
  expect(seen[0]!.tools).toContain("read_page")

  // Without session_id, instructions stay required.
  const missing = await service.request("POST", runs(), { body: {} })
  expect(missing.status).toBe(422)
  expect(missing.json.code).toBe("validation_error")
})

it("the follow-up's model must name a configured model: it is used when it does, 422 naming the allowed ones otherwise", async () => {
  model.setScript(() => ({ tool: "done", args: { output: "ok" } }))
  const first = await service.request("POST", runs(), { body: { instructions: "Say ok" } })
  expect((await waitForRun(first.json.run_id)).status).toBe("succeeded")

  const wrong = await service.request("POST", runs(), { body: { session_id: first.json.session_id, instructions: "Again", model: "no-such-model" } })
  expect(wrong.status).toBe(422)
  expect(wrong.json.code).toBe("validation_error")
  expect(wrong.json.detail).toContain("scripted")
  expect(wrong.json.extra.errors[0].loc).toEqual(["body", "model"])

  const right = await service.request("POST", runs(), { body: { session_id: first.json.session_id, instructions: "Again", model: "scripted" } })
  expect(right.status, right.text).toBe(202)
  expect(right.json.model).toBe("scripted")
  expect((await waitForRun(right.json.run_id)).status).toBe("succeeded")
})
