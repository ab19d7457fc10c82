/**
 * Profiles end to end through HTTP: the real service, real Chromium, the fixture site (cookie
 * login, a members page, local storage and IndexedDB) and a scripted model that drives the
 * session's browser. Covers CRUD, restoring and saving a profile's state across sessions, the
 * one-session lease, encryption at rest, the interactive login with its probe, and monitors that
 * read pages as a profile.
 */
import { statSync } from "node:fs"
import { type Browser, chromium } from "playwright-core"
import * as path from "node:path"
import type pg from "pg"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { selectChromium } from "../../src/browser/chromium-executable.ts"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { lastUserText, refOf, type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type BrowserWatch, watchBrowser } from "../support/contract-browser.ts"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"
import { eventually, waitForRunStatus } from "../support/runs.ts"

let site: FixtureSites
let model: ScriptedModel
let service: Service
let db: pg.Client
/** The person's own browser, for the live view of an interactive login. */
let person: Browser
/** Lets the "hold" task finish. */
let release: () => void = () => {}
let held = Promise.resolve()

const taskOf = (messages: unknown) => JSON.stringify(messages).match(/Task:\\n([a-z0-9 _=-]+)/i)?.[1] ?? ""

beforeAll(async () => {
  site = await startFixtureSites()
  model = await startScriptedModel(async (request) => {
    const page = lastUserText(request)
    const task = taskOf(request.messages)
    const login = task.match(/^log in as (\w+)/)
    if (login !== null) {
      const user = login[1]!
      if (page.includes(`Logged in as ${user}`)) return { tool: "done", args: { output: { logged_in: user } } }
      const textbox = refOf(page, "textbox")
      if (textbox !== undefined && page.includes("/login")) return { tool: "type", args: { ref: textbox, text: user, submit: true } }
      return { tool: "navigate", args: { url: `${site.url}/login` } }
    }
    if (task.startsWith("visit members")) {
      const who = page.match(/Welcome back, (\w+)/)?.[1]
      if (who !== undefined) return { tool: "done", args: { output: { member: who } } }
      if (page.includes("Sign in")) return { tool: "done", args: { output: { member: null } } }
      return { tool: "navigate", args: { url: `${site.url}/members` } }
    }
    const storeLocal = task.match(/^store local token (\w+)/)
    if (storeLocal !== null) {
      if (page.includes(`Local token: ${storeLocal[1]}`)) return { tool: "done", args: { output: "stored" } }
      return { tool: "navigate", args: { url: `${site.url}/storage?set=${storeLocal[1]}&idb=0` } }
    }
    if (task.startsWith("read local storage")) {
      const local = page.match(/Local token: (\w+)/)?.[1]
      if (local !== undefined) return { tool: "done", args: { output: { local } } }
      return { tool: "navigate", args: { url: `${site.url}/storage?idb=0` } }
    }
    const store = task.match(/^store token (\w+)/)
    if (store !== null) {
      if (page.includes(`IDB token: ${store[1]}`)) return { tool: "done", args: { output: "stored" } }
      if (page.includes("/storage")) return { tool: "scroll", args: { direction: "down" } }
      return { tool: "navigate", args: { url: `${site.url}/storage?set=${store[1]}` } }
    }
    if (task.startsWith("read storage")) {
      const local = page.match(/Local token: (\w+)/)?.[1]
      const idb = page.match(/IDB token: (\w+)/)?.[1]
      if (local !== undefined && idb !== undefined) return { tool: "done", args: { output: { local, idb } } }
      if (page.includes("/storage")) return { tool: "scroll", args: { direction: "down" } }
      return { tool: "navigate", args: { url: `${site.url}/storage` } }
    }
    if (task.startsWith("hold")) {
      await held
      return { tool: "done", args: { output: "held" } }
    }
    return { tool: "done", args: { output: "ok" } }
  })
  service = await startService({
    env: {
      WA_MODEL_BASE_URL: model.baseUrl,
      WA_MODEL: "scripted",
      WA_ALLOW_PRIVATE_NETWORKS: "true",
      WA_MAX_CONCURRENT_SESSIONS: "100",
      // The suite polls runs and sessions; its budget must not depend on how slow the machine is.
      WA_RATE_LIMIT_REQUESTS: "100000",
      WA_STEP_SCREENSHOTS: "false"
    }
  })
  db = await embeddedDatabaseClient(service.dataDir)
  const local = await selectChromium({ explicitPath: process.env["CHROMIUM_PATH"], dataDir: service.dataDir })
  const prepared = await local.prepare()
  person = await chromium.launch({ executablePath: prepared.executablePath, env: { ...process.env, ...prepared.env }, args: ["--no-sandbox"] })
})
// What the person's browser gets from the service (the control page, its assets and live view) goes through the contract hook; a mismatch fails the test whose page got it.
let browserWatch: BrowserWatch | undefined
afterEach(async () => {
  expect(await browserWatch?.takeMismatches() ?? []).toEqual([])
})
afterAll(async () => {
  release()
  await person?.close()
  await db?.end()
  await stopAndClean(service)
  await model?.close()
  await site?.close()
})

