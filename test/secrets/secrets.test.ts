/**
 * Project secrets end to end: the real service, real Chromium, a local login site with a password
 * and a TOTP second factor (test/fixtures/sites/secret-login.ts) and the scripted model. The agent
 * signs in typing only placeholders; afterwards the value and every code typed are looked for in
 * everything that left the browser: the model's full request log, the run's event log (over the
 * API and in the database), the recording, the run's row, idempotency records and the service log.
 */
import { randomBytes } from "node:crypto"
import type pg from "pg"
import { Secret } from "otpauth"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { lastUserText, type ScriptedModel, startScriptedModel, taskOf, toolResults } from "../fixtures/model/scripted-model.ts"
import { type SecretLoginSite, startSecretLoginSite } from "../fixtures/sites/secret-login.ts"
import { embeddedDatabaseClient, type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import { waitForRunStatus } from "../support/runs.ts"

const USER = "alice"
const PASSWORD = `Pw-${randomBytes(6).toString("hex")}-kiwi!`
const TOTP_SEED = new Secret({ size: 20 }).base32
const OTHER_PASSWORD = `Other-${randomBytes(6).toString("hex")}`

let site: SecretLoginSite
let model: ScriptedModel
let service: Service
let db: pg.Client

/** The ref of the element with this accessible name (`textbox "Password" [e2]`). */
const refNamed = (observation: string, name: string) => observation.match(new RegExp(`"${name}" \\[((?:f\\d+)?e\\d+)\\]`))?.[1]
/** The URL the observation starts with. */
const urlOf = (observation: string) => observation.match(/https?:\/\/[^\s)]+/)?.[0] ?? ""

beforeAll(async () => {
  site = await startSecretLoginSite({ user: USER, password: PASSWORD, totpSeed: TOTP_SEED })
  model = await startScriptedModel((request) => {
    const page = lastUserText(request)
    const task = taskOf(request)
    const results = toolResults(request) as Array<{ code?: string; error?: string; message?: string }>
    const last = results.at(-1)
    if (task.startsWith("sign in")) {
      if (last?.code !== undefined) return { tool: "done", args: { output: { failed: last } } }
      if (page.includes("Signed in as alice")) return { tool: "done", args: { output: { signed_in: true } } }
      if (page.includes("Enter your one-time code")) {
        // Typed first, then Tab (the field's change event is what a recording keeps), then Verify:
        // the observations in between show the text field holding the code.
        if (!/"One-time code" \[e\d+\] ="/.test(page)) return { tool: "type", args: { ref: refNamed(page, "One-time code"), text: "{{totp:site_otp}}" } }
        if (last?.message?.startsWith("typed") === true) return { tool: "press_key", args: { key: "Tab" } }
        return { tool: "click", args: { ref: refNamed(page, "Verify") } }
      }
      if (page.includes("Sign in") && urlOf(page).endsWith("/login")) {
        const user = refNamed(page, "User name")!
        if (!page.includes(`="${USER}"`)) return { tool: "type", args: { ref: user, text: USER } }
        return { tool: "type", args: { ref: refNamed(page, "Password"), text: "{{secret:site_password}}", submit: true } }
      }
      return { tool: "navigate", args: { url: `${site.url}/login` } }
    }
    if (task.startsWith("use the password elsewhere")) {
      if (last?.code === "SecretRefused") return { tool: "done", args: { output: { refused: last.error } } }
      if (urlOf(page).startsWith(site.otherOriginUrl) && page.includes("Password")) {
        return { tool: "type", args: { ref: refNamed(page, "Password"), text: "{{secret:site_password}}", submit: true } }
      }
      return { tool: "navigate", args: { url: `${site.otherOriginUrl}/login` } }
    }
    if (task.startsWith("put the password in a url")) {
      if (last?.code !== undefined) return { tool: "done", args: { output: { refused: last } } }
      return { tool: "navigate", args: { url: `${site.url}/login?p={{secret:site_password}}` } }
    }
    return { tool: "done", args: { output: "nothing to do" } }
  })
  service = await startService({ env: scriptedAgentEnv(model.baseUrl, { WA_STEP_SCREENSHOTS: "true" }) })
  db = await embeddedDatabaseClient(service.dataDir)
})
afterAll(async () => {
  await db?.end()
  await stopAndClean(service)
  await model?.close()
  await site?.close()
})

const secretsPath = () => `/v1/projects/${service.projectId}/secrets`
const sessionsPath = () => `/v1/projects/${service.projectId}/do_anything/sessions`
const terminal = ["done", "failed", "canceled"]

const createSecret = async (body: Record<string, unknown>, headers: Record<string, string> = {}) => {
  const response = await service.request("POST", secretsPath(), { body, headers })
  expect(response.status, response.text).toBe(201)
  return response
}

/** Runs a session's first run to its end; the run, its events (over the API) and its id. */
const runToEnd = async (body: Record<string, unknown>) => {
  const created = await service.request("POST", sessionsPath(), { body: { keep_alive: false, ...body } })
  expect(created.status, created.text).toBe(201)
  const sid = created.json.id as string
  const rid = created.json.latest_run_id as string
  const runPath = `${sessionsPath()}/${sid}/runs/${rid}`
  const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 120_000, everyMs: 250 })
  const { events } = await readSse(`${service.url}${runPath}/events`, { authorization: `Bearer ${service.apiKey}` })
  return { run, events, sid, rid, runPath }
}

