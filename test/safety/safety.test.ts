/**
 * The safety boundary end to end (issue 28 §2): the real service, real Chromium, the scripted
 * model and a local shop (test/fixtures/sites/safety-shop.ts) reachable as 127.0.0.1 and as
 * localhost, two hosts to the browser. Policy CRUD (admin only, bad input in the envelope), 403
 * at create (a new session, a follow-up run, continue), runs that leave the boundary (navigate, a
 * link, a redirect; by denied_domains and by allowed_domains) ending failed with the code and
 * reason and the refused step not charged, and payment, message and account deletion clicks that
 * wait for a person's yes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { lastUserText, refOf, type ScriptedModel, startScriptedModel, taskOf, toolResults } from "../fixtures/model/scripted-model.ts"
import { type SafetyShop, startSafetyShop } from "../fixtures/sites/safety-shop.ts"
import { type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { safetyClient, terminal } from "./support.ts"
import { waitForRunStatus } from "../support/runs.ts"

let shop: SafetyShop
let model: ScriptedModel
let service: Service
let originalScript: Parameters<ScriptedModel["setScript"]>[0]

beforeAll(async () => {
  shop = await startSafetyShop()
  originalScript = (request) => {
    const page = lastUserText(request)
    const task = taskOf(request)
    const results = toolResults(request) as Array<{ code?: string; error?: string; message?: string }>
    const last = results.at(-1)
    const onShop = page.includes("Cart: 1 book")
    if (task.startsWith("nothing")) return { tool: "done", args: { output: "ok" } }
    // Never done: the run uses its step budget (WA_MAX_STEPS) and ends expired.
    if (task.startsWith("keep visiting the shop")) return { tool: "navigate", args: { url: `${shop.url}/shop` } }
    if (task.startsWith("delete my account")) {
      if (last?.code === "UserDeclined") return { tool: "done", args: { output: { declined: last.error } } }
      if (page.includes("Account deleted")) return { tool: "done", args: { output: { deleted: true } } }
      if (!page.includes("Your account")) return { tool: "navigate", args: { url: `${shop.url}/account` } }
      return { tool: "click", args: { ref: refOf(page, "Delete my account") } }
    }
    if (task.startsWith("open the partner page directly")) {
      if (!onShop) return { tool: "navigate", args: { url: `${shop.url}/shop` } }
      return { tool: "navigate", args: { url: `${shop.otherHostUrl}/partner` } }
    }
    if (task.startsWith("follow the partner link")) {
      if (!onShop) return { tool: "navigate", args: { url: `${shop.url}/shop` } }
      return { tool: "click", args: { ref: refOf(page, "Partner offers") } }
    }
    if (task.startsWith("follow the redirect")) {
      if (!onShop) return { tool: "navigate", args: { url: `${shop.url}/shop` } }
      return { tool: "click", args: { ref: refOf(page, "Partner via redirect") } }
    }
    if (task.startsWith("place the order")) {
      if (last?.code === "UserDeclined") return { tool: "done", args: { output: { declined: last.error } } }
      if (page.includes("Order placed")) return { tool: "done", args: { output: { placed: true } } }
      if (!onShop) return { tool: "navigate", args: { url: `${shop.url}/shop` } }
      // An ordinary button first: it asks nobody.
      if (!page.includes("Noted")) return { tool: "click", args: { ref: refOf(page, "Add a note") } }
      return { tool: "click", args: { ref: refOf(page, "Place order") } }
    }
    if (task.startsWith("send the message")) {
      if (last?.code === "UserDeclined") return { tool: "done", args: { output: { declined: last.error } } }
      if (page.includes("Message sent")) return { tool: "done", args: { output: { sent: true } } }
      if (!page.includes("Contact us")) return { tool: "navigate", args: { url: `${shop.url}/contact` } }
      return { tool: "type", args: { ref: refOf(page, "Message"), text: "Hello", submit: true } }
    }
    if (task.startsWith("send by point")) {
      if (last?.code === "UserDeclined") return { tool: "done", args: { output: { declined: last.error } } }
      if (page.includes("Message sent")) return { tool: "done", args: { output: { sent: true } } }
      if (!page.includes("Contact us")) return { tool: "navigate", args: { url: `${shop.url}/contact-at` } }
      return { tool: "type_at", args: { x: 250, y: 215, text: "Hello", submit: true } }
    }
    return { tool: "done", args: { output: "unknown task" } }
  }
  model = await startScriptedModel(originalScript)
  // A small step budget, so that a run can use it up quickly (continue is for expired runs); the
  // other tasks take at most five steps.
  service = await startService({ env: scriptedAgentEnv(model.baseUrl, { WA_MAX_STEPS: "6" }) })
}, 120_000)
afterAll(async () => {
  await stopAndClean(service)
  await model?.close()
  await shop?.close()
})

const { safetyPath, sessionsPath, putPolicy, startRun, eventsOf } = safetyClient(() => service)

/** The LLM cost of one step: a run that calls done at once takes one step. */
let stepCost = 0

