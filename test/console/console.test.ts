/**
 * The web console in real Chromium against the real service (embedded PostgreSQL, the scripted
 * model, SearXNG faked, the research web on loopback), used as a person would: sign in with a
 * pasted key (the alternative to console accounts, which test/console/accounts.test.ts covers), start a run and watch its events arrive, answer the agent's question, approve a
 * DeepResearch outline with an edit and read the report (citations, confidence, hostile Markdown
 * rendered as text), run a WebSearch, create a monitor and see its snapshot, look at keys and
 * credits. Screenshots of the main pages go to test-results/console/.
 */
import { mkdirSync } from "node:fs"
import { createServer, request as httpRequest } from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type BrowserWatch, watchBrowser } from "../support/contract-browser.ts"
import { isStale, buildConsole } from "../../console/build.ts"
import { selectChromium } from "../../src/browser/chromium-executable.ts"
import { researchScript, echoClaims } from "../fixtures/model/research-model.ts"
import { promptText, toolResults } from "../fixtures/model/scripted-model.ts"
import { researchEnv, type ResearchFixtures, startResearchFixtures } from "../deep-research/helpers.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import { waitForRunStatus } from "../support/runs.ts"
import { followEvents, type StreamEvent, type StreamState } from "../../console/src/events.ts"

const shots = path.resolve(import.meta.dirname, "../../test-results/console")
let fx: ResearchFixtures
let service: Service
let browser: Browser
let browserWatch: BrowserWatch
let page: Page
let table: Record<string, ReadonlyArray<string>> = {}
/** Holds the agent of a "Hold for control" run in its model call (so the run stays running). */
let releaseHeld: () => void = () => {}
const held = new Promise<void>((resolve) => (releaseHeld = resolve))
const H1 = "127.0.0.1" as const
const H2 = "127.0.0.2" as const

/** Hostile text the writer slips into a section: it must show as text, never run or link. */
const HOSTILE = `<img src="x" onerror="window.__xss = 1"> and [a trap](javascript:window.__xss=2)`

beforeAll(async () => {
  // The console under test is the one in this tree: build it when a source is newer than the build.
  if (isStale()) await buildConsole()
  mkdirSync(shots, { recursive: true })
  fx = await startResearchFixtures(() => table)
  table = {
    "console-cost": [fx.web.url(H1, "/doc/console-cost-a"), fx.web.url(H2, "/doc/console-cost-b")],
    "console-history": [fx.web.url(H1, "/doc/console-history-a")],
    "console-dropped": [fx.web.url(H1, "/doc/never-read")],
    "console search one": [fx.web.url(H1, "/doc/search-one"), fx.web.url(H2, "/doc/search-two")]
  }
  const research = researchScript({
    brief: { title: "Console widgets", objective: "What the sources say about widgets.", key_questions: ["How much?"] },
    sections: [
      { title: "Costs", queries: ["console-cost"] },
      { title: "History", queries: ["console-history"] },
      { title: "A dropped section", queries: ["console-dropped"] }
    ],
    write: (_section, prompt) => `${echoClaims(prompt)}\n\n${HOSTILE}`
  })
  // One model for both products: agent calls carry tools, research calls do not.
  fx.model.setScript((request, turn) => {
    if ((request.tools?.length ?? 0) === 0) return research(request, turn)
    if (promptText(request).includes("Finish at once")) return { tool: "done", args: { output: "finished" } }
    if (promptText(request).includes("Hold for control")) return held.then(() => ({ tool: "done", args: { output: "released" } }))
    const results = toolResults(request) as Array<{ answer?: unknown; url?: unknown }>
    const answers = results.filter((r) => r?.answer !== undefined)
    if (!results.some((r) => typeof r?.url === "string")) return { tool: "screenshot" }
    return answers.length === 0
      ? { tool: "ask_human", args: { prompt: "What is the 2FA code?", schema: { type: "string" } } }
      : { tool: "done", args: { output: { code: answers[answers.length - 1]!.answer } } }
  })
  service = await startService({ env: researchEnv(fx.model, fx.engines, { WA_STEP_SCREENSHOTS: "false" }) })
  const local = await selectChromium({ explicitPath: process.env["CHROMIUM_PATH"], dataDir: service.dataDir })
  const prepared = await local.prepare()
  browser = await chromium.launch({ executablePath: prepared.executablePath, env: { ...process.env, ...prepared.env }, args: ["--no-sandbox"] })
  browserWatch = watchBrowser(service.url)
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  browserWatch.watch(context)
  page = await context.newPage()
  page.setDefaultTimeout(60_000)
})
// What the browser got from the service goes through the contract hook; a mismatch fails the test whose page got it.
afterEach(async () => {
  expect(await browserWatch?.takeMismatches() ?? []).toEqual([])
})
afterAll(async () => {
  releaseHeld()
  await browser?.close()
  await stopAndClean(service)
  await fx?.close()
})

