/**
 * The interactive login on a service with no language model configured: the login run needs none
 * (it opens start_url and holds it for a person), so the login still returns a working control
 * URL; only a login with `instructions` (an agent run) is refused, 422 on the field.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { eventually, waitForRunStatus } from "../support/runs.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"

let site: FixtureSites
let service: Service

beforeAll(async () => {
  site = await startFixtureSites()
  service = await startService({ env: { WA_ALLOW_PRIVATE_NETWORKS: "true", WA_STEP_SCREENSHOTS: "false" } })
})
afterAll(async () => {
  await stopAndClean(service)
  await site?.close()
})

const profiles = () => `/v1/projects/${service.projectId}/profiles`
const sessionsPath = () => `/v1/projects/${service.projectId}/do_anything/sessions`

describe("interactive login without a model", () => {
  it("returns a control URL over a running login run that opened start_url; confirm ends it", async () => {
    const visits = async () => ((await (await fetch(`${site.url}/__requests`)).json()) as Array<string>).filter((r) => r.includes("/members")).length
    const started = await service.request("POST", `${profiles()}/login`, { body: { name: "nomodel", start_url: `${site.url}/members`, site_id: "fixture" } })
    expect(started.status, started.text).toBe(201)
    expect(started.json.control_url).toMatch(new RegExp(`^${service.url}/v1/control/ctl_[0-9a-z]{26}\\?exp=\\d+&sig=`))
    const runPath = `${sessionsPath()}/${started.json.session_id}/runs/${started.json.run_id}`
    const run = (await service.request("GET", runPath)).json
    expect(run.status).toBe("running")
    expect(run.error).toBeFalsy()
    // The run opened the start URL in the session's browser.
    await eventually("the login run to open start_url", async () => (await visits()) > 0 ? true : undefined)
    // The control page answers (no API key needed).
    expect((await service.fetch(started.json.control_url)).status).toBe(200)

    const confirmed = await service.request("POST", `${profiles()}/${started.json.profile_id}/confirm`, { body: { site_id: "fixture" } })
    expect(confirmed.status, confirmed.text).toBe(200)
    expect(confirmed.json.probe_result).toBe("logged_out")
    expect((await waitForRunStatus(service, runPath, ["canceled"])).status).toBe("canceled")
  })

  it("a login with instructions needs a model: 422 on instructions, nothing created", async () => {
    const before = (await service.request("GET", profiles())).json.total
    const refused = await service.request("POST", `${profiles()}/login`, {
      body: { name: "agent", start_url: `${site.url}/members`, site_id: "fixture", instructions: "log in as agent" }
    })
    expect(refused.status, refused.text).toBe(422)
    expect(refused.json.code).toBe("validation_error")
    expect(refused.json.extra.errors[0]).toMatchObject({ loc: ["body", "instructions"], type: "model_not_configured" })
    expect((await service.request("GET", profiles())).json.total).toBe(before)
  })
})