describe("safety policy API", () => {
  it("reads the empty policy, replaces it with normalised entries, refuses bad input and non-admin keys", async () => {
    const empty = await service.request("GET", safetyPath())
    expect(empty.status, empty.text).toBe(200)
    expect(empty.json).toEqual({ allowed_domains: [], denied_domains: [], confirm_actions: [], updated_at: null })

    const put = await putPolicy({
      allowed_domains: ["Example.COM.", "*.shop.example.org", "Bücher.de", "127.1", "example.com"],
      denied_domains: ["ads.example.com"],
      confirm_actions: ["payment", "send_message", "payment"]
    })
    expect(put).toMatchObject({
      allowed_domains: ["example.com", "shop.example.org", "xn--bcher-kva.de", "127.0.0.1"],
      denied_domains: ["ads.example.com"],
      confirm_actions: ["payment", "send_message"]
    })
    expect(typeof put.updated_at).toBe("string")
    expect((await service.request("GET", safetyPath())).json).toEqual(put)

    for (const [body, field] of [
      [{ denied_domains: ["https://evil.example/path"] }, "denied_domains"],
      [{ allowed_domains: ["example.com:8080"] }, "allowed_domains"],
      [{ confirm_actions: ["launch_missiles"] }, "confirm_actions"],
      [{ denied_domains: ["ok.example"], blocked: ["x"] }, "blocked"]
    ] as const) {
      const refused = await service.request("PUT", safetyPath(), { body })
      expect(refused.status, refused.text).toBe(422)
      expect(refused.json.code).toBe("validation_error")
      expect(typeof refused.json.detail).toBe("string")
      expect(JSON.stringify(refused.json.extra)).toContain(field)
    }
    // Nothing half-written.
    expect((await service.request("GET", safetyPath())).json).toEqual(put)

    const key = await service.request("POST", `/v1/projects/${service.projectId}/api_keys`, { body: { name: "runner", scope: "run" } })
    expect(key.status, key.text).toBe(201)
    const runKey = key.json.secret_token as string
    for (const method of ["GET", "PUT"]) {
      const denied = await service.request(method, safetyPath(), { key: runKey, ...(method === "PUT" ? { body: {} } : {}) })
      expect(denied.status, denied.text).toBe(403)
      expect(denied.json.code).toBe("forbidden")
    }
    expect((await service.request("GET", safetyPath())).json).toEqual(put)
    // An empty PUT lifts the boundary.
    expect(await putPolicy({})).toMatchObject({ allowed_domains: [], denied_domains: [], confirm_actions: [] })
  })
})

/**
 * Both create routes (the sessions route and the flat runs route) refuse instructions naming the
 * shop's other host with 403 safety_boundary_violated, `reason` containing `reason` and `extra`
 * matching; the project's sessions are the same afterwards.
 */
