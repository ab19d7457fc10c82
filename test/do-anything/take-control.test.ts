/**
 * Take control, as a person would do it: the real service, the agent's real Chromium, and a
 * second Chromium (the person's) that opens the control URL, types and clicks on the agent's page
 * through the control page's canvas, and releases. Also: the URL's expiry, refresh_control_url,
 * tampered tokens, cancel while paused, the idle release, and the intervene kinds' 409s.
 */
import { chromium, type Browser, type Page } from "playwright-core"
import { randomBytes } from "node:crypto"
import { request as httpRequest } from "node:http"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type BrowserWatch, watchBrowser } from "../support/contract-browser.ts"
import { selectChromium } from "../../src/browser/chromium-executable.ts"
import { lastUserText, type ScriptedModel, startScriptedModel, toolResults } from "../fixtures/model/scripted-model.ts"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { eventually, waitForRunStatus } from "../support/runs.ts"
import { type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { EventContractError, readSse } from "../support/sse.ts"

/** The agent's viewport (src/browser/pool.ts), in CSS pixels. */
const AGENT_VIEWPORT = { width: 1280, height: 800 }
// Long enough for a loaded 2-core host to open a browser context and the page after the intervene.
const CONNECT_SECONDS = 10
const IDLE_SECONDS = 6

let site: FixtureSites
let model: ScriptedModel
let service: Service
let person: Browser

beforeAll(async () => {
  site = await startFixtureSites()
  model = await startScriptedModel(() => ({ text: "no script" }))
  service = await startService({
    env: scriptedAgentEnv(model.baseUrl, { WA_STEP_SCREENSHOTS: "false", WA_CONTROL_CONNECT_SECONDS: String(CONNECT_SECONDS), WA_CONTROL_IDLE_SECONDS: String(IDLE_SECONDS) })
  })
  // The person's own browser: the same Chromium the service would pick (system, else bundled).
  const local = await selectChromium({ explicitPath: process.env["CHROMIUM_PATH"], dataDir: service.dataDir })
  const prepared = await local.prepare()
  person = await chromium.launch({ executablePath: prepared.executablePath, env: { ...process.env, ...prepared.env }, args: ["--no-sandbox"] })
})
// What the person's browser got from the service goes through the contract hook; a mismatch fails the test whose page got it.
let browserWatch: BrowserWatch | undefined
afterEach(async () => {
  expect(await browserWatch?.takeMismatches() ?? []).toEqual([])
})
afterAll(async () => {
  await person?.close()
  await stopAndClean(service)
  await model?.close()
  await site?.close()
})

const base = () => `/v1/projects/${service.projectId}/do_anything`
const runPath = (sid: string, rid: string) => `${base()}/sessions/${sid}/runs/${rid}`
const terminal = ["done", "failed", "canceled"]

/** A model answer that waits until the test opens it. */
const gate = () => {
  let open: () => void = () => {}
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { wait: () => opened, open: () => open() }
}

/**
 * A session whose agent opens the fixture's human-check page, then blocks in its second model
 * call until `held.open()`; `after` answers the later turns.
 */
const startHeldRun = async (after: (observation: string) => { tool: string; args?: Record<string, unknown> }) => {
  const held = gate()
  let turns = 0
  model.setScript(async (request) => {
    const turn = turns++
    if (turn === 0) return { tool: "navigate", args: { url: `${site.url}/take-control` } }
    if (turn === 1) {
      await held.wait()
      return { tool: "read_page" }
    }
    return after(lastUserText(request))
  })
  const created = await service.request("POST", `${base()}/sessions`, { body: { instructions: "Pass the human check", keep_alive: false } })
  expect(created.status, created.text).toBe(201)
  const sid = created.json.id as string
  const rid = created.json.latest_run_id as string
  await eventually("the agent's second model call", () => (turns >= 2 ? true : undefined))
  return { sid, rid, held, turns: () => turns }
}

const intervene = (sid: string, rid: string, body: Record<string, unknown>) =>
  service.request("POST", `${runPath(sid, rid)}/intervene`, { body })

/** The run's events so far (a read of at most 800 ms); readSse holds each to its schema (test/support/sse.ts). */
const events = async (sid: string, rid: string): Promise<Array<{ type: string; data: any }>> => {
  const stream = await readSse(`${service.url}${runPath(sid, rid)}/events`, {
    authorization: `Bearer ${service.apiKey}`,
    "last-event-id": "0"
  }, { timeoutMs: 800 }).catch((error) => {
    if (error instanceof EventContractError) throw error
    return undefined
  })
  return (stream?.events ?? []).map((event) => event.data).filter((data) => data?.type !== undefined)
}

const eventOf = async (sid: string, rid: string, type: string) =>
  eventually(`a ${type} event`, async () => (await events(sid, rid)).filter((e) => e.type === type).at(-1), { timeoutMs: 30_000 })

/** The control page's WebSocket: its path plus `/ws`, the same signed query. */
const wsUrl = (controlUrl: string) => {
  const url = new URL(controlUrl)
  url.protocol = "ws:"
  url.pathname += "/ws"
  return url.toString()
}

/**
 * The status and body the control socket's upgrade request gets, sent the way a browser sends it
 * (with its Origin), read before any upgrade.
 */
const upgradeAnswer = (controlUrl: string, origin: string) =>
  new Promise<{ status: number; body: any }>((resolve, reject) => {
    const url = new URL(wsUrl(controlUrl).replace(/^ws:/, "http:"))
    // A connection of its own: the server ends it after answering an upgrade request without upgrading.
    const request = httpRequest(url, {
      agent: false,
      headers: { connection: "Upgrade", upgrade: "websocket", origin, "sec-websocket-version": "13", "sec-websocket-key": randomBytes(16).toString("base64") }
    })
    request.on("response", (response) => {
      let text = ""
      response.on("data", (chunk) => (text += chunk))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: text === "" ? undefined : JSON.parse(text) }))
    })
    request.on("upgrade", (_response, socket) => {
      socket.destroy()
      reject(new Error(`the socket was upgraded for origin ${origin}`))
    })
    request.on("error", reject)
    request.end()
  })

