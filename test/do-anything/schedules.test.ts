/**
 * Scheduled DoAnything sessions through HTTP: the real service (its scheduler, the Session entity,
 * real Chromium) and the scripted model. A session created with `schedule` gets a schedule
 * resource whose firings add runs with the session request's instructions; event schedules fire
 * on POST .../trigger with a payload; autonomous ones follow done's next_run_at within bounds;
 * firings are skipped (and recorded) while the previous run is active or the scheduled cap is
 * reached.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ChatRequest, promptText, type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type Service, scriptedAgentEnv, startService, stopAndClean } from "../support/service.ts"
import { eventually } from "../support/runs.ts"
import { readSse } from "../support/sse.ts"

let model: ScriptedModel
let service: Service

/** Runs whose task text includes a key wait on that key's gate before they may finish. */
const gates = new Map<string, Promise<void>>()
const gate = (key: string) => {
  let open: () => void = () => {}
  gates.set(key, new Promise<void>((resolve) => (open = resolve)))
  return () => {
    gates.delete(key)
    open()
  }
}
/** What the model answers for a task: done, optionally proposing the next run. */
let nextRunAt: (task: string) => string | undefined = () => undefined

const taskOf = (request: ChatRequest) => {
  const text = promptText(request)
  return text.slice(text.indexOf("Task:"))
}

beforeAll(async () => {
  model = await startScriptedModel(async (request) => {
    const task = taskOf(request)
    for (const [key, waiting] of gates) if (task.includes(key)) await waiting
    const next = nextRunAt(task)
    return { tool: "done", args: { output: "checked", ...(next === undefined ? {} : { next_run_at: next }) } }
  })
  service = await startService({
    env: scriptedAgentEnv(model.baseUrl, {
      WA_STEP_SCREENSHOTS: "false",
      WA_SCHEDULE_MIN_INTERVAL_SECONDS: "1",
      WA_SCHEDULER_POLL_MS: "100",
      WA_SCHEDULED_CAP: "1",
      WA_RATE_LIMIT_REQUESTS: "100000"
    })
  })
}, 60_000)
afterAll(async () => {
  if (process.env["SHOW_LOGS"]) for (const line of service.logs.filter((l: any) => l.level !== "INFO" || !String(l.message).startsWith("request")).slice(-40)) console.log(JSON.stringify(line))
  for (const key of [...gates.keys()]) gates.delete(key)
  await stopAndClean(service)
  await model?.close()
})

const sessions = () => `/v1/projects/${service.projectId}/do_anything/sessions`
const schedules = () => `/v1/projects/${service.projectId}/schedules`

const createScheduled = async (instructions: string, schedule: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
  const created = await service.request("POST", sessions(), { body: { instructions, schedule, ...extra } })
  expect(created.status, created.text).toBe(201)
  const listed = await service.request("GET", `${schedules()}?session_id=${created.json.id}`)
  expect(listed.status, listed.text).toBe(200)
  expect(listed.json.items).toHaveLength(1)
  return { sid: created.json.id as string, firstRun: created.json.latest_run_id as string, schedule: listed.json.items[0] }
}

const runsOf = async (sid: string) => (await service.request("GET", `${sessions()}/${sid}`)).json.runs as Array<any>
const firingsOf = async (id: string, query = "") => {
  const response = await service.request("GET", `${schedules()}/${id}/firings${query}`)
  expect(response.status, response.text).toBe(200)
  return response.json.items as Array<any>
}
/** true once every run of the session ended (undefined otherwise, for `eventually`). */
const allEnded = async (sid: string) => (await runsOf(sid)).every((run) => ["done", "failed", "canceled"].includes(run.status)) ? true : undefined