const expectCreatesRefused = async (reason: string, extra: Record<string, unknown>) => {
  const before = await service.request("GET", sessionsPath())
  for (const [path, body] of [
    [sessionsPath(), { instructions: `open ${shop.otherHostUrl}/partner and read it` }],
    [`/api/v1/projects/${service.projectId}/do_anything/runs`, { instructions: `see ${shop.otherHostUrl}/partner.` }]
  ] as const) {
    const refused = await service.request("POST", path, { body })
    expect(refused.status, refused.text).toBe(403)
    expect(refused.json.code).toBe("safety_boundary_violated")
    expect(refused.json.extra.reason).toContain(reason)
    expect(refused.json.extra).toMatchObject(extra)
  }
  const after = await service.request("GET", sessionsPath())
  expect(after.json.items.map((s: any) => s.id)).toEqual(before.json.items.map((s: any) => s.id))
}

describe("safety boundary at create", () => {
  it("refuses a create whose instructions name a denied URL with 403 safety_boundary_violated, creating nothing", async () => {
    await putPolicy({ denied_domains: ["localhost"] })
    await expectCreatesRefused("localhost", { field: "instructions", domain: "localhost", rule: "denied_domains" })

    // An allowed URL goes ahead; its run takes one step, whose cost the next tests compare with.
    const { runPath } = await startRun(`nothing to do at ${shop.url}/shop`)
    const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 60_000, everyMs: 200 })
    expect(run.status).toBe("done")
    expect(run.step_count).toBe(1)
    stepCost = Number(run.llm_cost_usd)
    expect(stepCost).toBeGreaterThan(0)
  })
})

describe("safety boundary by allowed_domains", () => {
  it("refuses a create whose URLs name a host outside allowed_domains with 403 safety_boundary_violated, creating nothing", async () => {
    await putPolicy({ allowed_domains: ["127.0.0.1"] })
    await expectCreatesRefused("localhost is not on the project's allowed_domains (127.0.0.1)", {
      field: "instructions", domain: "localhost", rule: "allowed_domains", url: `${shop.otherHostUrl}/partner`
    })

    // The allowed host goes ahead (the test can fail).
    const { runPath } = await startRun(`nothing to do at ${shop.url}/shop`)
    const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 60_000, everyMs: 200 })
    expect(run.status).toBe("done")
    await putPolicy({})
  })

  it("a run that navigates to a host outside allowed_domains ends failed with safety_boundary_violated; the other host is never asked", async () => {
    await putPolicy({ allowed_domains: ["127.0.0.1"] })
    const seenBefore = shop.requests.length
    const task = "open the partner page directly"
    const requestsBefore = model.requests.length
    const { runPath } = await startRun(task)
    const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 90_000, everyMs: 200 })
    expect(run.status).toBe("failed")
    expect(run.error.code).toBe("safety_boundary_violated")
    expect(run.error.extra.reason).toContain("localhost is not on the project's allowed_domains (127.0.0.1)")
    // Two steps: the shop (charged), then the one that left the boundary (not charged).
    expect(run.step_count).toBe(2)
    expect(Number(run.llm_cost_usd)).toBeCloseTo(stepCost, 6)
    const completed = (await eventsOf(runPath)).find((e) => e.event === "run.completed")!.data.data
    expect(completed.error.code).toBe("safety_boundary_violated")
    // The shop was reached on its allowed host; its other host was never asked for anything.
    const seen = shop.requests.slice(seenBefore)
    expect(seen.some((r) => r.host.startsWith("127.0.0.1") && r.path === "/shop")).toBe(true)
    expect(seen.filter((r) => r.host.startsWith("localhost"))).toEqual([])
    expect(JSON.stringify(model.requests.slice(requestsBefore))).not.toContain("Partner page")
    await putPolicy({})
  })
})

