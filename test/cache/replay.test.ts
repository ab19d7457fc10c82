/**
 * cache_script end to end: a DoAnything run that ends done saves its actions; the next run of the
 * same task replays them without the model (0 model requests, 0 tokens). When the site renames a
 * button the replay finds it by its CSS path and heals the step without the model; when the site
 * also moves it, the replay hands that one step to the model. Either way the run succeeds and the
 * healed script is saved as the next version. A run without cache_script neither replays nor saves.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { lastUserText, refOfElement as refFor, type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import { TERMINAL, waitForRunStatus } from "../support/runs.ts"

/** A three-page order wizard; its first button's label and place are what the site changes. */
const shop = { nextLabel: "Next", wrapped: false, confirmedSize: undefined as string | undefined }
/** The names the site received (what the browser typed). */
const namesReceived: Array<string> = []
let site: Server
let siteUrl = ""

const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`

beforeAll(async () => {
  site = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x")
    res.setHeader("content-type", "text/html; charset=utf-8")
    if (url.pathname === "/shop") {
      res.end(page("Shop", `<h1>Order a shirt</h1><form action="/shop/size"><label>Name <input name="name"></label>${shop.wrapped ? `<div class="actions"><button>${shop.nextLabel}</button></div>` : `<button>${shop.nextLabel}</button>`}</form>`))
    } else if (url.pathname === "/shop/size") {
      const name = url.searchParams.get("name") ?? ""
      namesReceived.push(name)
      res.end(page("Size", `<h1>Size for ${name}</h1><form action="/shop/done"><input type="hidden" name="name" value="${name}">` +
        `<label>Size <select name="size"><option>S</option><option>M</option><option>L</option></select></label><button>Place order</button></form>`))
    } else if (url.pathname === "/shop/done") {
      res.end(page("Done", `<h1>Order placed</h1><p>Order for ${url.searchParams.get("name")} in size ${shop.confirmedSize ?? url.searchParams.get("size")}: confirmed</p>`))
    } else {
      res.statusCode = 404
      res.end("not found")
    }
  })
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve))
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => site.close(() => resolve())))

let model: ScriptedModel
let service: Service

beforeAll(async () => {
  // The model reads the page and takes the next step of the order; it knows nothing of scripts.
  model = await startScriptedModel((request) => {
    const text = lastUserText(request)
    if (text.includes("Order for")) {
      const summary = text.match(/Order for (\w+) in size (\w)/)
      return { tool: "done", args: { output: { name: summary?.[1], size: summary?.[2] } } }
    }
    if (text.includes("Size for")) {
      const size = refFor(text, "combobox")
      if (size !== undefined && !text.includes("=\"M\"")) return { tool: "select_option", args: { ref: size, values: ["M"] } }
      return { tool: "click", args: { ref: refFor(text, "button", "Place order")! } }
    }
    if (text.includes("Order a shirt") && JSON.stringify(request.messages).includes("secret shopper")) {
      const name = refFor(text, "textbox", "Name")!
      if (!/textbox "Name" \[\w+\] =/.test(text)) return { tool: "type", args: { ref: name, text: "{{secret:shopper}}" } }
      return { tool: "click", args: { ref: refFor(text, "button", shop.nextLabel)! } }
    }
    if (text.includes("Order a shirt")) {
      const name = refFor(text, "textbox", "Name")!
      if (!text.includes("=\"ada\"")) return { tool: "type", args: { ref: name, text: "ada" } }
      const button = refFor(text, "button", shop.nextLabel)!
      return { tool: "click", args: { ref: button } }
    }
    return { tool: "navigate", args: { url: `${siteUrl}/shop` } }
  })
  service = await startService({ env: { WA_MODEL_BASE_URL: model.baseUrl, WA_MODEL: "scripted", WA_ALLOW_PRIVATE_NETWORKS: "true" } })
}, 120_000)
afterAll(async () => {
  await stopAndClean(service)
  await model.close()
})

const INSTRUCTIONS = "Order a shirt in size M for ada and report the order."

/** Runs the task in a new session; returns the run, its events and the model requests it made. */
const order = async (body: Record<string, unknown> = { cache_script: true }) => {
  const before = model.requests.length
  const created = await service.request("POST", `/v1/projects/${service.projectId}/do_anything/sessions`, {
    body: { instructions: INSTRUCTIONS, keep_alive: false, ...body }
  })
  expect(created.status, created.text).toBe(201)
  const path = `/v1/projects/${service.projectId}/do_anything/sessions/${created.json.id}/runs/${created.json.latest_run_id}`
  const run = await waitForRunStatus(service, path, TERMINAL, { timeoutMs: 90_000, everyMs: 250 })
  const { events } = await readSse(`${service.url}${path}/events`, { authorization: `Bearer ${service.apiKey}` })
  return { run, events, modelRequests: model.requests.length - before }
}

const ofType = (events: ReadonlyArray<any>, type: string) => events.filter((event) => event.event === type).map((event) => event.data.data)

describe("cache_script", () => {
  it("the first run records its actions and saves them as version 1 of the task's script", async () => {
    const first = await order()
    expect(first.run.status, JSON.stringify(first.run.error)).toBe("done")
    expect(first.run.output).toEqual({ name: "ada", size: "M" })
    expect(ofType(first.events, "run.cache.miss")).toEqual([{ reason: "no_script" }])
    const saved = ofType(first.events, "run.cache.saved")
    expect(saved).toHaveLength(1)
    expect(saved[0]).toMatchObject({ version: 1, steps: 6, healed_steps: 0 })
    expect(first.modelRequests).toBe(6)
  }, 120_000)

  it("the next run of the same task replays the script without the model and gives the same output", async () => {
    const replay = await order()
    expect(replay.run.status, JSON.stringify(replay.run.error)).toBe("done")
    expect(replay.run.output).toEqual({ name: "ada", size: "M" })
    expect(replay.modelRequests).toBe(0)
    expect(ofType(replay.events, "run.cache.hit")[0]).toMatchObject({ version: 1, steps: 6 })
    expect(ofType(replay.events, "run.usage")).toEqual([])
    expect(ofType(replay.events, "run.cache.saved")).toEqual([])
    // The same actions ran, through the same tools (their events), on elements found again by role and name.
    expect(ofType(replay.events, "run.action.completed").map((data) => data.action)).toEqual(["navigate", "type", "click", "select_option", "click", "done"])
    // Spelled differently, the task is the same task.
    const respelled = await order({ cache_script: true, instructions: "  order a shirt in size M for ADA and report the order " })
    expect(respelled.modelRequests).toBe(0)
    expect(respelled.run.output).toEqual({ name: "ada", size: "M" })
  }, 120_000)

  it("after the site renames a button, the replay finds it by its CSS path and heals the step without the model", async () => {
    shop.nextLabel = "Continue to size"
    const healed = await order()
    expect(healed.run.status, JSON.stringify(healed.run.error)).toBe("done")
    expect(healed.run.output).toEqual({ name: "ada", size: "M" })
    expect(healed.modelRequests).toBe(0)
    const heal = ofType(healed.events, "run.cache.step_healed")
    expect(heal).toHaveLength(1)
    expect(heal[0]).toMatchObject({
      step: 3,
      by: "css_path",
      old: { tool: "click", target: { role: "button", name: "Next" } },
      new: { tool: "click", target: { role: "button", name: "Continue to size" } }
    })
    expect(ofType(healed.events, "run.cache.saved")[0]).toMatchObject({ version: 2, healed_steps: 1 })
  }, 120_000)

  it("after the site renames and moves it, the replay hands that one step to the model, succeeds, and saves the healed script", async () => {
    shop.nextLabel = "Choose a size"
    shop.wrapped = true
    const healed = await order()
    expect(healed.run.status, JSON.stringify(healed.run.error)).toBe("done")
    expect(healed.run.output).toEqual({ name: "ada", size: "M" })
    // One model request: the moved button's step; every other step came from the script.
    expect(healed.modelRequests).toBe(1)
    const heal = ofType(healed.events, "run.cache.step_healed")
    expect(heal).toHaveLength(1)
    expect(heal[0]).toMatchObject({
      step: 3,
      by: "model",
      old: { tool: "click", target: { role: "button", name: "Continue to size" } },
      new: { tool: "click", target: { role: "button", name: "Choose a size" } }
    })
    expect(ofType(healed.events, "run.cache.saved")[0]).toMatchObject({ version: 3, healed_steps: 1 })
    // The model was told which step it takes and why.
    expect(JSON.stringify(model.requests[model.requests.length - 1]!.messages)).toContain("could not be replayed")
    // The healed version replays cleanly.
    const again = await order()
    expect(again.modelRequests).toBe(0)
    expect(ofType(again.events, "run.cache.hit")[0]).toMatchObject({ version: 3 })
    expect(again.run.output).toEqual({ name: "ada", size: "M" })
  }, 180_000)

  it("a replay whose saved output is no longer on the page asks the model for the output", async () => {
    // The site now confirms another size than the one chosen: the saved {size: "M"} would be stale.
    shop.confirmedSize = "L"
    const stale = await order()
    expect(stale.run.status, JSON.stringify(stale.run.error)).toBe("done")
    expect(stale.run.output).toEqual({ name: "ada", size: "L" })
    expect(stale.modelRequests).toBe(1)
    expect(ofType(stale.events, "run.cache.step_healed")[0]).toMatchObject({ step: 6, by: "model", old: { tool: "done" }, new: { tool: "done" } })
    shop.confirmedSize = undefined
  }, 120_000)

  it("a script made with a secret keeps its placeholder, never the value, and the replay types the value", async () => {
    const value = "Grace-7fq2"
    const secret = await service.request("POST", `/v1/projects/${service.projectId}/secrets`, {
      body: { name: "shopper", value, origins: [siteUrl] }
    })
    expect(secret.status, secret.text).toBe(201)
    const task = { cache_script: true, instructions: "Order a shirt in size M for the secret shopper and report the order.", secrets: ["shopper"] }
    const first = await order(task)
    expect(first.run.status, JSON.stringify(first.run.error)).toBe("done")
    const scriptId = ofType(first.events, "run.cache.saved")[0].script_id
    const stored = await service.request("GET", `/v1/projects/${service.projectId}/cache_scripts/${scriptId}`)
    expect(stored.status).toBe(200)
    expect(stored.text).toContain("{{secret:shopper}}")
    expect(stored.text).not.toContain(value)
    namesReceived.length = 0
    const replay = await order(task)
    expect(replay.modelRequests).toBe(0)
    expect(replay.run.status, JSON.stringify(replay.run.error)).toBe("done")
    expect(namesReceived).toEqual([value])
    // The events of the replay show the placeholder, not the value.
    expect(JSON.stringify(replay.events)).not.toContain(value)
  }, 180_000)

  it("a run without cache_script uses the model and leaves the script alone", async () => {
    const plain = await order({})
    expect(plain.run.status).toBe("done")
    expect(plain.modelRequests).toBe(6)
    expect(plain.events.some((event) => String(event.event).startsWith("run.cache."))).toBe(false)
  }, 120_000)
})
