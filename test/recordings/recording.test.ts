/**
 * Recording end to end: the real service records a scripted-model run in real Chromium, stores
 * the recording as a run artifact, and a second Chromium replays it through the signed replay page.
 */
import { type Browser, chromium } from "playwright-core"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type BrowserWatch, watchBrowser } from "../support/contract-browser.ts"
import { chromiumArgs } from "../../src/browser/pool.ts"
import { chromiumPath } from "../browser/support.ts"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { type ChatRequest, type ScriptedModel, startScriptedModel, toolResults } from "../fixtures/model/scripted-model.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { eventually, waitForRunStatus } from "../support/runs.ts"

let site: FixtureSites
let model: ScriptedModel
let service: Service
let viewer: Browser

const MARKER = "Recorded marker: zebra-quartz-7"

beforeAll(async () => {
  site = await startFixtureSites()
  model = await startScriptedModel(() => ({ text: "no script" }))
  service = await startService({
    env: {
      WA_MODEL_BASE_URL: model.baseUrl,
      WA_MODEL: "scripted",
      WA_ALLOW_PRIVATE_NETWORKS: "true",
      WA_MAX_CONCURRENT_SESSIONS: "100"
    }
  })
  viewer = await chromium.launch({ executablePath: chromiumPath, args: [...chromiumArgs] })
})
// What the browser gets from the service goes through the contract hook; a mismatch fails the test whose page got it.
let browserWatch: BrowserWatch | undefined
afterEach(async () => {
  expect(await browserWatch?.takeMismatches() ?? []).toEqual([])
})
afterAll(async () => {
  await viewer?.close()
  await stopAndClean(service)
  await model.close()
  await site.close()
})

const base = () => `/v1/projects/${service.projectId}/do_anything`
const flatBase = () => `/api/v1/projects/${service.projectId}/do_anything`
const terminal = ["done", "failed", "canceled"]

/** Each run: navigate to `path` first, then done. */
const visit = (path: string) =>
  model.setScript((request: ChatRequest) =>
    toolResults(request).length === 0
      ? { tool: "navigate", args: { url: `${site.url}${path}` } }
      : { tool: "done", args: { output: "visited" } }
  )

const runPath = (sid: string, rid: string) => `${base()}/sessions/${sid}/runs/${rid}`

/** The run once its recording step is over: the run is terminal and its session has moved on. */
const settledRun = async (sid: string, rid: string, sessionStatus: "closed" | "idle") => {
  const run = await waitForRunStatus(service, runPath(sid, rid), terminal)
  expect(run.status, JSON.stringify(run.error)).toBe("done")
  // The recording is stored before the run ends: the first view that says done names it.
  expect(run.recording === null || run.recording.artifact_id !== null, JSON.stringify(run.recording)).toBe(true)
  await eventually(`session ${sessionStatus}`, async () => {
    const session = await service.request("GET", `${base()}/sessions/${sid}`)
    return session.json.status === sessionStatus ? true : undefined
  })
  return run
}

const recordingOf = (events: ReadonlyArray<{ type: number; data: unknown }>) => JSON.stringify(events.filter((e) => e.type === 2))