describe("safety boundary at a follow-up run and at continue", () => {
  it("refuses a follow-up run and a continue whose text names a denied URL with 403, adding no run to the session", async () => {
    await putPolicy({})
    // A session kept alive whose run used its step budget (expired: continue applies to it).
    const created = await service.request("POST", sessionsPath(), { body: { keep_alive: true, instructions: "keep visiting the shop" } })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id as string
    const rid = created.json.latest_run_id as string
    const sessionPath = `${sessionsPath()}/${sid}`
    const expired = await waitForRunStatus(service, `${sessionPath}/runs/${rid}`, terminal, { timeoutMs: 90_000, everyMs: 200 })
    expect(expired.status).toBe("failed")
    expect(expired.expired).toBe(true)
    expect(expired.error.code).toBe("max_steps_exceeded")
    const runsOf = async () => {
      const session = await service.request("GET", sessionPath)
      expect(session.status, session.text).toBe(200)
      return { ids: (session.json.runs as Array<{ id: string }>).map((r) => r.id), latest: session.json.latest_run_id as string }
    }
    const before = await runsOf()
    expect(before).toEqual({ ids: [rid], latest: rid })

    await putPolicy({ denied_domains: ["localhost"] })
    const partner = `${shop.otherHostUrl}/partner`
    for (const [path, body, field] of [
      [`${sessionPath}/runs`, { instructions: `now open ${partner} and read it` }, "instructions"],
      // The same follow-up through the create routes with session_id.
      [sessionsPath(), { session_id: sid, instructions: `now open ${partner} and read it` }, "instructions"],
      [`/api/v1/projects/${service.projectId}/do_anything/runs`, { session_id: sid, instructions: `now open ${partner}` }, "instructions"],
      [`${sessionPath}/runs/${rid}/continue`, { content: `carry on at ${partner}` }, "content"]
    ] as const) {
      const refused = await service.request("POST", path, { body })
      expect(refused.status, `${path}: ${refused.text}`).toBe(403)
      expect(refused.json.code).toBe("safety_boundary_violated")
      expect(refused.json.extra.reason).toContain("localhost is on the project's denied_domains")
      expect(refused.json.extra).toMatchObject({ field, domain: "localhost", rule: "denied_domains", url: partner })
    }
    expect(await runsOf()).toEqual(before)

    // The same routes without the URL create a run (the test can fail): continue, then a follow-up.
    const continued = await service.request("POST", `${sessionPath}/runs/${rid}/continue`, { body: { content: `nothing more, the shop ${shop.url}/shop is fine` } })
    expect(continued.status, continued.text).toBe(201)
    expect(continued.json.parent_run_id).toBe(rid)
    const next = await waitForRunStatus(service, `${sessionPath}/runs/${continued.json.id}`, terminal, { timeoutMs: 60_000, everyMs: 200 })
    expect(next.status).toBe("done")
    const followUp = await service.request("POST", `${sessionPath}/runs`, { body: { instructions: `nothing to do at ${shop.url}/shop` } })
    expect(followUp.status, followUp.text).toBe(201)
    const last = await waitForRunStatus(service, `${sessionPath}/runs/${followUp.json.id}`, terminal, { timeoutMs: 60_000, everyMs: 200 })
    expect(last.status).toBe("done")
    expect((await runsOf()).ids).toEqual(expect.arrayContaining([rid, continued.json.id, followUp.json.id]))
    expect((await runsOf()).ids).toHaveLength(3)
    await putPolicy({})
    await service.request("POST", `${sessionPath}/close`)
  })
})