/** The agent's viewport (src/browser/pool.ts), in CSS pixels. */
const AGENT_VIEWPORT = { width: 1280, height: 800 }
const profiles = () => `/v1/projects/${service.projectId}/profiles`
const sessionsPath = () => `/v1/projects/${service.projectId}/do_anything/sessions`
const terminal = ["done", "failed", "canceled"]

const createProfile = async (body: Record<string, unknown> = {}) => {
  const response = await service.request("POST", profiles(), { body })
  expect(response.status, response.text).toBe(201)
  return response.json
}
const getProfile = async (id: string) => (await service.request("GET", `${profiles()}/${id}`)).json

/** Creates a session, waits for its first run to end and returns the run. */
const runSession = async (body: Record<string, unknown>) => {
  const created = await service.request("POST", sessionsPath(), { body })
  expect(created.status, created.text).toBe(201)
  const run = await waitForRunStatus(service, `${sessionsPath()}/${created.json.id}/runs/${created.json.latest_run_id}`, terminal)
  expect(run.status, JSON.stringify(run.error)).toBe("done")
  return { sessionId: created.json.id as string, run }
}

const waitClosed = (sessionId: string) =>
  eventually(`session ${sessionId} closed`, async () => {
    const session = (await service.request("GET", `${sessionsPath()}/${sessionId}`)).json
    return session.status === "closed" ? session : undefined
  })

const sessionCount = async () => Number((await db.query("SELECT count(*)::int AS n FROM sessions")).rows[0].n)