describe("a session's schedule", () => {
  it("refuses a bad schedule with a 422 naming the field, and creates nothing", async () => {
    const cases: Array<[Record<string, unknown>, Array<string>]> = [
      [{ kind: "interval", interval_seconds: 5, timezone: "UTC" }, ["body", "schedule", "timezone"]],
      [{ kind: "weekly" }, ["body", "schedule"]],
      [{ kind: "cron", expr: "not a cron" }, ["body", "schedule", "expr"]],
      [{ kind: "cron", expr: "0 8 * * *", tz: "Mars/Olympus" }, ["body", "schedule", "tz"]],
      [{ kind: "autonomous", min_interval_seconds: 600, max_interval_seconds: 60 }, ["body", "schedule", "max_interval_seconds"]],
      [{ kind: "event", event: "has spaces" }, ["body", "schedule", "event"]]
    ]
    const before = (await service.request("GET", `${sessions()}?limit=100`)).json.items.length
    for (const [schedule, loc] of cases) {
      const response = await service.request("POST", sessions(), { body: { instructions: "Check the price", schedule } })
      expect(response.status, `${JSON.stringify(schedule)}: ${response.text}`).toBe(422)
      expect(response.json.code).toBe("validation_error")
      expect(response.json.extra.errors.map((e: any) => e.loc), JSON.stringify(schedule)).toContainEqual(loc)
    }
    expect((await service.request("GET", `${sessions()}?limit=100`)).json.items.length).toBe(before)
  })

  it("an interval schedule adds runs with the session's instructions (reopening a keep_alive: false session); pause, resume and delete; the firings list them", async () => {
    // keep_alive false: every run closes the session; each firing opens it again for its run.
    const { sid, firstRun, schedule } = await createScheduled("Check the price of widget A", { kind: "interval", interval_seconds: 1 }, { keep_alive: false })
    expect(schedule).toMatchObject({ kind: "interval", schedule: { kind: "interval", interval_seconds: 1 }, paused: false, session_id: sid, source_run_id: firstRun })
    expect(schedule.next_fire_at).not.toBeNull()
    // The first run runs at once; the schedule adds more, each with the same instructions.
    const runs = await eventually("three scheduled runs done", async () => {
      const all = await runsOf(sid)
      return all.filter((run) => run.id !== firstRun && run.status === "done").length >= 3 ? all : undefined
    }, { timeoutMs: 60_000 })
    for (const run of runs) expect(run.instructions).toBe("Check the price of widget A")

    const paused = await service.request("POST", `${schedules()}/${schedule.id}/pause`)
    expect(paused.status, paused.text).toBe(200)
    expect(paused.json).toMatchObject({ paused: true, next_fire_at: null })
    expect(paused.json.last_fired_at).not.toBeNull()
    const got = await service.request("GET", `${schedules()}/${schedule.id}`)
    expect(got.json.paused).toBe(true)
    expect((await service.request("GET", `${schedules()}?paused=true`)).json.items.map((s: any) => s.id)).toContain(schedule.id)

    // Every run the schedule made is a run_created firing; skipped ones say why.
    await eventually("the last run ends", () => allEnded(sid))
    const firings = await firingsOf(schedule.id)
    const created = firings.filter((f) => f.outcome === "run_created")
    const scheduledRuns = (await runsOf(sid)).filter((run) => run.id !== firstRun)
    expect(created.map((f) => f.run_id).sort()).toEqual(scheduledRuns.map((run) => run.id).sort())
    // Skipped while a run was still active, or (a slot that came due as the pause landed) paused.
    for (const firing of firings.filter((f) => f.outcome === "skipped")) expect(["previous_run_active", "paused"]).toContain(firing.reason)
    // Newest first, paged by an opaque cursor.
    const page = await service.request("GET", `${schedules()}/${schedule.id}/firings?limit=1`)
    expect(page.json.items).toHaveLength(1)
    const next = await service.request("GET", `${schedules()}/${schedule.id}/firings?limit=1&cursor=${page.json.next_cursor}`)
    expect(new Date(next.json.items[0].slot_at).getTime()).toBeLessThan(new Date(page.json.items[0].slot_at).getTime())
    expect((await service.request("GET", `${schedules()}/${schedule.id}/firings?cursor=nope`)).status).toBe(400)

    const resumed = await service.request("POST", `${schedules()}/${schedule.id}/resume`)
    expect(resumed.json.paused).toBe(false)
    expect(resumed.json.next_fire_at).not.toBeNull()
    const deleted = await service.request("DELETE", `${schedules()}/${schedule.id}`)
    expect(deleted.status).toBe(204)
    expect((await service.request("GET", `${schedules()}/${schedule.id}`)).json.code).toBe("schedule_not_found")
    await eventually("the last run ends", () => allEnded(sid))
  }, 90_000)

  it("skips (and records) a firing while the session's previous run is still active", async () => {
    const release = gate("Slow task")
    const { sid, firstRun, schedule } = await createScheduled("Slow task", { kind: "interval", interval_seconds: 1 })
    const skipped = await eventually("a skipped firing", async () => {
      const firings = await firingsOf(schedule.id, "?outcome=skipped")
      return firings.length > 0 ? firings : undefined
    }, { timeoutMs: 30_000 })
    expect(skipped[0]).toMatchObject({ outcome: "skipped", reason: "previous_run_active", run_id: null, trigger: "schedule" })
    // Only the first run exists while it is under way.
    expect((await runsOf(sid)).map((run) => run.id)).toEqual([firstRun])
    const got = (await service.request("GET", `${schedules()}/${schedule.id}`)).json
    expect(got.last_outcome === "skipped" || got.last_outcome === "pending").toBe(true)
    await service.request("POST", `${schedules()}/${schedule.id}/pause`)
    release()
    await eventually("the first run ends", () => allEnded(sid))
    await service.request("DELETE", `${schedules()}/${schedule.id}`)
  }, 60_000)

  it("an event schedule fires on trigger with its payload handed to the run; bad triggers change nothing", async () => {
    const { sid, firstRun, schedule } = await createScheduled("Summarize the alert", { kind: "event", event: "price.dropped" })
    expect(schedule).toMatchObject({ kind: "event", next_fire_at: null, schedule: { kind: "event", event: "price.dropped" } })
    await eventually("the first run ends", () => allEnded(sid))

    const tooBig = await service.request("POST", `${schedules()}/${schedule.id}/trigger`, { body: { payload: { blob: "x".repeat(17_000) } } })
    expect(tooBig.status, tooBig.text).toBe(422)
    const unknownField = await service.request("POST", `${schedules()}/${schedule.id}/trigger`, { body: { payload: {}, extra: 1 } })
    expect(unknownField.status, unknownField.text).toBe(422)
    expect((await service.request("POST", `${schedules()}/sched_nope/trigger`, { body: {} })).status).toBe(404)
    expect(await firingsOf(schedule.id)).toEqual([])

    const triggered = await service.request("POST", `${schedules()}/${schedule.id}/trigger`, { body: { payload: { sku: "W-42", price: "9.99" } } })
    expect(triggered.status, triggered.text).toBe(202)
    expect(triggered.json).toMatchObject({ trigger: "event", outcome: "pending", payload: { sku: "W-42", price: "9.99" } })
    const firing = await eventually("the triggered run was made", async () => {
      const [latest] = await firingsOf(schedule.id)
      return latest?.outcome === "run_created" ? latest : undefined
    })
    const run = (await runsOf(sid)).find((r) => r.id === firing.run_id)!
    expect(run.instructions).toContain("Summarize the alert")
    expect(run.instructions).toContain("\"sku\": \"W-42\"")
    expect(run.id).not.toBe(firstRun)
    await eventually("the triggered run ends", () => allEnded(sid))
    expect(model.requests.some((request) => taskOf(request).includes("W-42") && taskOf(request).includes("price.dropped"))).toBe(true)

    await service.request("POST", `${schedules()}/${schedule.id}/pause`)
    const whilePaused = await service.request("POST", `${schedules()}/${schedule.id}/trigger`, { body: {} })
    expect(whilePaused.status).toBe(409)
    expect(whilePaused.json.code).toBe("schedule_paused")
    await service.request("DELETE", `${schedules()}/${schedule.id}`)
  }, 60_000)

  it("an autonomous schedule follows done's next_run_at, clamped to its bounds", async () => {
    const far = new Date(Date.now() + 30 * 24 * 3600_000).toISOString()
    nextRunAt = (task) => task.includes("Decide when to look again") ? far : undefined
    const { sid, firstRun, schedule } = await createScheduled("Decide when to look again", { kind: "autonomous", min_interval_seconds: 60, max_interval_seconds: 3600 })
    expect(schedule.schedule).toEqual({ kind: "autonomous", min_interval_seconds: 60, max_interval_seconds: 3600 })
    // done offered next_run_at to this run only.
    await eventually("the first run ends", () => allEnded(sid))
    const { events } = await readSse(`${service.url}${sessions()}/${sid}/runs/${firstRun}/events`, { authorization: `Bearer ${service.apiKey}` })
    expect(events.map((event) => event.event)).toContain("run.next_run_scheduled")
    const got = (await service.request("GET", `${schedules()}/${schedule.id}`)).json
    const next = new Date(got.next_fire_at).getTime()
    // A month away was asked for; the schedule's max is an hour after the run ended.
    expect(next).toBeLessThanOrEqual(Date.now() + 3600_000)
    expect(next).toBeGreaterThan(Date.now() + 3500_000)
    const doneTool = model.requests.filter((request) => taskOf(request).includes("Decide when to look again"))
      .map((request) => request.tools?.find((t) => t.function.name === "done")?.function.parameters as any)
    expect(doneTool[0]?.properties?.next_run_at).toBeDefined()
    const otherDone = model.requests.filter((request) => taskOf(request).includes("Summarize the alert"))
      .map((request) => request.tools?.find((t) => t.function.name === "done")?.function.parameters as any)
    expect(otherDone[0]?.properties?.next_run_at).toBeUndefined()
    nextRunAt = () => undefined
    await service.request("DELETE", `${schedules()}/${schedule.id}`)
  }, 60_000)

  it("respects the project's scheduled cap: a firing beyond it is skipped with scheduled_cap_reached", async () => {
    const release = gate("Capped task A")
    const a = await createScheduled("Capped task A", { kind: "event" })
    const b = await createScheduled("Capped task B", { kind: "event" })
    // The first runs are not scheduled runs (they do not count); A's first is held, so let it go.
    release()
    await eventually("the first runs end", async () => (await allEnded(a.sid)) && (await allEnded(b.sid)))
    const releaseAgain = gate("Capped task A")
    expect((await service.request("POST", `${schedules()}/${a.schedule.id}/trigger`, { body: {} })).status).toBe(202)
    await eventually("A's scheduled run is under way", async () => {
      const [latest] = await firingsOf(a.schedule.id)
      return latest?.outcome === "run_created" ? true : undefined
    })
    expect((await service.request("POST", `${schedules()}/${b.schedule.id}/trigger`, { body: {} })).status).toBe(202)
    const skipped = await eventually("B's firing decided", async () => {
      const [latest] = await firingsOf(b.schedule.id)
      return latest?.outcome !== "pending" ? latest : undefined
    })
    expect(skipped).toMatchObject({ outcome: "skipped", reason: "scheduled_cap_reached" })
    releaseAgain()
    await eventually("A's run ends", () => allEnded(a.sid))
    // Below the cap again, B fires.
    expect((await service.request("POST", `${schedules()}/${b.schedule.id}/trigger`, { body: {} })).status).toBe(202)
    await eventually("B's run made", async () => {
      const [latest] = await firingsOf(b.schedule.id)
      return latest?.outcome === "run_created" ? true : undefined
    })
    await eventually("B's run ends", () => allEnded(b.sid))
  }, 60_000)

  it("a Track monitor's notification triggers an event schedule (notify_channel kind schedule), once per change", async () => {
    let text = "In stock."
    const page = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" })
      response.end(`<!doctype html><html><body><main><h1>Widget</h1><p>${text}</p></main></body></html>`)
    })
    await new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve))
    const pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/widget`
    try {
      const { sid, schedule } = await createScheduled("React to the stock change", { kind: "event", event: "stock.changed" })
      await eventually("the first run ends", () => allEnded(sid))
      const monitors = `/v1/projects/${service.projectId}/track/monitors`
      const unknown = await service.request("POST", monitors, {
        body: { intent: "Tell me when the widget sells out", notify_channel: { kind: "schedule", schedule_id: "sched_nope" }, schedule: { kind: "interval", interval_seconds: 1 }, target_urls: [pageUrl] }
      })
      expect(unknown.status, unknown.text).toBe(422)
      expect(unknown.json.extra.errors[0].loc).toEqual(["body", "notify_channel", "schedule_id"])
      const created = await service.request("POST", monitors, {
        body: { intent: "Tell me when the widget sells out", notify_channel: { kind: "schedule", schedule_id: schedule.id }, schedule: { kind: "interval", interval_seconds: 1 }, target_urls: [pageUrl] }
      })
      expect(created.status, created.text).toBe(201)
      expect(created.json.notify_channel).toMatchObject({ kind: "schedule", schedule_id: schedule.id })
      await eventually("the baseline tick", async () => {
        const ticks = await service.request("GET", `${monitors}/${created.json.id}/runs`)
        return ticks.json.items?.some((tick: any) => tick.status === "done") ? true : undefined
      })
      text = "Sold out."
      const firing = await eventually("the notification made a run", async () => {
        const [latest] = await firingsOf(schedule.id)
        return latest?.outcome === "run_created" ? latest : undefined
      }, { timeoutMs: 30_000 })
      expect(firing).toMatchObject({ trigger: "event", payload: { monitor_id: created.json.id } })
      const run = (await runsOf(sid)).find((r) => r.id === firing.run_id)!
      expect(run.instructions).toContain("React to the stock change")
      expect(run.instructions).toContain(created.json.id)
      await service.request("PATCH", `${monitors}/${created.json.id}`, { body: { action: "cancel" } })
      await eventually("the run ends", () => allEnded(sid))
      // One change, one firing.
      expect((await firingsOf(schedule.id)).filter((f) => f.trigger === "event")).toHaveLength(1)
      await service.request("DELETE", `${schedules()}/${schedule.id}`)
    } finally {
      await new Promise((resolve) => page.close(resolve))
    }
  }, 60_000)

  it("closing the session deletes its schedule", async () => {
    const { sid, schedule } = await createScheduled("Closing soon", { kind: "event" })
    const closed = await service.request("POST", `${sessions()}/${sid}/close`)
    expect(closed.status, closed.text).toBe(200)
    expect((await service.request("GET", `${schedules()}/${schedule.id}`)).status).toBe(404)
  })
})
