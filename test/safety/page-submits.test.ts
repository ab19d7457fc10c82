/**
 * The safety boundary against what a page does by itself (issue 28 §2), end to end: the real
 * service, real Chromium, the scripted model, and a fixture site served by this test.
 *
 * - Page-initiated submissions: an innocuous click whose page script calls form.submit() on a
 *   card form, a fetch POST of a card form's FormData, a message form that requestSubmit()s
 *   itself as the agent types. With `confirm_actions`, each is stopped in the page and a person
 *   is asked; "no" leaves nothing submitted and the agent is told, "yes" lets the second attempt
 *   through (exactly one submission reaches the site).
 * - Redirect hops: a page allowed at start whose redirect (302) leads to a denied address, here
 *   127.0.0.1 spelled 127.1, 0x7f000001 and [::ffff:127.0.0.1], pointing at a loopback listener
 *   of the test's own: the hop is refused before it is followed (the listener is never asked),
 *   and the run ends failed with safety_boundary_violated.
 */
import { createServer } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { lastUserText, refOf, type ScriptedModel, startScriptedModel, taskOf, toolResults } from "../fixtures/model/scripted-model.ts"
import { waitForRunStatus } from "../support/runs.ts"
import { type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { listen, safetyClient, terminal } from "./support.ts"

const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`

const cardForm = (id: string, action: string) =>
  `<form id="${id}" method="post" action="${action}">
     <label>Card number <input name="card_number" value="4242424242424242"></label>
   </form>`

interface Site {
  readonly port: number
  readonly counts: Record<string, number>
  readonly hops: Array<string>
  close(): Promise<void>
}

const startSite = async (): Promise<Site> => {
  const counts: Record<string, number> = { charge: 0, apiCharge: 0, messages: 0 }
  const hops: Array<string> = []
  // The hop's target: a loopback listener of this test's own; it must never be asked.
  const hopServer = createServer((req, res) => {
    hops.push(`${req.headers.host} ${req.url}`)
    res.writeHead(200, { "content-type": "text/html" }).end(page("Landing", "<h1>Hop landing</h1>"))
  })
  const hopPort = await listen(hopServer)
  const spellings: Record<string, string> = {
    short: `http://127.1:${hopPort}/landing`,
    hex: `http://0x7f000001:${hopPort}/landing`,
    mapped: `http://[::ffff:127.0.0.1]:${hopPort}/landing`
  }
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x")
    const html = (body: string, title = "Fixture") => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(page(title, body))
    if (req.method === "POST") req.resume()
    if (req.method === "GET" && url.pathname === "/pay") {
      return html(`<h1>Checkout page</h1>${cardForm("card", "/charge")}
        <button type="button" onclick="document.getElementById('card').submit()">Review</button>`)
    }
    if (req.method === "POST" && url.pathname === "/charge") {
      counts["charge"]!++
      return html("<h1>Payment accepted</h1>")
    }
    if (req.method === "GET" && url.pathname === "/api-pay") {
      return html(`<h1>Checkout page</h1>${cardForm("card", "/api/charge")}<p id="result">Not charged</p>
        <button type="button" onclick="fetch('/api/charge', { method: 'POST', body: new FormData(document.getElementById('card')) })
          .then((r) => r.text(), (e) => 'failed').then((t) => { document.getElementById('result').textContent = t })">Review</button>`)
    }
    if (req.method === "POST" && url.pathname === "/api/charge") {
      counts["apiCharge"]!++
      return res.writeHead(200, { "content-type": "text/plain" }).end("Charged by API")
    }
    if (req.method === "GET" && url.pathname === "/compose") {
      // Sends itself as soon as the text ends with "!" (no button the agent presses).
      return html(`<h1>Compose</h1><form method="post" action="/messages">
        <label>Note <input name="body" oninput="if (this.value.endsWith('!')) this.form.requestSubmit()"></label></form>`)
    }
    if (req.method === "POST" && url.pathname === "/messages") {
      counts["messages"]!++
      return html("<h1>Message sent</h1>")
    }
    if (req.method === "GET" && url.pathname === "/start") {
      return html(`<h1>Start page</h1><a href="/away?to=${url.searchParams.get("to") ?? ""}">Go on</a>`)
    }
    if (req.method === "GET" && url.pathname === "/away") {
      return res.writeHead(302, { location: spellings[url.searchParams.get("to") ?? ""] ?? "/start" }).end()
    }
    res.writeHead(404, { "content-type": "text/plain" }).end("not found")
  })
  const port = await listen(server)
  return {
    port,
    counts,
    hops,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await new Promise<void>((resolve) => hopServer.close(() => resolve()))
    }
  }
}