describe("profiles CRUD", () => {
  it("creates, lists, reads, patches and deletes, with the spec's fields", async () => {
    const created = await createProfile({ name: "Ada", customer_user_id: "user-1" })
    expect(created).toMatchObject({
      name: "Ada",
      customer_user_id: "user-1",
      project_id: service.projectId,
      state: "active",
      last_used_at: null,
      last_alive_at: null,
      last_failure_reason: null,
      proxy_country_code: null,
      bb_context_id: null,
      cookie_domains: [],
      has_saved_state: false,
      leased_by_session_id: null
    })
    expect(created.id).toMatch(/^prof_[0-9a-z]{26}$/)
    expect(typeof created.created_at).toBe("string")

    const second = await createProfile({})
    expect(second.name).toBeNull()

    const page = await service.request("GET", `${profiles()}?limit=1`)
    expect(page.status).toBe(200)
    expect(page.json.items).toHaveLength(1)
    expect(page.json.items[0].id).toBe(second.id)
    expect(page.json.total).toBeGreaterThanOrEqual(2)
    const next = await service.request("GET", `${profiles()}?limit=1&cursor=${page.json.next_cursor}`)
    expect(next.json.items[0].id).toBe(created.id)
    const filtered = await service.request("GET", `${profiles()}?customer_user_id=user-1`)
    expect(filtered.json.items.map((p: any) => p.id)).toEqual([created.id])
    expect(filtered.json.total).toBe(1)

    const patched = await service.request("PATCH", `${profiles()}/${created.id}`, { body: { name: "Ada L.", customer_user_id: null, proxy_country_code: "GB" } })
    expect(patched.status, patched.text).toBe(200)
    expect(patched.json).toMatchObject({ name: "Ada L.", customer_user_id: null, proxy_country_code: "GB" })
    // A field left out is left alone.
    const renamed = await service.request("PATCH", `${profiles()}/${created.id}`, { body: { name: "Ada Lovelace" } })
    expect(renamed.json).toMatchObject({ name: "Ada Lovelace", proxy_country_code: "GB" })
    expect((await getProfile(created.id)).name).toBe("Ada Lovelace")

    const removed = await service.request("DELETE", `${profiles()}/${second.id}`)
    expect(removed.status).toBe(204)
    const gone = await service.request("GET", `${profiles()}/${second.id}`)
    expect(gone.status).toBe(404)
    expect(gone.json).toMatchObject({ code: "profile_not_found" })
  })

  it("refuses unknown fields, out-of-limit values and unknown ids", async () => {
    const unknownField = await service.request("POST", profiles(), { body: { name: "x", colour: "red" } })
    expect(unknownField.status).toBe(422)
    expect(unknownField.json.code).toBe("validation_error")
    expect(JSON.stringify(unknownField.json.extra.errors)).toContain("colour")
    const tooLong = await service.request("POST", profiles(), { body: { name: "x".repeat(256) } })
    expect(tooLong.status).toBe(422)
    expect(tooLong.json.extra.errors[0].loc).toContain("name")
    const country = await service.request("POST", profiles(), { body: { proxy_country_code: "usa" } })
    expect(country.status).toBe(422)
    const badPatch = await service.request("PATCH", `${profiles()}/${(await createProfile()).id}`, { body: { state: "logged_out" } })
    expect(badPatch.status).toBe(422)
    for (const [method, suffix, body] of [["GET", "", undefined], ["PATCH", "", { name: "y" }], ["DELETE", "", undefined], ["POST", "/confirm", { site_id: "s" }]] as const) {
      const response = await service.request(method, `${profiles()}/prof_unknown${suffix}`, body === undefined ? {} : { body })
      expect(response.status, `${method} ${suffix}`).toBe(404)
      expect(response.json.code).toBe("profile_not_found")
    }
  })
})