describe("safety boundary at a schedule trigger", () => {
  it("refuses a trigger whose payload names a denied URL (the payload goes into the run's prompt), recording no firing", async () => {
    await putPolicy({})
    const created = await service.request("POST", sessionsPath(), { body: { keep_alive: true, instructions: "nothing to do but read the event", schedule: { kind: "event" } } })
    expect(created.status, created.text).toBe(201)
    const listed = await service.request("GET", `/v1/projects/${service.projectId}/schedules?session_id=${created.json.id}`)
    const scheduleId = listed.json.items[0].id as string
    const schedulePath = `/v1/projects/${service.projectId}/schedules/${scheduleId}`
    await putPolicy({ denied_domains: ["localhost"] })

    const refused = await service.request("POST", `${schedulePath}/trigger`, { body: { payload: { order: 7, details: `${shop.otherHostUrl}/partner` } } })
    expect(refused.status, refused.text).toBe(403)
    expect(refused.json.code).toBe("safety_boundary_violated")
    expect(refused.json.extra).toMatchObject({ field: "payload", domain: "localhost", rule: "denied_domains" })
    expect((await service.request("GET", `${schedulePath}/firings`)).json.items).toEqual([])

    // A payload without such a URL is recorded.
    const accepted = await service.request("POST", `${schedulePath}/trigger`, { body: { payload: { order: 7 } } })
    expect(accepted.status, accepted.text).toBe(202)
    expect((await service.request("GET", `${schedulePath}/firings`)).json.items.map((f: any) => f.payload)).toEqual([{ order: 7 }])
    await putPolicy({})
    await service.request("POST", `${sessionsPath()}/${created.json.id}/close`)
  })
})

describe("safety boundary during a run", () => {
  for (const task of ["open the partner page directly", "follow the partner link", "follow the redirect"]) {
    it(`${task}: the run ends failed with safety_boundary_violated and the reason; the refused step is not charged`, async () => {
      await putPolicy({ denied_domains: ["localhost"] })
      const { runPath } = await startRun(task)
      const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 90_000, everyMs: 200 })
      expect(run.status).toBe("failed")
      expect(run.error.code).toBe("safety_boundary_violated")
      expect(run.error.extra.reason).toContain("localhost is on the project's denied_domains")
      // Two steps: the shop (charged), then the one that left the boundary (not charged).
      expect(run.step_count).toBe(2)
      expect(Number(run.llm_cost_usd)).toBeCloseTo(stepCost, 6)
      const events = await eventsOf(runPath)
      const completed = events.find((e) => e.event === "run.completed")!.data.data
      expect(completed.error.code).toBe("safety_boundary_violated")
      // The agent never saw the partner page.
      expect(JSON.stringify(model.requests.filter((r) => taskOf(r) === task))).not.toContain("Partner page")
    })
  }

  it("the same task goes through without the boundary (the test can fail)", async () => {
    await putPolicy({ allowed_domains: ["localhost", "127.0.0.1"] })
    model.setScript((request) => {
      const page = lastUserText(request)
      if (page.includes("Partner page")) return { tool: "done", args: { output: "reached" } }
      if (!page.includes("Cart: 1 book")) return { tool: "navigate", args: { url: `${shop.url}/shop` } }
      return { tool: "click", args: { ref: refOf(page, "Partner offers") } }
    })
    try {
      const { runPath } = await startRun("reach the partner")
      const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 90_000, everyMs: 200 })
      expect(run.status, JSON.stringify(run.error)).toBe("done")
      expect(shop.requests.some((r) => r.host.startsWith("localhost") && r.path === "/partner")).toBe(true)
    } finally {
      model.setScript(originalScript)
    }
  })
})

/**
 * Starts a run of `task`, checks that it asks `prompt` once, answers `answer`, and returns the
 * ended run with `count()` as it was while the question was open (nothing done yet).
 */
const answerConfirmation = async (task: string, prompt: string, answer: string, count: () => number) => {
  const { runPath } = await startRun(task)
  await waitForRunStatus(service, runPath, ["awaiting_input"], { timeoutMs: 90_000, everyMs: 200 })
  const asked = (await eventsOf(runPath, "run.input_request")).filter((e) => e.event === "run.input_request")
  expect(asked).toHaveLength(1)
  const request = asked[0]!.data.data
  expect(request.prompt).toBe(prompt)
  const before = count()
  const answered = await service.request("POST", `${runPath}/intervene`, {
    body: { kind: "answer_input_request", input_request_id: request.input_request_id, response: answer }
  })
  expect(answered.status, answered.text).toBe(200)
  const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 90_000, everyMs: 200 })
  return { run, before }
}

