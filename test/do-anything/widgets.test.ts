/**
 * Widget classes of issue 28 end to end through the REST API: the real service with real
 * Chromium, the fixture pages of src/eval/widgets.ts and a scripted model that follows
 * a fixed plan, reading refs from the observations the service sends it (so what is measured is
 * the observation and the tools). Each run's output is the page's own account of its state.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { type ChatRequest, lastUserText, refOf, type ScriptedModel, startScriptedModel, toolResults } from "../fixtures/model/scripted-model.ts"
import { type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { TERMINAL, waitForRunStatus } from "../support/runs.ts"

let site: FixtureSites
let model: ScriptedModel
let service: Service

const taskOf = (request: ChatRequest) => JSON.stringify(request.messages).match(/Task:\\n([a-z ]+)/)?.[1] ?? ""
/** The ref printed right after `text` (several controls can share a line). */
const refAfter = (page: string, text: string) => new RegExp(`${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}[^[]*\\[((?:f\\d+)*e\\d+)\\]`).exec(page)?.[1]
const stateLine = (page: string, prefix: string) => page.split("\n").find((line) => line.trim().startsWith(prefix))?.trim()

/** The fixed plans, one per task: look at the page, take the next step of the plan. */
const plans: Record<string, (page: string, request: ChatRequest) => { tool: string; args?: Record<string, unknown> }> = {
  "put deploy first": (page) => {
    if (!page.includes("/widgets/sortable")) return { tool: "navigate", args: { url: `${site.url}/widgets/sortable` } }
    if (page.includes("Order: Deploy >")) return { tool: "done", args: { output: stateLine(page, "Order:") } }
    return { tool: "drag", args: { ref: refOf(page, `draggable "Deploy"`), to_ref: refOf(page, `draggable "Write changelog"`) } }
  },
  "move the login bug to done": (page) => {
    if (!page.includes("/widgets/kanban")) return { tool: "navigate", args: { url: `${site.url}/widgets/kanban` } }
    if (page.includes("Done: Fix login bug")) return { tool: "done", args: { output: stateLine(page, "To do:") } }
    return { tool: "drag", args: { ref: refOf(page, `draggable "Fix login bug"`), to_ref: refOf(page, `dropzone "Done"`) } }
  },
  "choose the pro plan": (page) => {
    if (!page.includes("/widgets/tiles")) return { tool: "navigate", args: { url: `${site.url}/widgets/tiles` } }
    if (page.includes("Plan: pro")) return { tool: "done", args: { output: stateLine(page, "Plan:") } }
    return { tool: "click", args: { ref: refAfter(page, `radio "Pro`) } }
  },
  "buy the mug": (page, request) => {
    if (!page.includes("/widgets/cookie-wall")) return { tool: "navigate", args: { url: `${site.url}/widgets/cookie-wall` } }
    if (page.includes("Cart: 1 blue mug")) return { tool: "done", args: { output: stateLine(page, "Cart:") } }
    // The failed click names the cookie wall and the ref of its "Accept all".
    const last = toolResults(request).at(-1) as { error?: string } | undefined
    const accept = last?.error?.match(/"Accept all" \[(e\d+)\]/)?.[1]
    if (accept !== undefined) return { tool: "click", args: { ref: accept } }
    return { tool: "click", args: { ref: refOf(page, `button "Buy now"`) } }
  }
}

beforeAll(async () => {
  site = await startFixtureSites()
  model = await startScriptedModel((request) => {
    const plan = plans[taskOf(request)]
    return plan === undefined ? { tool: "done", args: { output: "no plan" } } : plan(lastUserText(request), request)
  })
  service = await startService({ env: scriptedAgentEnv(model.baseUrl) })
})
afterAll(async () => {
  await stopAndClean(service)
  await model.close()
  await site.close()
})

const base = () => `/v1/projects/${service.projectId}/do_anything`

const runTask = async (instructions: string) => {
  const created = await service.request("POST", `${base()}/sessions`, { body: { instructions, keep_alive: false } })
  expect(created.status, created.text).toBe(201)
  const run = await waitForRunStatus(service, `${base()}/sessions/${created.json.id}/runs/${created.json.latest_run_id}`, TERMINAL)
  return run
}

describe("widget classes through the API", () => {
  it("the model is offered drag, click_at and type_at", async () => {
    await runTask("put deploy first")
    const offered = (model.requests.at(-1)?.tools ?? []).map((t) => t.function.name)
    expect(offered).toEqual(expect.arrayContaining(["drag", "click_at", "type_at"]))
  })

  it("drag reorders an HTML5 sortable list", async () => {
    const run = await runTask("put deploy first")
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.output).toBe("Order: Deploy > Write changelog > Run tests > Tag release")
  })

  it("drag moves a pointer-event kanban card into the empty Done column", async () => {
    const run = await runTask("move the login bug to done")
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.output).toBe("To do: Update docs; Doing: Design review; Done: Fix login bug")
  })

  it("a tile whose radio is display:none is picked through its label", async () => {
    const run = await runTask("choose the pro plan")
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.output).toBe("Plan: pro; billing: monthly")
  })

  it("a click under a cookie wall fails naming its Accept button, which the agent clicks before retrying", async () => {
    const run = await runTask("buy the mug")
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.output).toBe("Cart: 1 blue mug")
  })
})