describe("sessions with a profile", () => {
  it("a later session starts logged in: the first one's cookies were saved when it closed", async () => {
    const profile = await createProfile({ name: "carol" })
    const first = await runSession({ instructions: "log in as carol", profile_id: profile.id, keep_alive: false })
    expect(first.run.output).toEqual({ logged_in: "carol" })
    await waitClosed(first.sessionId)
    const saved = await getProfile(profile.id)
    expect(saved.has_saved_state).toBe(true)
    expect(saved.last_used_at).not.toBeNull()
    expect(saved.leased_by_session_id).toBeNull()

    const second = await runSession({ instructions: "visit members", profile_id: profile.id, keep_alive: false })
    expect(second.run.output).toEqual({ member: "carol" })
    // Without the profile the same page sends the browser to the login form.
    const stranger = await runSession({ instructions: "visit members", keep_alive: false })
    expect(stranger.run.output).toEqual({ member: null })
  })

  it("a kept-alive session saves the profile when it is closed through the API", async () => {
    const profile = await createProfile({ name: "dave" })
    const first = await runSession({ instructions: "log in as dave", profile_id: profile.id, keep_alive: true })
    const closed = await service.request("POST", `${sessionsPath()}/${first.sessionId}/close`)
    expect(closed.status).toBe(200)
    // Closing answers after the state was saved: the next session can start at once.
    const second = await runSession({ instructions: "visit members", profile_id: profile.id, keep_alive: false })
    expect(second.run.output).toEqual({ member: "dave" })
  })

  it("local storage and IndexedDB travel with the profile", async () => {
    const profile = await createProfile({ name: "storage" })
    await runSession({ instructions: "store token tok42", profile_id: profile.id, keep_alive: false })
    const second = await runSession({ instructions: "read storage", profile_id: profile.id, keep_alive: false })
    expect(second.run.output).toEqual({ local: "tok42", idb: "tok42" })
  })

  it("local storage alone is restored into the first page of its origin", async () => {
    const profile = await createProfile({ name: "local" })
    await runSession({ instructions: "store local token loc7", profile_id: profile.id, keep_alive: false })
    const second = await runSession({ instructions: "read local storage", profile_id: profile.id, keep_alive: false })
    expect(second.run.output).toEqual({ local: "loc7" })
    const stranger = await runSession({ instructions: "read local storage", keep_alive: false })
    expect(stranger.run.output).toEqual({ local: "none" })
  })

  it("a profile serves one open session at a time: 409 profile_in_use, free again once it closes", async () => {
    const profile = await createProfile({ name: "busy" })
    held = new Promise((resolve) => (release = resolve))
    const attempts = await Promise.all([0, 1].map(() =>
      service.request("POST", sessionsPath(), { body: { instructions: "hold", profile_id: profile.id, keep_alive: false } })
    ))
    const statuses = attempts.map((a) => a.status).sort()
    expect(statuses).toEqual([201, 409])
    const winner = attempts.find((a) => a.status === 201)!.json
    const loser = attempts.find((a) => a.status === 409)!.json
    expect(loser).toMatchObject({ code: "profile_in_use", extra: { profile_id: profile.id, session_id: winner.id } })
    expect((await getProfile(profile.id)).leased_by_session_id).toBe(winner.id)
    // Deleting a profile in use is refused too.
    const deleting = await service.request("DELETE", `${profiles()}/${profile.id}`)
    expect(deleting.status).toBe(409)
    expect(deleting.json.code).toBe("profile_in_use")

    release()
    await waitClosed(winner.id)
    const again = await service.request("POST", sessionsPath(), { body: { instructions: "visit members", profile_id: profile.id, keep_alive: false } })
    expect(again.status, again.text).toBe(201)
    await waitForRunStatus(service, `${sessionsPath()}/${again.json.id}/runs/${again.json.latest_run_id}`, terminal)
  })

  it("an unknown profile is 404 profile_not_found and creates nothing", async () => {
    const before = await sessionCount()
    const response = await service.request("POST", sessionsPath(), { body: { instructions: "visit members", profile_id: "prof_00000000000000000000000000" } })
    expect(response.status).toBe(404)
    expect(response.json).toMatchObject({ code: "profile_not_found", extra: { profile_id: "prof_00000000000000000000000000" } })
    expect(await sessionCount()).toBe(before)
    // A profile of another project is unknown here too (ids are per project).
    await db.query("INSERT INTO projects (id, name) VALUES ('proj_other', 'other') ON CONFLICT DO NOTHING")
    await db.query("INSERT INTO profiles (id, project_id) VALUES ('prof_ofanotherproject0000000000', 'proj_other') ON CONFLICT DO NOTHING")
    const foreign = await service.request("POST", sessionsPath(), { body: { instructions: "visit members", profile_id: "prof_ofanotherproject0000000000" } })
    expect(foreign.status).toBe(404)
    expect(await sessionCount()).toBe(before)
  })

  it("saved state is encrypted at rest: the row holds no cookie value in clear", async () => {
    const user = `secret${Date.now()}`
    const profile = await createProfile({ name: "encrypted" })
    const { sessionId } = await runSession({ instructions: `log in as ${user}`, profile_id: profile.id, keep_alive: false })
    await waitClosed(sessionId)
    const row = (await db.query("SELECT * FROM profiles WHERE id = $1", [profile.id])).rows[0]
    expect(row.storage_state).toBeInstanceOf(Buffer)
    expect(row.storage_state.length).toBeGreaterThan(28)
    const everything = JSON.stringify(row) + row.storage_state.toString("latin1") + row.storage_state.toString("utf8")
    expect(everything).not.toContain(user)
    expect(everything).not.toContain("127.0.0.1")
    expect(row.storage_key_id).toMatch(/^[0-9a-f]{16}$/)
    // The session that used it still reads it back (the run above logged in; a new one sees it).
    expect((await runSession({ instructions: "visit members", profile_id: profile.id, keep_alive: false })).run.output).toEqual({ member: user })
    // The generated key lives in the data dir, readable by its owner only.
    expect(statSync(path.join(service.dataDir, "secret.key")).mode & 0o777).toBe(0o600)
  })
})