let site: Site
let model: ScriptedModel
let service: Service

beforeAll(async () => {
  site = await startSite()
  const base = `http://127.0.0.1:${site.port}`
  model = await startScriptedModel((request) => {
    const observed = lastUserText(request)
    const task = taskOf(request)
    const last = toolResults(request).at(-1) as { code?: string; error?: string } | undefined
    if (last?.code === "UserDeclined") return { tool: "done", args: { output: { declined: last.error } } }
    if (task.startsWith("pay by form")) {
      if (observed.includes("Payment accepted")) return { tool: "done", args: { output: { paid: true, told: last?.code ?? null } } }
      if (!observed.includes("Checkout page")) return { tool: "navigate", args: { url: `${base}/pay` } }
      return { tool: "click", args: { ref: refOf(observed, "Review") } }
    }
    if (task.startsWith("pay by fetch")) {
      if (observed.includes("Charged by API")) return { tool: "done", args: { output: { paid: true } } }
      if (!observed.includes("Checkout page")) return { tool: "navigate", args: { url: `${base}/api-pay` } }
      return { tool: "click", args: { ref: refOf(observed, "Review") } }
    }
    if (task.startsWith("write a note")) {
      if (observed.includes("Message sent")) return { tool: "done", args: { output: { sent: true, told: last?.code ?? null } } }
      if (!observed.includes("Compose")) return { tool: "navigate", args: { url: `${base}/compose` } }
      return { tool: "type", args: { ref: refOf(observed, "Note"), text: "Hello!" } }
    }
    if (task.startsWith("follow the hop")) {
      const to = task.split(" ").at(-1)!
      if (observed.includes("Hop landing")) return { tool: "done", args: { output: "landed" } }
      if (!observed.includes("Start page")) return { tool: "navigate", args: { url: `http://localhost:${site.port}/start?to=${to}` } }
      return { tool: "click", args: { ref: refOf(observed, "Go on") } }
    }
    return { tool: "done", args: { output: "unknown task" } }
  })
  service = await startService({ env: scriptedAgentEnv(model.baseUrl) })
}, 120_000)
afterAll(async () => {
  await stopAndClean(service)
  await model?.close()
  await site?.close()
})

const { putPolicy, startRun: startSession, eventsOf } = safetyClient(() => service)
const startRun = async (instructions: string) => (await startSession(instructions)).runPath

/** Runs `task` until it asks a person, checks the question, answers `answer`, and returns the finished run. */
const answered = async (task: string, counter: string, answer: string, prompt: RegExp) => {
  const runPath = await startRun(task)
  const waiting = await waitForRunStatus(service, runPath, ["awaiting_input", ...terminal], { timeoutMs: 90_000, everyMs: 200 })
  expect(waiting.status, JSON.stringify(waiting.error ?? waiting.output)).toBe("awaiting_input")
  const asked = (await eventsOf(runPath, "run.input_request")).filter((e) => e.event === "run.input_request")
  expect(asked).toHaveLength(1)
  const request = asked[0]!.data.data
  expect(request.prompt).toMatch(prompt)
  // Stopped in the page: nothing reached the site while the person is asked.
  const before = site.counts[counter]!
  const reply = await service.request("POST", `${runPath}/intervene`, {
    body: { kind: "answer_input_request", input_request_id: request.input_request_id, response: answer }
  })
  expect(reply.status, reply.text).toBe(200)
  const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 90_000, everyMs: 200 })
  const failed = (await eventsOf(runPath)).filter((e) => e.event === "run.action.failed").map((e) => e.data.data)
  return { run, before, failed }
}