/** A WebSocket to the control page's socket (as the page opens it), with what it received. */
const openSocket = async (controlUrl: string, origin?: string) => {
  const socket = new WebSocket(wsUrl(controlUrl), origin === undefined ? undefined : { headers: { origin } } as unknown as string)
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
  return { socket, texts, frames: () => frames, closed }
}

/** Clicks the point (x, y) of the agent's page through the control page's canvas. */
const clickAgentPage = async (page: Page, x: number, y: number) => {
  const box = (await page.locator("#screen").boundingBox())!
  await page.mouse.click(box.x + (x * box.width) / AGENT_VIEWPORT.width, box.y + (y * box.height) / AGENT_VIEWPORT.height)
}

describe("take control", () => {
  it("a person opens the control URL, types and clicks on the agent's page through the canvas, releases, and the run goes on with what the person did", async () => {
    let outputSeen = ""
    const { sid, rid, held, turns } = await startHeldRun((observation) => {
      if (observation.includes("Verified by a person:")) {
        outputSeen = observation
        const line = observation.split("\n").find((l) => l.includes("Verified by a person:"))!
        return { tool: "done", args: { output: { verified: line.trim(), told_of_person: observation.includes("A person took control") } } }
      }
      return { tool: "read_page" }
    })

    const taken = await intervene(sid, rid, { kind: "take_control", reason: "captcha" })
    expect(taken.status, taken.text).toBe(200)
    expect(taken.json.status).toBe("running")
    const controlUrl = taken.json.standalone_control_url as string
    expect(controlUrl).toMatch(new RegExp(`^${service.url}/v1/control/ctl_[0-9a-z]{26}\\?exp=\\d+&sig=[A-Za-z0-9_-]{43}$`))
    expect(taken.json.exp).toBeGreaterThan(Date.now() / 1000)
    const pending = await eventOf(sid, rid, "run.take_control_pending")
    expect(pending.data).toMatchObject({ standalone_control_url: controlUrl, exp: taken.json.exp, reason: "captcha" })

    // The person's browser, with no API key: the control page, then the live view.
    const context = await person.newContext({ viewport: { width: 1400, height: 1000 } })
    browserWatch ??= watchBrowser(service.url)
    browserWatch.watch(context)
    const page = await context.newPage()
    const opened = await page.goto(controlUrl)
    expect(opened?.status(), await opened?.text()).toBe(200)
    // The page's inline script and style run by this response's nonce; nothing inline runs otherwise.
    const headers = opened!.headers()
    const csp = headers["content-security-policy"] ?? ""
    expect(csp).not.toContain("unsafe-inline")
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1]
    expect(nonce, csp).toBeDefined()
    expect(csp).toContain(`style-src 'nonce-${nonce}'`)
    expect(csp).toContain("frame-ancestors 'none'")
    expect(headers["x-content-type-options"]).toBe("nosniff")
    expect(await opened!.text()).toContain(`<script nonce="${nonce}">`)
    await page.waitForFunction(() => document.body.dataset["state"] === "connected")
    await page.waitForFunction(() => Number((document.getElementById("screen") as HTMLCanvasElement).dataset["frames"]) > 0)
    expect(await page.locator("#release").isVisible()).toBe(true)

    // Opening the URL paused the run; the agent's step under way finishes, then it waits.
    await waitForRunStatus(service, runPath(sid, rid), ["paused"])
    expect((await eventOf(sid, rid, "run.user_paused")).data).toMatchObject({ run_id: rid, reason: "captcha" })
    held.open()
    await eventually("the agent's held step to finish", async () =>
      (await events(sid, rid)).some((e) => e.type === "run.action.completed" && JSON.stringify(e.data).includes("read_page")) ? true : undefined)

    // The person types a code into the field and clicks Verify, on the canvas.
    await clickAgentPage(page, 40 + 150, 120 + 20)
    await page.keyboard.type("HUMAN-42")
    await clickAgentPage(page, 40 + 80, 200 + 24)
    // While the person held control the agent did not act.
    expect(turns()).toBe(2)
    expect((await service.request("GET", runPath(sid, rid))).json.status).toBe("paused")

    await page.click("#release")
    await page.waitForFunction(() => document.body.dataset["state"] === "ended")
    const released = await eventOf(sid, rid, "run.user_released")
    expect(released.data).toMatchObject({ run_id: rid, trigger: "control_page" })

    const run = await waitForRunStatus(service, runPath(sid, rid), terminal)
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.output).toEqual({ verified: "Verified by a person: HUMAN-42", told_of_person: true })
    expect(outputSeen).toContain("HUMAN-42")

    // The order of what happened, in the run's events.
    const types = (await events(sid, rid)).map((e) => e.type === "run.status_changed" ? `status:${e.data.status}` : e.type)
    const order = ["run.take_control_pending", "status:paused", "run.user_paused", "status:running", "run.user_released", "status:done"]
    let from = types.indexOf("run.take_control_pending")
    for (const type of order) {
      const at = types.indexOf(type, from)
      expect(at, `${type} after position ${from} in ${types.join(", ")}`).toBeGreaterThanOrEqual(from)
      from = at
    }

    // Control ended: the URL no longer works.
    const after = await service.fetch(controlUrl)
    expect(after.status).toBe(403)
    expect((await after.json()).code).toBe("control_url_expired")
    await context.close()
  })

  it("a run awaiting input (the agent asked about a human check) takes control: the question is withdrawn, the person solves it in the page, releases, and the agent goes on", async () => {
    let turns = 0
    let askResult: unknown
    model.setScript(async (request) => {
      const turn = turns++
      if (turn === 0) return { tool: "navigate", args: { url: `${site.url}/take-control` } }
      if (turn === 1) return { tool: "ask_human", args: { prompt: "Please pass the human check for me" } }
      const observation = lastUserText(request)
      if (observation.includes("Verified by a person:")) {
        askResult = (toolResults(request) as Array<{ answer?: unknown }>).find((r) => r?.answer !== undefined)?.answer
        const line = observation.split("\n").find((l) => l.includes("Verified by a person:"))!
        return { tool: "done", args: { output: { verified: line.trim() } } }
      }
      return { tool: "read_page" }
    })
    const created = await service.request("POST", `${base()}/sessions`, { body: { instructions: "Pass the human check", keep_alive: false } })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id as string
    const rid = created.json.latest_run_id as string
    await waitForRunStatus(service, runPath(sid, rid), ["awaiting_input"])
    const question = (await eventOf(sid, rid, "run.input_request")).data

    // The user would rather solve it than type an answer: take control of the waiting run.
    const taken = await intervene(sid, rid, { kind: "take_control", reason: "captcha" })
    expect(taken.status, taken.text).toBe(200)
    expect(taken.json.status).toBe("awaiting_input")
    const context = await person.newContext({ viewport: { width: 1400, height: 1000 } })
    browserWatch ??= watchBrowser(service.url)
    browserWatch.watch(context)
    const page = await context.newPage()
    expect((await page.goto(taken.json.standalone_control_url))?.status()).toBe(200)
    await page.waitForFunction(() => document.body.dataset["state"] === "connected")
    await page.waitForFunction(() => Number((document.getElementById("screen") as HTMLCanvasElement).dataset["frames"]) > 0)

    // Connecting withdrew the question and paused the run; answering it now is refused.
    await waitForRunStatus(service, runPath(sid, rid), ["paused"])
    expect((await eventOf(sid, rid, "run.input_request_withdrawn")).data).toMatchObject({ input_request_id: question.input_request_id, reason: "take_control" })
    const late = await intervene(sid, rid, { kind: "answer_input_request", input_request_id: question.input_request_id, response: "too late" })
    expect(late.status, late.text).toBe(409)

    await clickAgentPage(page, 40 + 150, 120 + 20)
    await page.keyboard.type("HUMAN-7")
    await clickAgentPage(page, 40 + 80, 200 + 24)
    expect(turns).toBe(2)
    await page.click("#release")
    await page.waitForFunction(() => document.body.dataset["state"] === "ended")

    const run = await waitForRunStatus(service, runPath(sid, rid), terminal)
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.output).toEqual({ verified: "Verified by a person: HUMAN-7" })
    // The agent's ask_human came back saying a person handled it, not with an invented answer.
    expect(String(askResult)).toContain("a person took control")
    const types = (await events(sid, rid)).map((e) => e.type === "run.status_changed" ? `status:${e.data.status}` : e.type)
    const order = ["run.input_request", "run.take_control_pending", "run.input_request_withdrawn", "status:paused", "run.user_paused", "status:running", "run.user_released", "status:done"]
    let from = 0
    for (const type of order) {
      const at = types.indexOf(type, from)
      expect(at, `${type} after position ${from} in ${types.join(", ")}`).toBeGreaterThanOrEqual(from)
      from = at
    }
    await context.close()
  })

  it("nobody connects: run.take_control_expired, the URL stops working, refresh_control_url issues a new one and the old one stays dead; tampered tokens are refused", async () => {
    const { sid, rid, held } = await startHeldRun(() => ({ tool: "done", args: { output: "ok" } }))

    // Before any take_control there is nothing to refresh, and nothing to release.
    expect((await intervene(sid, rid, { kind: "refresh_control_url" })).status).toBe(409)
    const notPaused = await intervene(sid, rid, { kind: "release_control", trigger: "api" })
    expect(notPaused.status).toBe(409)
    expect(notPaused.json).toMatchObject({ code: "conflict", extra: { status: "running" } })

    const first = (await intervene(sid, rid, { kind: "take_control", reason: "2fa" })).json
    const firstUrl = first.standalone_control_url as string
    // Tampered: another signature, another exp, another grant id, parts missing.
    const signed = new URL(firstUrl)
    const grant = signed.pathname.split("/").at(-1)!
    const exp = signed.searchParams.get("exp")!
    const sig = signed.searchParams.get("sig")!
    const flipped = sig.slice(0, -1) + (sig.endsWith("A") ? "B" : "A")
    for (const tampered of [
      `${grant}?exp=${exp}&sig=${flipped}`,
      `${grant}?exp=${Number(exp) + 3600}&sig=${sig}`,
      `ctl_00000000000000000000000000?exp=${exp}&sig=${sig}`,
      `${grant}?exp=${exp}`,
      `${grant}`,
      "nonsense"
    ]) {
      const response = await service.fetch(`${service.url}/v1/control/${tampered}`)
      expect(response.status, tampered).toBe(403)
      expect((await response.json()).code).toBe("control_url_invalid")
    }
    await expect(openSocket(`${service.url}/v1/control/${grant}?exp=${exp}&sig=${flipped}`)).rejects.toThrow()
    expect((await service.fetch(firstUrl)).status).toBe(200)

    // Nobody connects within WA_CONTROL_CONNECT_SECONDS.
    const expired = await eventOf(sid, rid, "run.take_control_expired")
    expect(expired.data).toMatchObject({ run_id: rid, exp: first.exp })
    expect((await service.request("GET", runPath(sid, rid))).json.status).toBe("running")
    const dead = await service.fetch(firstUrl)
    expect(dead.status).toBe(403)
    expect((await dead.json()).code).toBe("control_url_expired")
    await expect(openSocket(firstUrl)).rejects.toThrow()

    // refresh_control_url: a new URL; it works, the old one stays refused.
    const refreshed = await intervene(sid, rid, { kind: "refresh_control_url" })
    expect(refreshed.status, refreshed.text).toBe(200)
    const secondUrl = refreshed.json.standalone_control_url as string
    expect(secondUrl).not.toBe(firstUrl)
    expect((await service.fetch(secondUrl)).status).toBe(200)
    expect((await service.fetch(firstUrl)).status).toBe(403)
    const pendings = (await events(sid, rid)).filter((e) => e.type === "run.take_control_pending")
    expect(pendings.map((e) => e.data.standalone_control_url)).toEqual([firstUrl, secondUrl])
    expect(pendings[1]!.data.reason).toBe("2fa")

    // A refresh while that one is pending replaces it at once.
    const third = (await intervene(sid, rid, { kind: "refresh_control_url" })).json.standalone_control_url as string
    expect((await service.fetch(secondUrl)).status).toBe(403)
    expect((await service.fetch(third)).status).toBe(200)

    held.open()
    expect((await waitForRunStatus(service, runPath(sid, rid), terminal)).status).toBe("done")
    // A run that ended takes no take_control.
    const ended = await intervene(sid, rid, { kind: "take_control" })
    expect(ended.status).toBe(409)
    expect(ended.json.extra.status).toBe("done")
    expect((await service.fetch(third)).status).toBe(403)
  })

  it("the socket takes only the service's own Origin; one controller at a time: a second page takes over and the first is told", async () => {
    const { sid, rid, held } = await startHeldRun(() => ({ tool: "read_page" }))
    const url = (await intervene(sid, rid, { kind: "take_control", reason: "one at a time" })).json.standalone_control_url as string

    // Another site's page (a browser always sends its Origin): refused before the upgrade, the run not paused.
    for (const origin of ["http://evil.example", "null", `${new URL(service.url).protocol}//localhost.evil.example:${new URL(service.url).port}`]) {
      const answer = await upgradeAnswer(url, origin)
      expect(answer.status, origin).toBe(403)
      expect(answer.body).toMatchObject({ code: "origin_not_allowed" })
    }
    await expect(openSocket(url, "http://evil.example")).rejects.toThrow()
    expect((await service.request("GET", runPath(sid, rid))).json.status).toBe("running")

    // The service's own origin (what the control page sends) connects.
    const first = await openSocket(url, new URL(service.url).origin)
    await waitForRunStatus(service, runPath(sid, rid), ["paused"])
    await eventually("the first page's frames", () => (first.frames() > 0 ? true : undefined))

    // A second page on the same URL takes over; the first is told why, and its socket closes.
    const second = await openSocket(url, new URL(service.url).origin)
    await first.closed
    expect(first.texts.at(-1)).toMatchObject({ type: "ended", reason: expect.stringContaining("another page") })
    await eventually("the second page's frames", () => (second.frames() > 0 ? true : undefined))
    expect(second.texts[0]).toMatchObject({ type: "hello", run_id: rid })
    expect(second.socket.readyState).toBe(WebSocket.OPEN)
    // Control stayed with the person: the run is still paused, and the second page releases it.
    expect((await service.request("GET", runPath(sid, rid))).json.status).toBe("paused")
    second.socket.send(JSON.stringify({ type: "release" }))
    await second.closed
    expect(second.texts.at(-1)).toMatchObject({ type: "ended", reason: "control was released to the agent" })
    expect((await eventOf(sid, rid, "run.user_released")).data).toMatchObject({ trigger: "control_page" })
    held.open()
    await service.request("POST", `${runPath(sid, rid)}/cancel`, { body: {} })
  })

  it("cancel works while paused: the run is canceled and the control socket ends", async () => {
    const { sid, rid, held } = await startHeldRun(() => ({ tool: "read_page" }))
    const url = (await intervene(sid, rid, { kind: "take_control", reason: "look" })).json.standalone_control_url as string
    const control = await openSocket(url)
    await waitForRunStatus(service, runPath(sid, rid), ["paused"])
    await eventually("a first frame", () => (control.frames() > 0 ? true : undefined))
    expect(control.texts[0]).toMatchObject({ type: "hello", run_id: rid, reason: "look", idle_seconds: IDLE_SECONDS })
    expect(control.texts.find((m) => m.type === "viewport")).toMatchObject(AGENT_VIEWPORT)

    const canceled = await service.request("POST", `${runPath(sid, rid)}/cancel`, { body: { reason: "enough" } })
    expect(canceled.status, canceled.text).toBe(200)
    expect(canceled.json.status).toBe("canceled")
    await control.closed
    expect(control.texts.at(-1)).toMatchObject({ type: "ended" })
    held.open()
    expect((await service.request("GET", runPath(sid, rid))).json.status).toBe("canceled")
    expect((await service.fetch(url)).status).toBe(403)
  })

  it("a control page that sends nothing for WA_CONTROL_IDLE_SECONDS gives the browser back; release_control through the API also does", async () => {
    const { sid, rid, held } = await startHeldRun((observation) =>
      observation.includes("A person took control") ? { tool: "done", args: { output: "back" } } : { tool: "read_page" })
    const url = (await intervene(sid, rid, { kind: "take_control" })).json.standalone_control_url as string
    const idle = await openSocket(url)
    await waitForRunStatus(service, runPath(sid, rid), ["paused"])
    held.open()
    const released = await eventOf(sid, rid, "run.user_released")
    expect(released.data).toMatchObject({ trigger: "idle" })
    await idle.closed
    expect(idle.texts.at(-1)).toMatchObject({ type: "ended", reason: "control was released to the agent" })
    expect((await waitForRunStatus(service, runPath(sid, rid), terminal)).output).toBe("back")

    // release_control through the API, on a run a person holds.
    const next = await startHeldRun(() => ({ tool: "read_page" }))
    const nextUrl = (await intervene(next.sid, next.rid, { kind: "take_control" })).json.standalone_control_url as string
    const holder = await openSocket(nextUrl)
    await waitForRunStatus(service, runPath(next.sid, next.rid), ["paused"])
    // A second take_control while a person holds control is a conflict.
    expect((await intervene(next.sid, next.rid, { kind: "take_control" })).status).toBe(409)
    const byApi = await intervene(next.sid, next.rid, { kind: "release_control", trigger: "operator" })
    expect(byApi.status, byApi.text).toBe(200)
    expect(byApi.json.status).toBe("running")
    expect((await eventOf(next.sid, next.rid, "run.user_released")).data).toMatchObject({ trigger: "operator" })
    await holder.closed
    next.held.open()
    await service.request("POST", `${runPath(next.sid, next.rid)}/cancel`, { body: {} })
  })
})