/** Every place a value must never be, as text. */
const leakedInto = async (values: ReadonlyArray<string>) => {
  const places: Record<string, string> = {
    "model requests": JSON.stringify(model.requests),
    "service log": JSON.stringify(service.logs),
    "run events (database)": JSON.stringify((await db.query("SELECT type, data FROM run_events")).rows),
    "runs (database)": JSON.stringify((await db.query("SELECT request, output, error_detail FROM runs")).rows),
    "idempotency records": JSON.stringify((await db.query("SELECT * FROM idempotency_records")).rows),
    "secrets table": JSON.stringify((await db.query("SELECT *, encode(value_sealed, 'escape') AS raw FROM project_secrets")).rows)
  }
  const found: Array<string> = []
  for (const [place, text] of Object.entries(places)) {
    for (const value of values) if (text.includes(value)) found.push(`${value.slice(0, 3)}… in ${place}`)
  }
  return found
}

describe("secrets API", () => {
  it("never returns a value; bad input gets the error envelope", async () => {
    const created = await createSecret({
      name: "api_token",
      value: OTHER_PASSWORD,
      origins: ["https://Example.com/", "https://*.example.com", "https://example.com"],
      description: "an API token"
    }, { "idempotency-key": "create-api-token" })
    expect(created.json).toMatchObject({
      name: "api_token",
      kind: "secret",
      origins: ["https://example.com", "https://*.example.com"],
      description: "an API token",
      totp: null,
      placeholder: "{{secret:api_token}}",
      last_used_at: null
    })
    expect(created.json.id).toMatch(/^sec_/)
    expect(created.json).not.toHaveProperty("value")
    expect(created.text).not.toContain(OTHER_PASSWORD)
    // The same Idempotency-Key replays the response, which never held the value.
    const replay = await service.request("POST", secretsPath(), {
      body: { name: "api_token", value: OTHER_PASSWORD, origins: ["https://Example.com/", "https://*.example.com", "https://example.com"], description: "an API token" },
      headers: { "idempotency-key": "create-api-token" }
    })
    expect(replay.status).toBe(201)
    expect(replay.json.id).toBe(created.json.id)

    const id = created.json.id as string
    const got = await service.request("GET", `${secretsPath()}/${id}`)
    expect(got.status).toBe(200)
    expect(got.text).not.toContain(OTHER_PASSWORD)
    const listed = await service.request("GET", secretsPath())
    expect(listed.status).toBe(200)
    expect(listed.json.items.map((item: { id: string }) => item.id)).toContain(id)
    expect(listed.text).not.toContain(OTHER_PASSWORD)

    // Rotation: a new value, never echoed; name and kind stay.
    const rotated = await service.request("PATCH", `${secretsPath()}/${id}`, { body: { value: `${OTHER_PASSWORD}-2`, origins: ["https://api.example.com"] } })
    expect(rotated.status, rotated.text).toBe(200)
    expect(rotated.json.origins).toEqual(["https://api.example.com"])
    expect(rotated.text).not.toContain(OTHER_PASSWORD)
    expect(Date.parse(rotated.json.value_updated_at)).toBeGreaterThanOrEqual(Date.parse(created.json.value_updated_at))

    const expectEnvelope = (response: { status: number; json: any; text: string }, status: number, code: string) => {
      expect(response.status, response.text).toBe(status)
      expect(Object.keys(response.json).sort()).toEqual(["code", "detail", "extra"])
      expect(response.json.code).toBe(code)
      expect(typeof response.json.detail).toBe("string")
    }
    const taken = await service.request("POST", secretsPath(), { body: { name: "api_token", value: "x-long-value", origins: ["https://example.com"] } })
    expectEnvelope(taken, 409, "secret_name_taken")

    const badOrigin = await service.request("POST", secretsPath(), { body: { name: "b1", value: "v-long-value", origins: ["https://example.com/path"] } })
    expectEnvelope(badOrigin, 422, "validation_error")
    expect(badOrigin.json.extra.errors[0].loc).toEqual(["body", "origins", "0"])
    const noOrigins = await service.request("POST", secretsPath(), { body: { name: "b2", value: "v-long-value", origins: [] } })
    expectEnvelope(noOrigins, 422, "validation_error")
    const badName = await service.request("POST", secretsPath(), { body: { name: "has space", value: "v-long-value", origins: ["https://example.com"] } })
    expectEnvelope(badName, 422, "validation_error")
    const unknownField = await service.request("POST", secretsPath(), { body: { name: "b3", value: "v-long-value", origins: ["https://example.com"], extra: 1 } })
    expectEnvelope(unknownField, 422, "validation_error")
    const noValue = await service.request("POST", secretsPath(), { body: { name: "b4", origins: ["https://example.com"] } })
    expectEnvelope(noValue, 422, "validation_error")
    const emptyValue = await service.request("POST", secretsPath(), { body: { name: "b5", value: "", origins: ["https://example.com"] } })
    expectEnvelope(emptyValue, 422, "validation_error")
    // A TOTP value that is neither a URI nor a base32 seed: refused without repeating it.
    // 0, 1, 8 and 9 are not base32 (random hex alone was a valid seed about one time in ten).
    const badSeed = `not-a-seed-0189-${randomBytes(4).toString("hex")}`
    const badTotp = await service.request("POST", secretsPath(), { body: { name: "b6", kind: "totp", value: badSeed, origins: ["https://example.com"] } })
    expectEnvelope(badTotp, 422, "validation_error")
    expect(badTotp.json.extra.errors[0].loc).toEqual(["body", "value"])
    expect(badTotp.text).not.toContain(badSeed)
    const hotp = await service.request("POST", secretsPath(), {
      body: { name: "b7", kind: "totp", value: `otpauth://hotp/x?secret=${TOTP_SEED}&counter=1`, origins: ["https://example.com"] }
    })
    expectEnvelope(hotp, 422, "validation_error")
    expect(hotp.text).not.toContain(TOTP_SEED)
    const badPatch = await service.request("PATCH", `${secretsPath()}/${id}`, { body: { origins: ["ftp://example.com"] } })
    expectEnvelope(badPatch, 422, "validation_error")
    expectEnvelope(await service.request("GET", `${secretsPath()}/sec_unknown`), 404, "secret_not_found")
    expectEnvelope(await service.request("PATCH", `${secretsPath()}/sec_unknown`, { body: { value: "abc-long" } }), 404, "secret_not_found")

    const deleted = await service.request("DELETE", `${secretsPath()}/${id}`)
    expect(deleted.status).toBe(204)
    expectEnvelope(await service.request("GET", `${secretsPath()}/${id}`), 404, "secret_not_found")
    expectEnvelope(await service.request("DELETE", `${secretsPath()}/${id}`), 404, "secret_not_found")

    // Nothing kept the value: idempotency records, the sealed column, the log.
    expect(await leakedInto([OTHER_PASSWORD])).toEqual([])
  })
})