describe("submissions a page makes by itself", () => {
  it("an innocuous click whose script calls form.submit() on a card form: stopped and asked; no leaves nothing paid, yes lets the second click pay once", async () => {
    await putPolicy({ confirm_actions: ["payment"] })
    const prompt = /^The page tried to submit a payment form by itself \(form\.submit\(\); submit \(a form with a card number\)\) during the agent's click\. Nothing was submitted\. Allow it\? yes\/no$/
    const declined = await answered("pay by form", "charge", "no", prompt)
    expect(declined.before).toBe(0)
    expect(declined.run.status).toBe("done")
    expect(declined.run.output.declined).toContain("the user declined: the page tried to submit a payment form by itself")
    expect(site.counts["charge"]).toBe(0)

    const allowed = await answered("pay by form", "charge", "yes", prompt)
    expect(allowed.before).toBe(0)
    expect(allowed.run.status, JSON.stringify(allowed.run.error)).toBe("done")
    expect(allowed.run.output).toEqual({ paid: true, told: null })
    expect(site.counts["charge"]).toBe(1)
    // The first click's result told the agent what happened and what to do.
    const stopped = allowed.failed.find((f) => f.code === "PageSubmitStopped")
    expect(stopped?.error).toContain("the page tried to submit a payment form by itself (form.submit()")
    expect(stopped?.error).toContain("repeat the action")
  }, 240_000)

  it("a fetch POST of a card form's FormData: stopped (the page's fetch fails) and asked; no leaves nothing charged", async () => {
    await putPolicy({ confirm_actions: ["payment"] })
    const declined = await answered("pay by fetch", "apiCharge", "no", /^The page tried to submit a payment form by itself \(fetch POST \/api\/charge; submit \(a form with a card number\)\)/)
    expect(declined.before).toBe(0)
    expect(declined.run.status).toBe("done")
    expect(declined.run.output.declined).toContain("the user declined")
    expect(site.counts["apiCharge"]).toBe(0)
  }, 120_000)

  it("a form that requestSubmit()s itself as the agent types: stopped and asked; yes lets the second typing send once", async () => {
    await putPolicy({ confirm_actions: ["send_message"] })
    const allowed = await answered(
      "write a note",
      "messages",
      "yes",
      /^The page tried to submit a send message form by itself \(requestSubmit\(\); submit \(form posting to \/messages\)\) during the agent's type\./
    )
    expect(allowed.before).toBe(0)
    expect(allowed.run.status, JSON.stringify(allowed.run.error)).toBe("done")
    expect(allowed.run.output).toEqual({ sent: true, told: null })
    expect(site.counts["messages"]).toBe(1)
  }, 120_000)

  it("without a confirm category the same click pays at once (the tests above can fail)", async () => {
    await putPolicy({ confirm_actions: ["send_message"] })
    const before = site.counts["charge"]!
    const runPath = await startRun("pay by form")
    const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 90_000, everyMs: 200 })
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.output).toEqual({ paid: true, told: null })
    expect(site.counts["charge"]).toBe(before + 1)
  })
})

describe("redirect hops outside the boundary", () => {
  for (const spelling of ["short", "hex", "mapped"]) {
    it(`a redirect to 127.0.0.1 spelled ${spelling} is refused before it is followed; the run ends safety_boundary_violated`, async () => {
      await putPolicy({ denied_domains: ["127.0.0.1"] })
      const hopsBefore = site.hops.length
      const runPath = await startRun(`follow the hop ${spelling}`)
      const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 90_000, everyMs: 200 })
      expect(run.status).toBe("failed")
      expect(run.error.code).toBe("safety_boundary_violated")
      expect(run.error.extra.reason).toContain("127.0.0.1 is on the project's denied_domains")
      // Prevented, not only contained: the hop's host was never asked.
      expect(site.hops.slice(hopsBefore)).toEqual([])
      const failed = (await eventsOf(runPath)).filter((e) => e.event === "run.action.failed").map((e) => e.data.data)
      expect(failed.at(-1)?.error).toContain("the redirect was not followed")
    }, 120_000)
  }

  it("the same hop is followed without the boundary (the test can fail)", async () => {
    await putPolicy({})
    const hopsBefore = site.hops.length
    const runPath = await startRun("follow the hop short")
    const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 90_000, everyMs: 200 })
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(site.hops.slice(hopsBefore).filter((line) => line.endsWith("/landing"))).toHaveLength(1)
  })
})