const shot = (name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true })

describe("the console", () => {
  it("is served at /console with its assets, and client routes fall back to the app", async () => {
    const index = await service.fetch(`${service.url}/console`)
    expect(index.status).toBe(200)
    expect(index.headers.get("content-type")).toContain("text/html")
    expect(index.headers.get("cache-control")).toBe("no-cache")
    expect(index.headers.get("content-security-policy")).toContain("script-src 'self'")
    const html = await index.text()
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1]
    expect(script).toBeDefined()
    const asset = await service.fetch(`${service.url}${script}`, { headers: { "accept-encoding": "gzip" } })
    expect(asset.status).toBe(200)
    expect(asset.headers.get("content-type")).toContain("text/javascript")
    expect(asset.headers.get("cache-control")).toContain("immutable")
    const route = await service.fetch(`${service.url}/console/research/run_anything`)
    expect(route.status).toBe(200)
    expect(await route.text()).toBe(html)
    // Nothing outside the built console is reachable through it.
    for (const escape of ["/console/..%2f..%2fpackage.json", "/console/%2e%2e/%2e%2e/package.json", "/console/assets/..%2f..%2f..%2fsrc%2fmain.ts"]) {
      const response = await service.fetch(`${service.url}${escape}`)
      expect(response.status, escape).toBe(404)
    }
    const missing = await service.fetch(`${service.url}/console/assets/missing.js`)
    expect(missing.status).toBe(404)
    expect((await missing.json()).code).toBe("not_found")
  })

  it("signs in with a pasted key, refusing a wrong one, and stays signed in on reload", async () => {
    await page.goto(`${service.url}/console`)
    // Email and password is the default; the key is the alternative.
    await page.getByRole("button", { name: "Use an API key instead" }).click()
    await page.getByLabel("API key").fill(`wa_${"A".repeat(36)}`)
    await page.getByLabel("Project id").fill(service.projectId)
    await shot("01-sign-in")
    await page.getByRole("button", { name: "Sign in" }).click()
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("not valid")

    // The JSON `wa keys create` prints fills both fields.
    await page.getByLabel("API key").fill(JSON.stringify({ project_id: service.projectId, key_id: "key_x", secret_token: service.apiKey }))
    expect(await page.getByLabel("Project id").inputValue()).toBe(service.projectId)
    expect(await page.getByLabel("API key").inputValue()).toBe(service.apiKey)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("heading", { name: "Sessions" }).waitFor()
    expect(await page.getByTestId("project-id").textContent()).toBe(service.projectId)
    const stored = await page.evaluate(() => sessionStorage.getItem("wa.console.credentials"))
    expect(JSON.parse(stored!)).toMatchObject({ token: service.apiKey, projectId: service.projectId })
    expect(await page.evaluate(() => localStorage.length)).toBe(0)
    await page.reload()
    await page.getByRole("heading", { name: "Sessions" }).waitFor()
  })

  it("signs out when the API no longer accepts the key it kept", async () => {
    const context = await browser.newContext()
    browserWatch.watch(context)
    try {
      const stale = JSON.stringify({ kind: "api_key", token: `wa_${"B".repeat(36)}`, projectId: service.projectId })
      await context.addInitScript((value) => {
        if (sessionStorage.getItem("wa.console.credentials") === null) sessionStorage.setItem("wa.console.credentials", value)
      }, stale)
      const other = await context.newPage()
      await other.goto(`${service.url}/console`)
      await other.getByRole("status").filter({ hasText: "no longer accepted" }).waitFor()
      expect(await other.getByRole("button", { name: "Sign in" }).isVisible()).toBe(true)
      expect(await other.evaluate(() => sessionStorage.getItem("wa.console.credentials"))).toBeNull()
    } finally {
      await context.close()
    }
  })

  it("starts a run, shows its events as they arrive, and answers the agent's question", async () => {
    await page.getByLabel("Instructions").fill("Log in with 2FA")
    await page.getByRole("button", { name: "Start run" }).click()
    await page.waitForURL(/\/console\/sessions\/sess_[^/]+\/runs\/run_/)
    const [, sid, rid] = /sessions\/(sess_[^/]+)\/runs\/(run_[^/?#]+)/.exec(page.url())!
    // The question arrives over the event stream and the answer form appears.
    await page.getByText("The agent asks:").waitFor()
    expect(await page.locator(".ask-prompt").textContent()).toContain("What is the 2FA code?")
    const requestEvent = page.locator('[data-event-type="run.input_request"]')
    await requestEvent.waitFor()
    // The status shown is the run re-read (GET) when run.status_changed arrives: it can lag the request event.
    await expect.poll(() => page.getByTestId("run-status").textContent()).toContain("awaiting input")
    // The agent's screenshot shows (a signed URL of the API, allowed by the console's CSP).
    const screenshot = page.getByTestId("latest-screenshot")
    await screenshot.waitFor()
    await expect.poll(() => screenshot.evaluate((img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth)).toBeGreaterThan(0)
    await shot("02-run-awaiting-input")

    await page.getByPlaceholder("Your answer").fill("424242")
    await page.getByRole("button", { name: "Answer" }).click()
    await page.locator('[data-event-type="run.completed"]').waitFor()
    await expect.poll(() => page.getByTestId("run-status").textContent()).toContain("done")
    await page.getByTestId("run-output").waitFor()
    expect(await page.getByTestId("run-output").textContent()).toContain("424242")
    // Every event of the run is shown once, in order, as the API has them.
    const shown = await page.locator("[data-event-id]").evaluateAll((items) => items.map((li) => ({ id: Number(li.getAttribute("data-event-id")), type: li.getAttribute("data-event-type") })))
    const ids = shown.map((e) => e.id)
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
    expect(new Set(ids).size).toBe(ids.length)
    expect(shown.map((e) => e.type)).toEqual(expect.arrayContaining(["run.status_changed", "run.input_request", "run.input_request_resolved", "run.completed"]))
    const api = await service.request("GET", `/v1/projects/${service.projectId}/do_anything/sessions/${sid}/runs/${rid}`)
    expect(api.json).toMatchObject({ status: "done", output: { code: "424242" } })
    await shot("03-run-done")

    // The sessions list links to the run.
    await page.locator("nav").getByRole("link", { name: "Sessions & runs" }).click()
    await page.getByRole("link", { name: sid! }).waitFor()
    await shot("04-sessions")
  })

  it("takes control of a running run through the control page the API issues, and cancels it", async () => {
    await page.locator("nav").getByRole("link", { name: "Sessions & runs" }).click()
    await page.getByLabel("Instructions").fill("Hold for control")
    await page.getByRole("button", { name: "Start run" }).click()
    await page.waitForURL(/\/console\/sessions\/sess_[^/]+\/runs\/run_/)
    await expect.poll(() => page.getByTestId("run-status").textContent(), { timeout: 60_000 }).toContain("running")
    await page.getByRole("button", { name: "Take control" }).click()
    const link = page.getByTestId("control-link")
    await link.waitFor()
    const href = await link.getAttribute("href")
    expect(href).toMatch(/\/v1\/control\//)
    expect(await link.getAttribute("target")).toBe("_blank")
    await page.locator('[data-event-type="run.take_control_pending"]').waitFor()
    await shot("05-run-take-control")
    const control = await page.context().newPage()
    await control.goto(href!)
    expect(await control.title()).toMatch(/^Take control of run run_/)
    await control.close()
    await page.getByRole("button", { name: "Cancel" }).click()
    await expect.poll(() => page.getByTestId("run-status").textContent(), { timeout: 60_000 }).toContain("canceled")
  })

  it("approves a DeepResearch outline with an edit and renders the report with citations and confidence", async () => {
    await page.locator("nav").getByRole("link", { name: "DeepResearch" }).click()
    await page.getByLabel("Topic").fill("Widgets and their prices")
    await page.getByLabel("Depth").selectOption("light")
    await page.getByRole("button", { name: "Start research" }).click()
    await page.waitForURL(/\/console\/research\/run_/)
    const rid = /research\/(run_[^/?#]+)/.exec(page.url())![1]!

    // The gate: three proposed sections; drop the third.
    await page.getByRole("heading", { name: /Approve the outline/ }).waitFor()
    expect(await page.locator('[data-phase="hitl_outline"]').getAttribute("data-phase-state")).toBe("current")
    const sections = page.locator(".outline > li")
    expect(await sections.count()).toBe(3)
    await sections.nth(2).getByRole("checkbox").uncheck()
    await shot("06-research-outline")
    await page.getByRole("button", { name: "Approve with 1 edit" }).click()

    const report = page.getByTestId("report")
    await report.waitFor({ timeout: 120_000 })
    expect(await page.getByTestId("research-status").textContent()).toContain("done")
    const run = (await service.request("GET", `/v1/projects/${service.projectId}/deep_research/runs/${rid}`)).json
    expect(run.outline.sections.map((s: { title: string }) => s.title)).toEqual(["Costs", "History"])
    const headings = await report.locator("article h3").allTextContents()
    expect(headings).toEqual(expect.arrayContaining(["Costs", "History", "Sources"]))
    expect(headings).not.toContain("A dropped section")
    expect(await report.textContent()).toContain(`${run.result.citations_count} citations`)
    expect(await report.textContent()).toContain(`${run.result.confidence_summary.high} high`)
    // Citation markers link to their numbered source.
    const marker = report.locator("article a.cite").first()
    const target = await marker.getAttribute("href")
    expect(target).toMatch(/^#source-\d+$/)
    expect(await report.locator(`article li${target}`).count()).toBe(1)
    expect(await report.locator(`article li${target} a`).getAttribute("href")).toMatch(/^http:\/\/127\.0\.0\.\d+:\d+\/doc\//)
    // The hostile Markdown is text: no element from it, no javascript: link, nothing ran.
    expect(run.result.final_md).toContain("onerror")
    expect(await report.textContent()).toContain("onerror")
    expect(await report.locator("article img").count()).toBe(0)
    expect(await report.locator('article a[href^="javascript"]').count()).toBe(0)
    expect(await page.evaluate(() => (window as { __xss?: unknown }).__xss)).toBeUndefined()
    await shot("07-research-report")
  })

  it("runs a WebSearch and lists its results", async () => {
    await page.locator("nav").getByRole("link", { name: "WebSearch" }).click()
    await page.getByLabel("Queries (one per line)").fill("console search one")
    await page.getByRole("button", { name: "Search" }).click()
    await page.waitForURL(/\/console\/search\/run_/)
    const results = page.getByTestId("search-results")
    await results.waitFor()
    const links = await results.locator("li > a").evaluateAll((items) => items.map((a) => a.getAttribute("href")))
    expect(links).toEqual(expect.arrayContaining([fx.web.url(H1, "/doc/search-one"), fx.web.url(H2, "/doc/search-two")]))
    // What the search cost, as the API's view of the run says it.
    const runId = new URL(page.url()).pathname.split("/").pop()!
    const run = await service.request("GET", `/v1/projects/${service.projectId}/web_search/runs/${runId}`)
    expect(run.json.service_cost_usd).not.toBe("0.00")
    await expect.poll(() => page.getByTestId("search-cost").textContent())
      .toBe(`$${run.json.total_cost_usd} (LLM $${run.json.llm_cost_usd} · fee $${run.json.service_cost_usd})`)
    await shot("08-search-results")
  })

  it("creates a monitor and shows its first snapshot", async () => {
    await page.locator("nav").getByRole("link", { name: "Monitors" }).click()
    await page.getByLabel("What to watch").fill("Tell me when the widget page changes")
    await page.getByLabel(/Pages \(one URL per line/).fill(fx.web.url(H1, "/doc/watched"))
    await page.getByRole("button", { name: "Create monitor" }).click()
    await page.waitForURL(/\/console\/monitors\/[^/]+$/)
    // The first tick of a direct-mode monitor takes the baseline snapshot; the page follows it live.
    await page.getByText("baseline", { exact: true }).waitFor({ timeout: 60_000 })
    await shot("09-monitor")
    await page.locator("nav").getByRole("link", { name: "Monitors" }).click()
    await page.getByRole("link", { name: "Tell me when the widget page changes" }).waitFor()
  })

  it("lists API keys, shows credits and usage, and the inbox", async () => {
    await page.locator("nav").getByRole("link", { name: "API keys" }).click()
    await page.getByRole("cell", { name: "admin" }).first().waitFor()
    await page.getByPlaceholder("name (optional)").fill("from the console")
    await page.getByRole("button", { name: "Create" }).click()
    const secret = await page.getByTestId("new-key").textContent()
    expect(secret).toMatch(/^wa_/)
    expect((await service.request("GET", `/v1/projects/${service.projectId}/billing/account`, { key: secret! })).status).toBe(200)
    await page.getByRole("cell", { name: "from the console" }).waitFor()
    await shot("10-keys")
    await page.locator("nav").getByRole("link", { name: "Usage & credits" }).click()
    await page.getByTestId("credits").waitFor()
    const account = (await service.request("GET", `/v1/projects/${service.projectId}/billing/account`)).json
    expect(await page.getByTestId("credits").textContent()).toContain(`$${account.credit_balance_usd}`)
    await shot("11-credits")
    await page.locator("nav").getByRole("link", { name: "Inbox" }).click()
    const inbox = (await service.request("GET", `/v1/projects/${service.projectId}/inbox`)).json
    await page.getByRole("heading", { name: `Inbox (${inbox.unread_count} unread)` }).waitFor()
  })
})

describe("the console's event stream client", () => {
  it("reconnects after a dropped stream with Last-Event-ID and shows every event once", async () => {
    const base = `/v1/projects/${service.projectId}/do_anything/sessions`
    const created = await service.request("POST", base, { body: { instructions: "Finish at once" } })
    const eventsPath = `${base}/${created.json.id}/runs/${created.json.latest_run_id}/events`
    await waitForRunStatus(service, `${base}/${created.json.id}/runs/${created.json.latest_run_id}`, ["done"])
    const all = (await readSse(`${service.url}${eventsPath}`, { authorization: `Bearer ${service.apiKey}` })).events.filter((e) => e.event !== "stream.heartbeat")
    expect(all.length).toBeGreaterThan(3)

    // A proxy that cuts the first connection after its first event, as a flaky network would.
    const upstream = new URL(service.url)
    const lastEventIds: Array<string | undefined> = []
    const proxy = createServer((req, res) => {
      const first = lastEventIds.length === 0
      lastEventIds.push(req.headers["last-event-id"] as string | undefined)
      const forward = httpRequest({ host: upstream.hostname, port: upstream.port, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        let buffered = ""
        answer.on("data", (chunk: Buffer) => {
          if (!first) return void res.write(chunk)
          buffered += chunk.toString()
          const end = buffered.indexOf("\n\n")
          if (end >= 0) {
            answer.destroy()
            // The first frame reaches the client, then the connection breaks (no end of the chunked body).
            res.write(buffered.slice(0, end + 2), () => setTimeout(() => res.socket?.destroy(), 50))
          }
        })
        answer.on("end", () => res.end())
      })
      forward.end()
    })
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
    try {
      const received: Array<StreamEvent> = []
      const states: Array<StreamState> = []
      await followEvents({
        url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${eventsPath}`,
        headers: { authorization: `Bearer ${service.apiKey}` },
        signal: new AbortController().signal,
        onEvents: (events) => received.push(...events),
        onState: (state) => states.push(state)
      })
      expect(states).toContain("reconnecting")
      expect(states[states.length - 1]).toBe("ended")
      expect(lastEventIds[0]).toBeUndefined()
      expect(lastEventIds[1]).toBe(String(all[0]!.id))
      expect(received.map((e) => e.id)).toEqual(all.map((e) => e.id))
      expect(received.map((e) => e.type)).toEqual(all.map((e) => e.event))
    } finally {
      proxy.close()
    }
  })
})