describe("a run with secrets", () => {
  it("signs in with a password and a TOTP code it never sees; nothing that left the browser holds them", async () => {
    await createSecret({ name: "site_password", value: PASSWORD, origins: [site.url], description: "the password of alice on the sign-in site" })
    const totp = await createSecret({ name: "site_otp", kind: "totp", value: `otpauth://totp/Site:alice?secret=${TOTP_SEED}&issuer=Site`, origins: [site.url] })
    expect(totp.json.totp).toEqual({ digits: 6, period: 30, algorithm: "SHA1" })
    expect(totp.text).not.toContain(TOTP_SEED)

    const { run, events, runPath } = await runToEnd({
      instructions: "sign in to the site as alice",
      secrets: ["site_password", "site_otp"],
      recording: { enabled: true }
    })
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.output).toEqual({ signed_in: true })
    expect(site.acceptedCodes).toHaveLength(1)

    // The model was told the placeholders, by name, with their origins.
    const system = JSON.stringify(model.requests.find((request) => taskOf(request).startsWith("sign in"))!.messages[0])
    expect(system).toContain("{{secret:site_password}}")
    expect(system).toContain("{{totp:site_otp}}")
    expect(system).toContain(site.url)

    // The events show the placeholders the model wrote.
    const typed = events.filter((e) => e.event === "run.action.started" && e.data.data.action === "type").map((e) => e.data.data.params.text)
    expect(typed).toEqual([USER, "{{secret:site_password}}", "{{totp:site_otp}}"])
    expect(events.some((e) => e.event === "run.action.failed")).toBe(false)
    // The observation after typing the code into its text field showed it as dots.
    const observations = model.requests.map(lastUserText)
    expect(observations.some((text) => /"One-time code" \[e\d+\] ="••••••"/.test(text))).toBe(true)

    // The recording: stored once the run ended, and the typed values are masked in it.
    const withRecording = await waitForRunStatus(service, runPath, terminal, {
      where: (r) => r.recording?.artifact_id !== null && r.recording?.artifact_id !== undefined,
      whereDescription: "its recording stored",
      everyMs: 250
    })
    const recording = await service.request("GET", `${runPath}/artifacts/${withRecording.recording.artifact_id}`)
    expect(recording.status).toBe(200)
    expect(recording.text).toContain("Enter your one-time code")
    const secretValues = [PASSWORD, TOTP_SEED, ...site.acceptedCodes]
    for (const value of secretValues) expect(recording.text.includes(value), `${value.slice(0, 3)}… in the recording`).toBe(false)
    // The recording holds the code's text field (its change, on Tab) as a masked value.
    const inputs = (recording.json.events as Array<{ type: number; data: { source?: number; text?: string } }>)
      .filter((e) => e.type === 3 && e.data.source === 5).map((e) => e.data.text)
    expect(inputs).toContain("******")
    expect(JSON.stringify(events)).not.toContain(PASSWORD)

    expect(await leakedInto(secretValues)).toEqual([])
    // The site did get them, from the browser.
    expect(site.attempts.some((a) => a.path === "/login" && new URLSearchParams(a.body).get("password") === PASSWORD)).toBe(true)
  })

  it("refuses a placeholder on an origin the secret is not bound to: the step fails with the reason", async () => {
    const before = site.attempts.length
    const { run, events } = await runToEnd({ instructions: "use the password elsewhere", secrets: ["site_password"] })
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.output.refused).toContain(`may be typed only on ${site.url}`)
    expect(run.output.refused).toContain(`this field is on ${site.otherOriginUrl}`)
    const failed = events.find((e) => e.event === "run.action.failed")
    expect(failed?.data.data).toMatchObject({ action: "type", code: "SecretRefused", params: { text: "{{secret:site_password}}" } })
    // Nothing was typed or sent to the other origin.
    expect(site.attempts.slice(before)).toEqual([])
    expect(await leakedInto([PASSWORD])).toEqual([])
  })

  it("never puts a placeholder into a URL; a run naming a secret the project lacks is a 422 at create and makes nothing", async () => {
    const { run } = await runToEnd({ instructions: "put the password in a url", secrets: ["site_password"] })
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.output.refused.code).toBe("SecretRefused")

    const listed = async () => (await service.request("GET", sessionsPath())).json.items.length
    const before = await listed()
    const missing = await service.request("POST", sessionsPath(), { body: { instructions: "sign in to the site as alice", secrets: ["site_password", "no_such_secret"] } })
    expect(missing.status, missing.text).toBe(422)
    expect(missing.json.code).toBe("validation_error")
    expect(missing.text).toContain("no_such_secret")
    expect(await listed()).toBe(before)

    const badName = await service.request("POST", sessionsPath(), { body: { instructions: "x", secrets: ["has space"] } })
    expect(badName.status, badName.text).toBe(422)
    expect(badName.json.code).toBe("validation_error")
    expect(await leakedInto([PASSWORD])).toEqual([])
  })
})