describe("confirmation of a payment click", () => {
  const answerWith = async (answer: string, task = "place the order", prompt = "The agent wants to click \"Place order\" (payment). Allow? yes/no") => {
    const { run, before } = await answerConfirmation(task, prompt, answer, shop.orders)
    return { run, ordersBefore: before }
  }

  it("asks a person before clicking Place order; no declines and the agent is told, yes places the order", async () => {
    await putPolicy({ confirm_actions: ["payment"] })
    const declined = await answerWith("no")
    expect(declined.run.status).toBe("done")
    expect(declined.run.output.declined).toContain("the user declined")
    expect(shop.orders()).toBe(declined.ordersBefore)

    const allowed = await answerWith("yes")
    expect(allowed.run.status).toBe("done")
    expect(allowed.run.output).toEqual({ placed: true })
    expect(shop.orders()).toBe(allowed.ordersBefore + 1)
  })

  it("asks before a form is submitted with Enter (type ... submit) when its button sends a message", async () => {
    await putPolicy({ confirm_actions: ["payment", "send_message"] })
    const sentBefore = shop.messages()
    const declined = await answerWith("no thanks", "send the message", "The agent wants to click \"Send\" (send message). Allow? yes/no")
    expect(declined.run.status).toBe("done")
    expect(declined.run.output.declined).toContain("the user declined")
    expect(shop.messages()).toBe(sentBefore)
  })

  it("asks before a form is submitted with Enter at a point (type_at ... submit)", async () => {
    await putPolicy({ confirm_actions: ["send_message"] })
    const sentBefore = shop.messages()
    const declined = await answerWith("no", "send by point", "The agent wants to click \"Send\" (send message). Allow? yes/no")
    expect(declined.run.status).toBe("done")
    expect(declined.run.output.declined).toContain("the user declined")
    expect(shop.messages()).toBe(sentBefore)
    const allowed = await answerWith("yes", "send by point", "The agent wants to click \"Send\" (send message). Allow? yes/no")
    expect(allowed.run.output).toEqual({ sent: true })
    expect(shop.messages()).toBe(sentBefore + 1)
  })
})

describe("confirmation of an account deletion", () => {
  const prompt = "The agent wants to click \"Delete my account\" (account deletion). Allow? yes/no"
  const answerWith = async (answer: string) => {
    // Nothing is deleted while the question is open.
    const { run, before } = await answerConfirmation("delete my account", prompt, answer, shop.deletions)
    return { run, deletionsBefore: before }
  }

  it("asks a person before clicking Delete my account; no leaves the account and tells the agent (UserDeclined), yes deletes it", async () => {
    await putPolicy({ confirm_actions: ["account_deletion"] })
    const start = shop.deletions()
    const declined = await answerWith("no")
    expect(declined.deletionsBefore).toBe(start)
    expect(declined.run.status).toBe("done")
    // The script answers with the tool's error only when the result's code is UserDeclined.
    expect(declined.run.output.declined).toContain("the user declined")
    expect(shop.deletions()).toBe(start)

    const allowed = await answerWith("yes")
    expect(allowed.run.status).toBe("done")
    expect(allowed.run.output).toEqual({ deleted: true })
    expect(shop.deletions()).toBe(start + 1)
  })

  it("without account_deletion in confirm_actions the click asks nobody (the test can fail)", async () => {
    await putPolicy({ confirm_actions: ["payment"] })
    const start = shop.deletions()
    const { runPath } = await startRun("delete my account")
    const run = await waitForRunStatus(service, runPath, terminal, { timeoutMs: 90_000, everyMs: 200 })
    expect(run.status).toBe("done")
    expect(run.output).toEqual({ deleted: true })
    expect(shop.deletions()).toBe(start + 1)
    expect((await eventsOf(runPath)).some((e) => e.event === "run.input_request")).toBe(false)
    await putPolicy({})
  })
})