describe("run checkpoints", () => {
  it("a checkpoint's browser state is encrypted at rest: no cookie value in clear", async () => {
    const user = `ckpt${Date.now()}`
    const { run } = await runSession({ instructions: `log in as ${user}`, keep_alive: false })
    expect(run.output).toEqual({ logged_in: user })
    const row = (await db.query("SELECT * FROM run_checkpoints WHERE run_id = $1", [run.id])).rows[0]
    expect(row).toBeDefined()
    // The sealed form, not a Playwright storage state.
    expect(Object.keys(row.storage_state).sort()).toEqual(["data", "key_id", "wa_sealed"])
    expect(row.storage_state.key_id).toMatch(/^[0-9a-f]{16}$/)
    const sealed = Buffer.from(row.storage_state.data, "base64")
    expect(sealed.length).toBeGreaterThan(28)
    const everything = JSON.stringify(row.storage_state) + sealed.toString("latin1") + sealed.toString("utf8")
    expect(everything).not.toContain(user)
    expect(everything).not.toContain("127.0.0.1")
    expect(everything).not.toContain("cookies")
  })
})

describe("interactive login", () => {
  it("without instructions the login run holds start_url for a person: they sign in through control_url, confirm probes logged_in, the next session is logged in", async () => {
    const modelCalls = model.requests.length
    const started = await service.request("POST", `${profiles()}/login`, {
      body: { name: "ivy", start_url: `${site.url}/members`, site_id: "fixture-live" }
    })
    expect(started.status, started.text).toBe(201)
    const { profile_id, session_id, run_id, control_url, control_url_exp } = started.json
    expect(control_url).toMatch(new RegExp(`^${service.url}/v1/control/ctl_[0-9a-z]{26}\\?exp=\\d+&sig=[A-Za-z0-9_-]{43}$`))
    expect(control_url_exp).toBeGreaterThan(Date.now() / 1000)
    const runPath = `${sessionsPath()}/${session_id}/runs/${run_id}`
    expect((await service.request("GET", runPath)).json.status).toBe("running")

    // Where the username field is on the agent's page (same Chromium, same 1280x800 viewport).
    const measure = await person.newContext({ viewport: AGENT_VIEWPORT })
    const probePage = await measure.newPage()
    await probePage.goto(`${site.url}/login`)
    const field = (await probePage.locator("input[name=username]").boundingBox())!
    await measure.close()

    // The person opens the URL (no API key): the run pauses and the live page is theirs.
    const context = await person.newContext({ viewport: { width: 1400, height: 1000 } })
    browserWatch ??= watchBrowser(service.url)
    browserWatch.watch(context)
    const page = await context.newPage()
    expect((await page.goto(control_url))?.status()).toBe(200)
    await page.waitForFunction(() => document.body.dataset["state"] === "connected")
    await page.waitForFunction(() => Number((document.getElementById("screen") as HTMLCanvasElement).dataset["frames"]) > 0)
    await waitForRunStatus(service, runPath, ["paused"])

    const accountVisits = async () => ((await (await fetch(`${site.url}/__requests`)).json()) as Array<string>).filter((r) => r.endsWith("/account")).length
    const before = await accountVisits()
    const box = (await page.locator("#screen").boundingBox())!
    await page.mouse.click(
      box.x + ((field.x + field.width / 2) * box.width) / AGENT_VIEWPORT.width,
      box.y + ((field.y + field.height / 2) * box.height) / AGENT_VIEWPORT.height
    )
    await page.keyboard.type("ivy")
    await page.keyboard.press("Tab")
    await page.keyboard.type("pw")
    await page.keyboard.press("Enter")
    // The form was posted: the agent's browser followed the redirect to the account page.
    await eventually("the sign-in to reach /account", async () => (await accountVisits()) > before ? true : undefined)

    const confirmed = await service.request("POST", `${profiles()}/${profile_id}/confirm`, { body: { site_id: "fixture-live" } })
    expect(confirmed.status, confirmed.text).toBe(200)
    expect(confirmed.json).toMatchObject({ profile_id, state: "active", probe_result: "logged_in", final_url: `${site.url}/members` })
    expect((await service.request("GET", runPath)).json.status).toBe("canceled")
    await page.waitForFunction(() => document.body.dataset["state"] === "ended")
    await context.close()
    // The login itself never asked the model.
    expect(model.requests.length).toBe(modelCalls)

    const next = await runSession({ instructions: "visit members", profile_id, keep_alive: false })
    expect(next.run.output).toEqual({ member: "ivy" })
  })

  it("login opens a session holding the profile; confirm saves the state and probes logged_in", async () => {
    const started = await service.request("POST", `${profiles()}/login`, {
      body: { name: "erin", start_url: `${site.url}/members`, site_id: "fixture", display_label: "Fixture", instructions: "log in as erin" }
    })
    expect(started.status, started.text).toBe(201)
    expect(started.json).toMatchObject({ site_id: "fixture", start_url: `${site.url}/members`, state: "login_pending" })
    const { profile_id, session_id, run_id } = started.json
    expect(started.json.profile).toMatchObject({ id: profile_id, name: "erin", state: "login_pending", leased_by_session_id: session_id })
    const run = await waitForRunStatus(service, `${sessionsPath()}/${session_id}/runs/${run_id}`, terminal)
    expect(run.output).toEqual({ logged_in: "erin" })
    // The login session is kept alive: the profile stays leased until confirm.
    const busy = await service.request("POST", sessionsPath(), { body: { instructions: "visit members", profile_id } })
    expect(busy.status).toBe(409)

    const confirmed = await service.request("POST", `${profiles()}/${profile_id}/confirm`, { body: { site_id: "fixture", display_label: "Fixture site" } })
    expect(confirmed.status, confirmed.text).toBe(200)
    expect(confirmed.json).toMatchObject({ profile_id, state: "active", probe_result: "logged_in", final_url: `${site.url}/members` })
    const profile = await getProfile(profile_id)
    expect(profile).toMatchObject({ state: "active", last_failure_reason: null, has_saved_state: true, leased_by_session_id: null })
    expect(profile.last_alive_at).not.toBeNull()
    expect((await service.request("GET", `${sessionsPath()}/${session_id}`)).json.status).toBe("closed")
  })

  it("a login that did not sign in probes logged_out, with the reason", async () => {
    const existing = await createProfile({ name: "frank" })
    const started = await service.request("POST", `${profiles()}/login`, {
      body: { profile_id: existing.id, start_url: `${site.url}/members`, site_id: "fixture", instructions: "do nothing" }
    })
    expect(started.status, started.text).toBe(201)
    await waitForRunStatus(service, `${sessionsPath()}/${started.json.session_id}/runs/${started.json.run_id}`, terminal)
    const confirmed = await service.request("POST", `${profiles()}/${existing.id}/confirm`, { body: { site_id: "fixture" } })
    expect(confirmed.status, confirmed.text).toBe(200)
    expect(confirmed.json).toMatchObject({ profile_id: existing.id, state: "logged_out", probe_result: "logged_out" })
    expect(confirmed.json.final_url).toContain("/login")
    const profile = await getProfile(existing.id)
    expect(profile.state).toBe("logged_out")
    expect(profile.last_alive_at).toBeNull()
    expect(profile.last_failure_reason).toContain("sign-in page")
  })

  it("selectors decide when given; confirm without a login and strict bodies are refused", async () => {
    // Logged in, but the caller's rule says the page must show an element it does not have.
    const started = await service.request("POST", `${profiles()}/login`, {
      body: { name: "gina", start_url: `${site.url}/account`, site_id: "account", instructions: "log in as gina", logged_in_selector: "#premium-badge" }
    })
    expect(started.status, started.text).toBe(201)
    await waitForRunStatus(service, `${sessionsPath()}/${started.json.session_id}/runs/${started.json.run_id}`, terminal)
    const confirmed = await service.request("POST", `${profiles()}/${started.json.profile_id}/confirm`, { body: { site_id: "account" } })
    expect(confirmed.json).toMatchObject({ probe_result: "logged_out" })
    expect(confirmed.json.reason).toContain("#premium-badge")

    const notStarted = await service.request("POST", `${profiles()}/${started.json.profile_id}/confirm`, { body: { site_id: "elsewhere" } })
    expect(notStarted.status).toBe(409)
    expect(notStarted.json.code).toBe("interactive_login_not_started")
    const extra = await service.request("POST", `${profiles()}/${started.json.profile_id}/confirm`, { body: { site_id: "account", start_url: "x" } })
    expect(extra.status).toBe(422)
    const longSite = await service.request("POST", `${profiles()}/${started.json.profile_id}/confirm`, { body: { site_id: "s".repeat(65) } })
    expect(longSite.status).toBe(422)
    const both = await service.request("POST", `${profiles()}/login`, { body: { profile_id: started.json.profile_id, name: "x", start_url: site.url, site_id: "s" } })
    expect(both.status).toBe(422)
    const badUrl = await service.request("POST", `${profiles()}/login`, { body: { start_url: "ftp://example.com", site_id: "s" } })
    expect(badUrl.status).toBe(422)
    const unknown = await service.request("POST", `${profiles()}/login`, { body: { profile_id: "prof_unknown", start_url: site.url, site_id: "s" } })
    expect(unknown.status).toBe(404)
    expect(unknown.json.code).toBe("profile_not_found")
  })
})

