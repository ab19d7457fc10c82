/**
 * Take control across nodes: two `wa serve` nodes (API + socket runner) on one PostgreSQL. The
 * control page's WebSocket is opened on the node that does NOT hold the session's browser; it
 * still shows the agent's page live and drives it (the relay goes through the Session entity's
 * RPCs, wherever the cluster placed it). Uses TEST_DATABASE_URL when set, else an embedded
 * PostgreSQL of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { lastUserText, type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { waitForRunStatus } from "../support/runs.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { clusterNodeEnv, eventually, shardsSettled } from "./nodes.ts"
import { freshDatabase } from "../support/service.ts"

let site: FixtureSites
let model: ScriptedModel
let a: Service
let b: Service
let dropDatabase: () => Promise<void> = async () => {}
let opened: () => void = () => {}
const held = new Promise<void>((resolve) => (opened = resolve))

beforeAll(async () => {
  site = await startFixtureSites()
  model = await startScriptedModel(async (request) => {
    const page = lastUserText(request)
    if (page.includes("Verified by a person:")) {
      return { tool: "done", args: { output: page.split("\n").find((line) => line.includes("Verified by a person:"))!.trim() } }
    }
    if (page.includes("A person took control")) return { tool: "read_page" }
    if (!page.includes("/take-control")) return { tool: "navigate", args: { url: `${site.url}/take-control` } }
    await held
    return { tool: "read_page" }
  })
  const database = await freshDatabase("control")
  const databaseUrl = database.url
  dropDatabase = database.drop
  const env = clusterNodeEnv(databaseUrl, undefined, model.baseUrl, { WA_CLUSTER_HEALTH_CHECK_SECONDS: "1" })
  a = await startService({ env })
  b = await startService({ env, credentials: { projectId: a.projectId, apiKey: a.apiKey } })
  await shardsSettled("the shards split over both runners", [a.url, b.url])
}, 240_000)

afterAll(async () => {
  opened()
  await Promise.all([stopAndClean(a), stopAndClean(b)])
  await dropDatabase()
  await model?.close()
  await site?.close()
}, 120_000)

describe("take control through a second API node", () => {
  it("the control socket on the node without the browser shows the agent's page live and drives it", async () => {
    const base = `/v1/projects/${a.projectId}/do_anything`
    const created = await a.request("POST", `${base}/sessions`, { body: { instructions: "Pass the human check", keep_alive: false } })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id as string
    const rid = created.json.latest_run_id as string
    const runPath = `${base}/sessions/${sid}/runs/${rid}`

    // Which node's runner holds the session (its browser): the other one gets the WebSocket.
    const holder = await eventually("the run to start on a runner", async () =>
      [a, b].find((node) => node.logs.some((line) => line.message === "run started" && line.annotations["session_id"] === sid)))
    const other = holder === a ? b : a
    expect(other.logs.some((line) => line.message === "run started" && line.annotations["session_id"] === sid)).toBe(false)
    await eventually("the agent on the page", async () => (model.requests.some((r) => lastUserText(r).includes("/take-control")) ? true : undefined))

    const taken = await holder.request("POST", `${runPath}/intervene`, { body: { kind: "take_control", reason: "across nodes" } })
    expect(taken.status, taken.text).toBe(200)
    // The same URL on the other node.
    const onOther = new URL(String(taken.json.standalone_control_url))
    onOther.host = new URL(other.url).host
    expect((await other.fetch(onOther)).status).toBe(200)

    onOther.protocol = "ws:"
    onOther.pathname += "/ws"
    const socket = new WebSocket(onOther)
    socket.binaryType = "arraybuffer"
    const texts: Array<any> = []
    let frames = 0
    socket.addEventListener("message", (event) => {
      if (typeof event.data === "string") texts.push(JSON.parse(event.data))
      else frames += 1
    })
    const closed = new Promise<void>((resolve) => socket.addEventListener("close", () => resolve()))
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener("open", () => resolve())
      socket.addEventListener("error", () => reject(new Error("the control socket did not open")))
    })
    await waitForRunStatus(other, runPath, ["paused"], { timeoutMs: 60_000 })
    await eventually("a frame relayed from the other node's browser", async () => (frames > 0 ? true : undefined))
    expect(texts.find((m) => m.type === "viewport")).toMatchObject({ width: 1280, height: 800 })
    opened()

    // The person's input crosses nodes: type a code and click Verify, then release.
    const input = (value: Record<string, unknown>) => socket.send(JSON.stringify({ type: "input", input: value }))
    input({ kind: "mouse", action: "down", x: 190, y: 140, button: "left", buttons: 1, click_count: 1 })
    input({ kind: "mouse", action: "up", x: 190, y: 140, button: "left", buttons: 0, click_count: 1 })
    for (const key of "NODE-B") {
      input({ kind: "key", action: "down", key })
      input({ kind: "key", action: "up", key })
    }
    input({ kind: "mouse", action: "down", x: 120, y: 224, button: "left", buttons: 1, click_count: 1 })
    input({ kind: "mouse", action: "up", x: 120, y: 224, button: "left", buttons: 0, click_count: 1 })
    socket.send(JSON.stringify({ type: "release" }))
    await closed
    expect(texts.at(-1)).toMatchObject({ type: "ended", reason: "control was released to the agent" })

    const run = await waitForRunStatus(a, runPath, ["done", "failed", "canceled"], { timeoutMs: 60_000 })
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.output).toBe("Verified by a person: NODE-B")
  }, 180_000)
})