describe("recording", () => {
  it("records the run's pages as an artifact that a second browser replays", async () => {
    visit("/recorded")
    const created = await service.request("POST", `${base()}/sessions`, {
      body: { instructions: "Open the recorded page", keep_alive: false, recording: { enabled: true, quality: "high" } }
    })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id as string
    const rid = created.json.latest_run_id as string
    expect(created.json.runs[0].recording).toEqual({
      enabled: true,
      quality: "high",
      capture_during_take_control: true,
      artifact_id: null,
      size_bytes: null,
      replay_url: null,
      replay_url_expires_at: null
    })
    await settledRun(sid, rid, "closed")

    // The run points at its recording.
    const run = (await service.request("GET", runPath(sid, rid))).json
    expect(run.recording.artifact_id).toMatch(/^art_/)
    expect(run.recording.replay_url).toMatch(new RegExp(`^/v1/recordings/${run.recording.artifact_id}/replay\\?expires=\\d+&signature=`))
    expect(run.recording.size_bytes).toBeGreaterThan(0)
    const flatRun = (await service.request("GET", `${flatBase()}/runs/${rid}`)).json
    expect(flatRun.recording.artifact_id).toBe(run.recording.artifact_id)

    // Listed under both conventions.
    const listed = await service.request("GET", `${runPath(sid, rid)}/artifacts`)
    expect(listed.status, listed.text).toBe(200)
    expect(listed.json.items).toHaveLength(1)
    expect(listed.json.items[0]).toMatchObject({
      id: run.recording.artifact_id,
      run_id: rid,
      name: "recording.json",
      content_type: "application/json",
      size_bytes: run.recording.size_bytes
    })
    expect(listed.json.items[0].replay_url).toMatch(/^\/v1\/recordings\//)
    const flatListed = await service.request("GET", `${flatBase()}/runs/${rid}/artifacts`)
    expect(flatListed.json.items.map((item: { id: string }) => item.id)).toEqual([run.recording.artifact_id])

    // The content: rrweb events of the page the agent visited (fetch undoes the gzip encoding).
    const content = await service.request("GET", `${runPath(sid, rid)}/artifacts/${run.recording.artifact_id}`)
    expect(content.status).toBe(200)
    expect(content.headers.get("content-encoding")).toBe("gzip")
    expect(content.json.format).toBe("rrweb/2")
    expect(content.json.run_id).toBe(rid)
    expect(content.json.event_count).toBe(content.json.events.length)
    expect(recordingOf(content.json.events)).toContain(MARKER)
    // A client that does not take gzip gets the plain JSON.
    const plain = await service.fetch(`${service.url}${runPath(sid, rid)}/artifacts/${run.recording.artifact_id}`, {
      headers: { authorization: `Bearer ${service.apiKey}`, "accept-encoding": "identity" }
    })
    expect(plain.headers.get("content-encoding")).toBeNull()
    expect(JSON.parse(Buffer.from(await plain.arrayBuffer()).toString("utf8")).event_count).toBe(content.json.event_count)
    const missing = await service.request("GET", `${runPath(sid, rid)}/artifacts/art_unknown`)
    expect(missing.status).toBe(404)
    expect(missing.json.code).toBe("artifact_not_found")

    // A second browser, with no API key, opens the replay page and sees the visited page replayed.
    const context = await viewer.newContext()
    browserWatch ??= watchBrowser(service.url)
    browserWatch.watch(context)
    try {
      const page = await context.newPage()
      const response = await page.goto(`${service.url}${run.recording.replay_url}`)
      expect(response?.status()).toBe(200)
      expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'")
      expect(response?.headers()["content-security-policy"]).toContain("frame-ancestors 'self'")
      expect(response?.headers()["x-content-type-options"]).toBe("nosniff")
      await page.frameLocator(".replayer-wrapper iframe").getByText(MARKER).waitFor({ state: "visible", timeout: 30_000 })
      expect(await page.locator("body").getAttribute("data-state")).toBe("playing")
    } finally {
      await context.close()
    }

    // The signature is checked: altered → 403 invalid_signature, for the page and the events.
    const tampered = run.recording.replay_url.replace(/signature=./, (match: string) => match.endsWith("A") ? "signature=B" : "signature=A")
    for (const url of [tampered, tampered.replace("/replay?", "/events?")]) {
      const refused = await service.fetch(`${service.url}${url}`)
      expect(refused.status).toBe(403)
      expect((await refused.json()).code).toBe("invalid_signature")
    }
    const expired = run.recording.replay_url.replace(/expires=\d+/, "expires=1000")
    expect((await service.fetch(`${service.url}${expired}`)).status).toBe(403)
  })

  it("records each run of a session by its own setting; an unrecorded run has no artifact", async () => {
    visit("/recorded")
    const created = await service.request("POST", `${base()}/sessions`, {
      body: { instructions: "Open the recorded page", keep_alive: true, recording: { enabled: true } }
    })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id as string
    const first = created.json.latest_run_id as string
    await settledRun(sid, first, "idle")

    // A follow-up run, recorded too: it starts from the page the first one left, then page 2.
    visit("/page/2")
    const second = await service.request("POST", `${base()}/sessions/${sid}/runs`, {
      body: { instructions: "Open page 2", recording: { enabled: true, quality: "low" } }
    })
    expect(second.status, second.text).toBe(201)
    await settledRun(sid, second.json.id, "idle")
    const secondRun = (await service.request("GET", runPath(sid, second.json.id))).json
    expect(secondRun.recording.quality).toBe("low")
    const secondContent = await service.request("GET", `${runPath(sid, second.json.id)}/artifacts/${secondRun.recording.artifact_id}`)
    const snapshots = recordingOf(secondContent.json.events)
    expect(snapshots).toContain(MARKER)
    expect(snapshots).toContain("This is page number 2")

    // A run without recording: nothing is stored, and the view says it is not recorded.
    visit("/page/3")
    const third = await service.request("POST", `${base()}/sessions/${sid}/runs`, { body: { instructions: "Open page 3", keep_alive: false } })
    expect(third.status, third.text).toBe(201)
    await settledRun(sid, third.json.id, "closed")
    const thirdRun = (await service.request("GET", runPath(sid, third.json.id))).json
    expect(thirdRun.recording).toBeNull()
    const thirdArtifacts = await service.request("GET", `${runPath(sid, third.json.id)}/artifacts`)
    expect(thirdArtifacts.status).toBe(200)
    expect(thirdArtifacts.json.items).toEqual([])
    // The earlier runs keep theirs.
    expect((await service.request("GET", `${runPath(sid, first)}/artifacts`)).json.items).toHaveLength(1)
  })

  it("recording disabled: no artifact", async () => {
    visit("/recorded")
    const created = await service.request("POST", `${base()}/sessions`, {
      body: { instructions: "Open the recorded page", keep_alive: false, recording: { enabled: false, quality: "high" } }
    })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id as string
    const rid = created.json.latest_run_id as string
    await settledRun(sid, rid, "closed")
    expect((await service.request("GET", runPath(sid, rid))).json.recording).toBeNull()
    expect((await service.request("GET", `${runPath(sid, rid)}/artifacts`)).json.items).toEqual([])
  })

  it("refuses an unknown quality with 422 validation_error", async () => {
    const response = await service.request("POST", `${base()}/sessions`, {
      body: { instructions: "x", recording: { enabled: true, quality: "ultra" } }
    })
    expect(response.status).toBe(422)
    expect(response.json.code).toBe("validation_error")
    expect(response.json.extra.errors[0].loc).toEqual(["body", "recording", "quality"])
  })

  it("serves the replayer from the installed rrweb package, without an API key", async () => {
    const script = await service.fetch(`${service.url}/v1/recording_assets/rrweb.js`)
    expect(script.status).toBe(200)
    expect(script.headers.get("content-type")).toContain("javascript")
    expect(await script.text()).toContain("Replayer")
    expect((await service.fetch(`${service.url}/v1/recording_assets/other.js`)).status).toBe(404)
  })
})
