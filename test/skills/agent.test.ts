/**
 * Skills in a run: a run recorded with cache_script is saved as a script skill (its typed name
 * becomes a parameter); a later run that lists the skill is offered `skill_<name>` and the call
 * replays the steps with the argument, without the model. An instructions skill answers with its
 * instructions, the arguments filled in. A script skill whose step the page no longer allows fails
 * with what was done and why, and the agent goes on by itself.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ChatRequest, lastUserText, refOfElement as refFor, type ScriptedModel, startScriptedModel, toolResults } from "../fixtures/model/scripted-model.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import { TERMINAL, waitForRunStatus } from "../support/runs.ts"

const shop = { buttonLabel: "Next", wrapped: false }
const LEAKED = "zebra-quartz-4471"
const namesReceived: Array<string> = []
let site: Server
let siteUrl = ""

const page = (title: string, body: string) => `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`

beforeAll(async () => {
  site = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x")
    res.setHeader("content-type", "text/html; charset=utf-8")
    if (url.pathname === "/shop") {
      const button = `<button>${shop.buttonLabel}</button>`
      res.end(page("Shop", `<h1>Order a shirt</h1><form action="/shop/done"><label>Name <input name="name"></label>${shop.wrapped ? `<div>${button}</div>` : button}</form>`))
    } else if (url.pathname === "/shop/done") {
      namesReceived.push(url.searchParams.get("name") ?? "")
      res.end(page("Done", `<h1>Order placed</h1><p>Shirt ordered for ${url.searchParams.get("name")}</p>`))
    } else {
      res.statusCode = 404
      res.end("not found")
    }
  })
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve))
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => site.close(() => resolve())))

const taskOf = (request: ChatRequest) => JSON.stringify(request.messages).match(/Task:\\n([^\\]+)/)?.[1] ?? ""

let model: ScriptedModel
let service: Service

beforeAll(async () => {
  model = await startScriptedModel((request) => {
    const text = lastUserText(request)
    const task = taskOf(request)
    const results = toolResults(request)
    const ordered = text.match(/Shirt ordered for (\w+)/)?.[1]
    if (ordered !== undefined) return { tool: "done", args: { output: { ordered_for: ordered } } }
    if (task.startsWith("Use the skill to order")) {
      const name = task.match(/for (\w+)/)?.[1] ?? "nobody"
      // The skill failed: order by hand from the page it left.
      if (JSON.stringify(results).includes("SkillStepFailed")) {
        const field = refFor(text, "textbox", "Name")
        if (field !== undefined && !/textbox "Name" \[\w+\] =/.test(text)) return { tool: "type", args: { ref: field, text: name } }
        return { tool: "click", args: { ref: refFor(text, "button", shop.buttonLabel) } }
      }
      return { tool: "skill_order_shirt", args: { name } }
    }
    if (task.startsWith("Greet")) {
      // "Greet the insider": the model passes a secret's value it should never have had.
      if (results.length === 0) return { tool: "skill_greet", args: { person: task.includes("insider") ? LEAKED : "Lin" } }
      return { tool: "done", args: { output: { instructions: (results[0] as { instructions?: string }).instructions } } }
    }
    // The task recorded as the skill: order a shirt for ada.
    if (text.includes("Order a shirt")) {
      const field = refFor(text, "textbox", "Name")!
      if (!/textbox "Name" \[\w+\] =/.test(text)) return { tool: "type", args: { ref: field, text: "ada" } }
      return { tool: "click", args: { ref: refFor(text, "button", shop.buttonLabel)! } }
    }
    return { tool: "navigate", args: { url: `${siteUrl}/shop` } }
  })
  service = await startService({ env: { WA_MODEL_BASE_URL: model.baseUrl, WA_MODEL: "scripted", WA_ALLOW_PRIVATE_NETWORKS: "true" } })
}, 120_000)
afterAll(async () => {
  await stopAndClean(service)
  await model.close()
})

const runTask = async (body: Record<string, unknown>) => {
  const before = model.requests.length
  const created = await service.request("POST", `/v1/projects/${service.projectId}/do_anything/sessions`, { body: { keep_alive: false, ...body } })
  expect(created.status, created.text).toBe(201)
  const path = `/v1/projects/${service.projectId}/do_anything/sessions/${created.json.id}/runs/${created.json.latest_run_id}`
  const run = await waitForRunStatus(service, path, TERMINAL, { timeoutMs: 90_000, everyMs: 250 })
  const { events } = await readSse(`${service.url}${path}/events`, { authorization: `Bearer ${service.apiKey}` })
  return { run, events, requests: model.requests.slice(before) }
}
const ofType = (events: ReadonlyArray<any>, type: string) => events.filter((event) => event.event === type).map((event) => event.data.data)

describe("skills in a run", () => {
  it("a recorded run saved as a script skill is replayed by the skill's tool with the caller's argument", async () => {
    const recorded = await runTask({ instructions: "Order a shirt for ada.", cache_script: true })
    expect(recorded.run.status, JSON.stringify(recorded.run.error)).toBe("done")
    const skill = await service.request("POST", `/v1/projects/${service.projectId}/skills`, {
      body: {
        name: "order_shirt",
        description: "orders a shirt in the shop for a person",
        parameters: { type: "object", properties: { name: { type: "string", description: "who the shirt is for" } }, required: ["name"] },
        from_run_id: recorded.run.id,
        parameter_values: { name: "ada" }
      }
    })
    expect(skill.status, skill.text).toBe(201)
    expect(skill.json.kind).toBe("script")
    expect(JSON.stringify(skill.json.steps)).toContain("{{param:name}}")

    namesReceived.length = 0
    const used = await runTask({ instructions: "Use the skill to order a shirt for grace.", skills: ["order_shirt"] })
    expect(used.run.status, JSON.stringify(used.run.error)).toBe("done")
    expect(used.run.output).toEqual({ ordered_for: "grace" })
    expect(namesReceived).toEqual(["grace"])
    // The model saw the skill as a tool with its parameters, called it once, then finished.
    const offered = used.requests[0]!.tools!.find((entry) => entry.function.name === "skill_order_shirt")
    expect(offered?.function.parameters).toMatchObject({ properties: { name: { type: "string" } }, required: ["name"] })
    expect(used.requests).toHaveLength(2)
    expect(ofType(used.events, "run.skill.called")[0]).toMatchObject({ skill: "order_shirt", kind: "script", arguments: { name: "grace" } })
    expect(ofType(used.events, "run.skill.completed")[0]).toMatchObject({ skill: "order_shirt", steps: 3 })
  }, 180_000)

  it("an instructions skill answers with its instructions, the arguments filled in", async () => {
    const skill = await service.request("POST", `/v1/projects/${service.projectId}/skills`, {
      body: { name: "greet", description: "greets someone", parameters: { type: "object", properties: { person: { type: "string" } } }, instructions: "Say hello to {{param:person}} politely." }
    })
    expect(skill.status, skill.text).toBe(201)
    const used = await runTask({ instructions: "Greet the visitor.", skills: ["greet"] })
    expect(used.run.status, JSON.stringify(used.run.error)).toBe("done")
    expect(used.run.output).toEqual({ instructions: "Say hello to Lin politely." })
    expect(ofType(used.events, "run.skill.called")[0]).toMatchObject({ skill: "greet", kind: "instructions" })
  }, 120_000)

  it("a skill call's events pass through the run's secrets' redaction", async () => {
    const secret = await service.request("POST", `/v1/projects/${service.projectId}/secrets`, { body: { name: "insider_code", value: LEAKED, origins: [siteUrl] } })
    expect(secret.status, secret.text).toBe(201)
    const used = await runTask({ instructions: "Greet the insider.", skills: ["greet"], secrets: ["insider_code"] })
    expect(used.run.status, JSON.stringify(used.run.error)).toBe("done")
    expect(ofType(used.events, "run.skill.called")[0]).toMatchObject({ skill: "greet", arguments: { person: "{{secret:insider_code}}" } })
    expect(JSON.stringify(used.events)).not.toContain(LEAKED)
  }, 120_000)

  it("a script skill whose step the page no longer allows fails with the reason, and the agent finishes by itself", async () => {
    shop.buttonLabel = "Place the order"
    shop.wrapped = true
    namesReceived.length = 0
    const used = await runTask({ instructions: "Use the skill to order a shirt for hopper.", skills: ["order_shirt"] })
    expect(used.run.status, JSON.stringify(used.run.error)).toBe("done")
    expect(used.run.output).toEqual({ ordered_for: "hopper" })
    const failed = ofType(used.events, "run.skill.failed")
    expect(failed).toHaveLength(1)
    expect(failed[0]).toMatchObject({ skill: "order_shirt", step: 3 })
    expect(JSON.stringify(toolResults(used.requests[1]!))).toContain("could not be replayed")
    expect(namesReceived).toEqual(["hopper"])
  }, 180_000)
})