describe("monitors with a profile", () => {
  const monitors = () => `/v1/projects/${service.projectId}/track/monitors`
  const firstSnapshot = async (monitorId: string) => {
    const tick = await eventually("the baseline tick", async () => {
      const items = (await service.request("GET", `${monitors()}/${monitorId}/runs`)).json.items as Array<any>
      return items.find((t) => t.status !== "running")
    }, { timeoutMs: 60_000 })
    expect(tick.status, JSON.stringify(tick)).toBe("done")
    return (await service.request("GET", `${monitors()}/${monitorId}/snapshots/${tick.snapshot_id}`)).json
  }
  const createMonitor = (body: Record<string, unknown>) =>
    service.request("POST", monitors(), {
      body: { intent: "watch the members page", notify_channel: { kind: "console_inbox" }, schedule: { kind: "interval", interval_seconds: 3600 }, target_urls: [`${site.url}/members`], ...body }
    })

  it("a tick reads the pages as the profile: the members page, not the login form", async () => {
    const profile = await createProfile({ name: "henry" })
    await runSession({ instructions: "log in as henry", profile_id: profile.id, keep_alive: false })
    // The profile's state is saved before the run is reported done, so a monitor created the
    // moment the run ends reads the pages logged in.
    expect((await getProfile(profile.id)).has_saved_state).toBe(true)
    const withProfile = await createMonitor({ profile_id: profile.id })
    expect(withProfile.status, withProfile.text).toBe(201)
    const snapshot = await firstSnapshot(withProfile.json.id)
    expect(snapshot.text).toContain("Welcome back, henry")
    expect(snapshot.pages[0]).toMatchObject({ ok: true, method: "browser", final_url: `${site.url}/members` })

    const without = await createMonitor({})
    const anonymous = await firstSnapshot(without.json.id)
    expect(anonymous.text).not.toContain("Welcome back")
    expect(anonymous.text).toContain("Sign in")
  })

  it("an unknown profile_id is refused at create (422 on the field)", async () => {
    const response = await createMonitor({ profile_id: "prof_00000000000000000000000000" })
    expect(response.status).toBe(422)
    expect(response.json.extra.errors[0]).toMatchObject({ loc: ["body", "profile_id"], type: "not_found" })
  })
})
