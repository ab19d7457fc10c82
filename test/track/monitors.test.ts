/**
 * Track end to end through HTTP: the real service, a loopback page server whose content the test
 * changes, a receiver that verifies every delivery with the `standardwebhooks` library, and the
 * scripted model (extraction and alignment). Ticks are driven by run_now where a test needs a
 * tick at a known moment; the scheduler is exercised by short intervals.
 */
import { createServer, type Server } from "node:http"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { listenOnLoopback } from "../support/listen.ts"
import { type FakeEngines, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { promptText, type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"
import { eventually } from "../support/runs.ts"
import { readSse } from "../support/sse.ts"
import { startWebhookReceiver, verifiedDelivery, type WebhookReceiver } from "../support/webhook-receiver.ts"

let service: Service
let model: ScriptedModel
let engines: FakeEngines
/** What the fake search engine answers (a search-only monitor's snapshot). */
let searchHits = [{ title: "Widget review", url: "https://reviews.example/widget", snippet: "A review" }]
let pages: Server
let pagesUrl: string
let receiver: WebhookReceiver
const content = new Map<string, { status: number; html: string }>()

const page = (text: string) =>
  `<!doctype html><html><head><title>Shop</title></head><body><nav>Home | Cart</nav><main><h1>Widget</h1><p>${text}</p>` +
  `<p>Updated 2026-11-22 10:04:11 UTC, 3 minutes ago.</p></main></body></html>`

const setPage = (path: string, text: string, status = 200) => content.set(path, { status, html: page(text) })

const create = (body: unknown) => service.request("POST", `/v1/projects/${service.projectId}/track/monitors`, { body })
const monitorPath = (id: string) => `/v1/projects/${service.projectId}/track/monitors/${id}`
const get = async (id: string) => (await service.request("GET", monitorPath(id))).json

const ticks = async (id: string) => (await service.request("GET", `${monitorPath(id)}/runs?limit=100`)).json.items as Array<any>
/** Waits until the monitor has `n` finished ticks and returns them, newest first. */
const finishedTicks = (id: string, n: number) =>
  eventually(`${n} finished ticks of ${id}`, async () => {
    const all = (await ticks(id)).filter((tick) => tick.status !== "running")
    return all.length >= n ? all : undefined
  }, { timeoutMs: 30_000 })

const runNow = async (id: string) => {
  const response = await service.request("POST", `${monitorPath(id)}/run_now`)
  expect(response.status).toBe(202)
  return eventually("the run_now tick to end", async () => {
    const tick = (await service.request("GET", `${monitorPath(id)}/runs/${response.json.id}`)).json
    return tick.status === "running" ? undefined : tick
  }, { timeoutMs: 30_000 })
}

beforeAll(async () => {
  pages = createServer((request, response) => {
    const entry = content.get(request.url ?? "/")
    response.writeHead(entry?.status ?? 404, { "content-type": "text/html; charset=utf-8" })
    response.end(entry?.html ?? "not found")
  })
  pagesUrl = (await listenOnLoopback(pages)).url
  receiver = await startWebhookReceiver()
  model = await startScriptedModel((request) => {
    const prompt = promptText(request)
    if (prompt.includes("You extract data from web pages")) {
      const price = /Price: (\d+)/.exec(prompt.split("Pages:")[1] ?? "")
      return { text: JSON.stringify({ price: price === null ? null : Number(price[1]) }) }
    }
    if (prompt.includes("You set up a web monitor")) {
      if (prompt.includes("User (answer): the widget page")) {
        return {
          text: "```json\n" + JSON.stringify({
            configure: { schedule: { kind: "interval", interval_seconds: 3600 }, target_urls: [`${pagesUrl}/aligned`], trigger_dsl: { contains: "sold out" } }
          }) + "\n```"
        }
      }
      return { text: JSON.stringify({ ask: "Which page should I watch?" }) }
    }
    return { text: "{}" }
  })
  engines = await startFakeEngines({ results: () => searchHits })
  service = await startService({
    env: {
      WA_SEARXNG_URL: engines.url,
      WA_ALLOW_PRIVATE_NETWORKS: "true",
      WA_MODEL_BASE_URL: model.baseUrl,
      WA_MODEL_API_KEY: "test",
      WA_SCHEDULE_MIN_INTERVAL_SECONDS: "1",
      WA_SCHEDULER_POLL_MS: "100",
      WA_WEBHOOK_RETRY_BASE_MS: "100",
      WA_TRACK_MAX_CONSECUTIVE_FAILURES: "2",
      // The test polls its monitors; the per-key limit is tested elsewhere.
      WA_RATE_LIMIT_REQUESTS: "100000"
    }
  })
})

afterAll(async () => {
  await stopAndClean(service)
  await model?.close()
  await engines?.close()
  await new Promise((resolve) => pages?.close(resolve))
  await receiver?.close()
})

describe("direct mode", () => {
  it("takes a baseline, stays quiet while nothing changes, and delivers one signed notification per change", async () => {
    setPage("/widget", "Price: 120 dollars. In stock.")
    const created = await create({
      intent: "Tell me when the widget page changes",
      notify_channel: { kind: "callback_url", url: `${receiver.url}/hook` },
      schedule: { kind: "interval", interval_seconds: 3600 },
      target_urls: [`${pagesUrl}/widget`]
    })
    expect(created.status).toBe(201)
    expect(created.json.status).toBe("active")
    expect(created.json.notify_secret).toMatch(/^whsec_/)
    const id = created.json.id
    const secret = created.json.notify_secret
    // The first tick runs at once: the baseline, no notification.
    const [baseline] = await finishedTicks(id, 1)
    expect(baseline).toMatchObject({ n: 1, status: "done", changed: false, fired: false, trigger: "schedule" })
    // Nothing changed (the page's clock line moves, which is noise): no notification.
    content.set("/widget", { status: 200, html: content.get("/widget")!.html.replace("10:04:11", "10:09:57").replace("3 minutes", "8 minutes") })
    const quiet = await runNow(id)
    expect(quiet).toMatchObject({ status: "done", changed: false, fired: false, trigger: "run_now" })
    // A change: one signed delivery, with the diff.
    const before = receiver.received.length
    setPage("/widget", "Price: 95 dollars. In stock.")
    const changed = await runNow(id)
    expect(changed).toMatchObject({ status: "done", changed: true, fired: true })
    const delivery = await eventually("the signed delivery", () => receiver.received.slice(before).find((r) => r.headers["webhook-id"] !== undefined))
    const payload = verifiedDelivery(secret, delivery)
    expect(payload.type).toBe("monitor.triggered")
    expect(payload.data).toMatchObject({ monitor_id: id, run_id: changed.id, changed: true })
    expect(payload.data.diff.unified).toContain("-Price: 120 dollars. In stock.")
    expect(payload.data.diff.unified).toContain("+Price: 95 dollars. In stock.")
    // A signature with another secret is refused (the test's verifier is not a rubber stamp).
    expect(() => verifiedDelivery(`whsec_${Buffer.from("x".repeat(32)).toString("base64")}`, delivery)).toThrow()
    // Snapshots, newest first; the baseline is the first one.
    const snapshots = (await service.request("GET", `${monitorPath(id)}/snapshots`)).json.items
    expect(snapshots.map((s: any) => s.n)).toEqual([3, 2, 1])
    expect(snapshots[0].diff.kind).toBe("text")
    const full = await service.request("GET", `${monitorPath(id)}/snapshots/${snapshots[0].id}`)
    expect(full.json.text).toContain("Price: 95 dollars")
    expect(full.json.text).not.toContain("Home | Cart")
    // The monitor's deliveries list the one notification; it went out once.
    const deliveries = (await service.request("GET", `${monitorPath(id)}/deliveries`)).json.items
    expect(deliveries).toHaveLength(1)
    expect(deliveries[0]).toMatchObject({ monitor_id: id, channel: "callback_url", status: "delivered" })
    const monitor = await get(id)
    expect(monitor).toMatchObject({ last_tick_n: 3, consecutive_failures: 0 })
    expect(monitor.notify_secret).toBeUndefined()
  })

  it("ticks on its schedule, stops while paused, and goes on after resume", async () => {
    setPage("/clock", "Always the same.")
    const created = await create({
      intent: "watch a page every second",
      notify_channel: { kind: "console_inbox" },
      schedule: { kind: "interval", interval_seconds: 1 },
      target_urls: [`${pagesUrl}/clock`]
    })
    const id = created.json.id
    await finishedTicks(id, 3)
    const paused = await service.request("PATCH", monitorPath(id), { body: { action: "pause", reason: "holiday" } })
    expect(paused.json).toMatchObject({ status: "paused", status_reason: "holiday" })
    // Let a tick already under way end, then count: nothing new while paused.
    await new Promise((resolve) => setTimeout(resolve, 1_200))
    const atPause = (await ticks(id)).length
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect((await ticks(id)).length).toBe(atPause)
    // Pausing twice is a conflict; resume goes on ticking.
    expect((await service.request("PATCH", monitorPath(id), { body: { action: "pause" } })).status).toBe(409)
    const resumed = await service.request("PATCH", monitorPath(id), { body: { action: "resume" } })
    expect(resumed.json.status).toBe("active")
    await eventually("ticks after resume", async () => (await ticks(id)).length >= atPause + 2 ? true : undefined, { timeoutMs: 15_000 })
    // Cancel ends it: no more ticks, and run_now is refused.
    const canceled = await service.request("PATCH", monitorPath(id), { body: { action: "cancel" } })
    expect(canceled.json.status).toBe("canceled")
    expect((await service.request("POST", `${monitorPath(id)}/run_now`)).status).toBe(409)
  })

  it("fires a field rule on extracted JSON, not on other changes", async () => {
    setPage("/price", "Price: 120 dollars.")
    const created = await create({
      intent: "Tell me when the price drops below 100",
      notify_channel: { kind: "console_inbox" },
      schedule: { kind: "interval", interval_seconds: 3600 },
      target_urls: [`${pagesUrl}/price`],
      extraction_schema: { type: "object", properties: { price: { type: ["number", "null"] } }, required: ["price"] },
      trigger_dsl: { field: "price", op: "<", value: 100 }
    })
    expect(created.status).toBe(201)
    const id = created.json.id
    const [baseline] = await finishedTicks(id, 1)
    expect(baseline).toMatchObject({ status: "done", fired: false })
    expect((await get(id)).baseline_extracted).toEqual({ price: 120 })
    setPage("/price", "Price: 110 dollars.")
    expect(await runNow(id)).toMatchObject({ changed: true, fired: false })
    setPage("/price", "Price: 90 dollars.")
    const fired = await runNow(id)
    expect(fired).toMatchObject({ changed: true, fired: true })
    const snapshot = (await service.request("GET", `${monitorPath(id)}/snapshots/${fired.snapshot_id}`)).json
    expect(snapshot.extracted).toEqual({ price: 90 })
    expect(snapshot.diff).toEqual({ kind: "json", changes: [{ op: "changed", path: "/price", old: 110, new: 90 }] })
    // The console inbox holds the one notification.
    const inbox = (await service.request("GET", `/v1/projects/${service.projectId}/inbox`)).json.items.filter((n: any) => n.monitor_id === id)
    expect(inbox).toHaveLength(1)
    expect(inbox[0]).toMatchObject({ tick_id: fired.id, type: "monitor.triggered", read: false })
  })

  it("completes when its stop condition is met, and its event stream ends there", async () => {
    setPage("/stop", "Counting.")
    const created = await create({
      intent: "watch twice then stop",
      notify_channel: { kind: "console_inbox" },
      schedule: { kind: "interval", interval_seconds: 3600 },
      target_urls: [`${pagesUrl}/stop`],
      stop_condition_dsl: { max_ticks: 2 }
    })
    const id = created.json.id
    await finishedTicks(id, 1)
    await runNow(id)
    const monitor = await eventually("completed", async () => {
      const m = await get(id)
      return m.status === "completed" ? m : undefined
    })
    expect(monitor.status_reason).toBe("stop_condition_met")
    const stream = await readSse(`${service.url}${monitorPath(id)}/events`, { authorization: `Bearer ${service.apiKey}` }, { timeoutMs: 10_000 })
    expect(stream.ended).toBe(true)
    const types = stream.events.map((event) => event.event)
    expect(types[0]).toBe("monitor.created")
    expect(types.filter((type) => type === "monitor.tick.completed")).toHaveLength(2)
    expect(stream.events.at(-1)).toMatchObject({ event: "monitor.status_changed", data: { data: { to: "completed" } } })
    // Replay after Last-Event-ID gives only what follows.
    const replay = await readSse(`${service.url}${monitorPath(id)}/events`, {
      authorization: `Bearer ${service.apiKey}`,
      "last-event-id": String(stream.events.at(-2)!.id)
    }, { timeoutMs: 10_000 })
    expect(replay.events.map((event) => event.id)).toEqual([stream.events.at(-1)!.id])
  })

  it("queues the notification of the tick that meets its stop condition before it completes, so a stream client sees it", async () => {
    setPage("/last", "Price: 10 dollars.")
    const created = await create({
      intent: "watch the price until the second tick",
      notify_channel: { kind: "callback_url", url: `${receiver.url}/last` },
      schedule: { kind: "interval", interval_seconds: 3600 },
      target_urls: [`${pagesUrl}/last`],
      stop_condition_dsl: { max_ticks: 2 }
    })
    const id = created.json.id
    const secret = created.json.notify_secret
    await finishedTicks(id, 1)
    // A client follows the monitor's events from the start, while the last tick runs, to the stream's end.
    const following = readSse(`${service.url}${monitorPath(id)}/events`, { authorization: `Bearer ${service.apiKey}` }, { timeoutMs: 30_000 })
    setPage("/last", "Price: 8 dollars.")
    const last = await runNow(id)
    expect(last).toMatchObject({ n: 2, status: "done", changed: true, fired: true })
    const stream = await following
    expect(stream.ended).toBe(true)
    const events = stream.events.filter((event) => event.event !== "stream.heartbeat")
    const types = events.map((event) => event.event)
    // The last tick's events: its change, its end, its notification, and the completion last.
    expect(types.slice(-4)).toEqual(["monitor.change_detected", "monitor.tick.completed", "monitor.notification.queued", "monitor.status_changed"])
    expect(events.at(-1)).toMatchObject({ data: { data: { to: "completed", reason: "stop_condition_met" } } })
    const queued = events.at(-2)!.data.data
    expect(queued).toMatchObject({ run_id: last.id, channel: "callback_url" })
    // The one notification of the monitor is the one the event names, delivered once.
    const delivery = await eventually("the delivery", async () => {
      const items = (await service.request("GET", `${monitorPath(id)}/deliveries`)).json.items
      return items[0]?.status === "delivered" ? items : undefined
    }, { timeoutMs: 20_000 })
    expect(delivery.map((item: any) => item.id)).toEqual([queued.delivery_id])
    const mine = receiver.received.filter((entry) => entry.body.includes(id))
    expect(mine.map((entry) => entry.headers["webhook-id"])).toEqual([queued.delivery_id])
    expect(verifiedDelivery(secret, mine[0]!).data).toMatchObject({ monitor_id: id, run_id: last.id, changed: true })
    // A stream read after the end replays the same events, and ends at the same place.
    const replay = await readSse(`${service.url}${monitorPath(id)}/events`, { authorization: `Bearer ${service.apiKey}` }, { timeoutMs: 10_000 })
    expect(replay.ended).toBe(true)
    expect(replay.events.filter((event) => event.id !== undefined).map((event) => event.id)).toEqual(events.map((event) => event.id))
  })

  it("becomes failing after consecutive failed ticks, and heals on a good one", async () => {
    setPage("/flaky", "Down.", 500)
    const created = await create({
      intent: "watch a flaky page",
      notify_channel: { kind: "console_inbox" },
      schedule: { kind: "interval", interval_seconds: 3600 },
      target_urls: [`${pagesUrl}/flaky`]
    })
    const id = created.json.id
    const [first] = await finishedTicks(id, 1)
    expect(first).toMatchObject({ status: "failed", error: { code: "fetch_failed" } })
    expect(first.pages[0]).toMatchObject({ ok: false })
    await runNow(id)
    const failing = await get(id)
    expect(failing).toMatchObject({ status: "failing", consecutive_failures: 2 })
    expect(failing.status_reason).toContain("2 consecutive ticks failed")
    setPage("/flaky", "Up again.")
    expect(await runNow(id)).toMatchObject({ status: "done" })
    expect(await get(id)).toMatchObject({ status: "active", consecutive_failures: 0 })
  })

  it("retries a delivery the receiver refused twice", async () => {
    setPage("/retry", "Version 1.")
    const created = await create({
      intent: "watch the retry page",
      notify_channel: { kind: "callback_url", url: `${receiver.url}/retry` },
      schedule: { kind: "interval", interval_seconds: 3600 },
      target_urls: [`${pagesUrl}/retry`]
    })
    const id = created.json.id
    await finishedTicks(id, 1)
    receiver.refuseNext(2)
    const before = receiver.received.length
    setPage("/retry", "Version 2.")
    const tick = await runNow(id)
    expect(tick.fired).toBe(true)
    const delivery = await eventually("the delivery after two refusals", async () => {
      const items = (await service.request("GET", `${monitorPath(id)}/deliveries`)).json.items
      return items[0]?.status === "delivered" ? items[0] : undefined
    }, { timeoutMs: 20_000 })
    expect(delivery.attempts).toBe(3)
    expect(receiver.refusalsLeft()).toBe(0)
    const mine = receiver.received.slice(before).filter((r) => r.headers["webhook-id"] === delivery.id)
    expect(mine).toHaveLength(1)
    expect(verifiedDelivery(created.json.notify_secret, mine[0]!).data.run_id).toBe(tick.id)
    // Each attempt shows on the monitor's event stream.
    const stream = await readSse(`${service.url}${monitorPath(id)}/events`, { authorization: `Bearer ${service.apiKey}` }, {
      timeoutMs: 10_000,
      stopAfter: (events) => events.some((event) => event.event === "monitor.delivery.succeeded")
    })
    const attempts = stream.events.filter((event) => event.event.startsWith("monitor.delivery.")).map((event) => [event.event, event.data.data.attempts])
    expect(attempts).toEqual([["monitor.delivery.failed", 1], ["monitor.delivery.failed", 2], ["monitor.delivery.succeeded", 3]])
  })
})

describe("search-only monitors", () => {
  it("snapshot the result set of a search of the intent and fire when it changes", async () => {
    const created = await create({
      intent: "new widget reviews",
      notify_channel: { kind: "console_inbox" },
      schedule: { kind: "interval", interval_seconds: 3600 }
    })
    expect(created.status).toBe(201)
    const id = created.json.id
    const [baseline] = await finishedTicks(id, 1)
    expect(baseline).toMatchObject({ status: "done", changed: false })
    expect((await get(id)).baseline_extracted).toEqual({ results: [{ title: "Widget review", url: "https://reviews.example/widget" }] })
    searchHits = [...searchHits, { title: "Second widget review", url: "https://blog.example/widget-2", snippet: "Another" }]
    const changed = await runNow(id)
    expect(changed).toMatchObject({ status: "done", changed: true, fired: true })
    const snapshot = (await service.request("GET", `${monitorPath(id)}/snapshots/${changed.snapshot_id}`)).json
    expect(snapshot.diff.kind).toBe("json")
    expect(snapshot.diff.changes).toContainEqual({ op: "added", path: "/results/1", new: { title: "Second widget review", url: "https://blog.example/widget-2" } })
  })
})

describe("alignment mode", () => {
  it("asks, takes the answer, configures itself and becomes active", async () => {
    setPage("/aligned", "Widgets available.")
    const created = await create({ intent: "Tell me when widgets sell out", notify_channel: { kind: "console_inbox" } })
    expect(created.status).toBe(201)
    expect(created.json.status).toBe("pending_clarification")
    const id = created.json.id
    const question = await eventually("the supervisor's question", async () => (await get(id)).pending_input_request ?? undefined)
    expect(question.question).toBe("Which page should I watch?")
    // A wrong request id is refused.
    const wrong = await service.request("POST", `${monitorPath(id)}/intervene`, { body: { request_id: "ir_nope", response: "x" } })
    expect(wrong.status).toBe(409)
    expect(wrong.json.code).toBe("monitor_not_in_alignment")
    const answered = await service.request("POST", `${monitorPath(id)}/intervene`, { body: { request_id: question.request_id, response: "the widget page" } })
    expect(answered.status).toBe(200)
    const active = await eventually("active", async () => {
      const m = await get(id)
      return m.status === "active" ? m : undefined
    })
    expect(active).toMatchObject({
      schedule: { kind: "interval", interval_seconds: 3600 },
      target_urls: [`${pagesUrl}/aligned`],
      trigger_dsl: { contains: "sold out" },
      pending_input_request: null
    })
    await finishedTicks(id, 1)
    const stream = await readSse(`${service.url}${monitorPath(id)}/events`, { authorization: `Bearer ${service.apiKey}` }, {
      timeoutMs: 10_000,
      stopAfter: (events) => events.some((event) => event.event === "monitor.tick.completed")
    })
    const types = stream.events.map((event) => event.event)
    expect(types).toEqual(expect.arrayContaining(["alignment.input_request", "alignment.answered", "alignment.completed", "monitor.tick.completed"]))
    // Messages and interventions to a monitor that is not aligning: 409.
    const late = await service.request("POST", `${monitorPath(id)}/messages`, { body: { content: "one more thing" } })
    expect(late.status).toBe(409)
    expect(late.json.code).toBe("monitor_not_in_alignment")
  })

  it("abandon cancels the monitor with user_abandoned_alignment", async () => {
    const created = await create({ intent: "Something vague", notify_channel: { kind: "console_inbox" } })
    const id = created.json.id
    const question = await eventually("the question", async () => (await get(id)).pending_input_request ?? undefined)
    const abandoned = await service.request("POST", `${monitorPath(id)}/intervene`, { body: { request_id: question.request_id, kind: "abandon" } })
    expect(abandoned.json).toMatchObject({ status: "canceled", status_reason: "user_abandoned_alignment" })
    const again = await service.request("POST", `${monitorPath(id)}/intervene`, { body: { request_id: question.request_id, kind: "answer", response: "x" } })
    expect(again.status).toBe(409)
  })
})

describe("the contract", () => {
  it("refuses bad requests with the field named, and creates nothing", async () => {
    const base = { intent: "watch it", notify_channel: { kind: "console_inbox" }, schedule: { kind: "interval", interval_seconds: 60 } }
    const totalBefore = (await service.request("GET", `/v1/projects/${service.projectId}/track/monitors`)).json.total
    const cases: Array<[unknown, ReadonlyArray<string | number>]> = [
      [{ ...base, surprise: 1 }, ["body", "surprise"]],
      [{ ...base, intent: "abc" }, ["body", "intent"]],
      [{ ...base, notify_channel: { kind: "callback_url" } }, ["body", "notify_channel", "url"]],
      [{ ...base, notify_channel: { kind: "global_webhook", webhook_id: "wh_missing" } }, ["body", "notify_channel", "webhook_id"]],
      [{ ...base, notify_channel: { kind: "console_inbox", url: "https://example.com" } }, ["body", "notify_channel", "url"]],
      [{ ...base, target_urls: Array.from({ length: 21 }, (_, i) => `https://example.com/${i}`) }, ["body", "target_urls"]],
      [{ ...base, target_urls: ["ftp://example.com/x"] }, ["body", "target_urls", 0]],
      [{ ...base, trigger_dsl: { all: [{ on: "change" }, { field: "price", op: "~", value: 1 }] } }, ["body", "trigger_dsl", "all", 1, "op"]],
      [{ ...base, trigger_dsl: { max_ticks: 3 } }, ["body", "trigger_dsl", "max_ticks"]],
      [{ ...base, schedule: { kind: "interval", interval_seconds: 0 } }, ["body", "schedule", "interval_seconds"]],
      [{ ...base, schedule: { kind: "cron", expr: "not a cron" } }, ["body", "schedule", "expr"]],
      [{ ...base, profile_id: "p".repeat(37) }, ["body", "profile_id"]]
    ]
    for (const [body, loc] of cases) {
      const response = await create(body)
      expect(response.status, JSON.stringify(body)).toBe(422)
      expect(response.json.code).toBe("validation_error")
      const locs = (response.json.extra.errors as Array<{ loc: Array<string | number> }>).map((error) => error.loc.map(String).join("."))
      expect(locs, JSON.stringify(response.json)).toContain(loc.map(String).join("."))
    }
    // Both cron key spellings work; a PATCH with an unknown action or a bad reason is 422.
    const cron = await create({ ...base, schedule: { kind: "cron", cron: "0 9 * * *", tz: "Europe/Berlin" } })
    expect(cron.status).toBe(201)
    expect(cron.json.schedule).toEqual({ kind: "cron", expr: "0 9 * * *", tz: "Europe/Berlin" })
    expect((await service.request("PATCH", monitorPath(cron.json.id), { body: { action: "explode" } })).status).toBe(422)
    expect((await service.request("PATCH", monitorPath(cron.json.id), { body: { action: "pause", reason: "r".repeat(201) } })).status).toBe(422)
    expect((await service.request("PATCH", monitorPath(cron.json.id), { body: { action: "refine" } })).status).toBe(422)
    const totalAfter = (await service.request("GET", `/v1/projects/${service.projectId}/track/monitors`)).json.total
    expect(totalAfter).toBe(totalBefore + 1)
  })

  it("lists with page, page_size, has_more and total; refines; deletes; 404s", async () => {
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      ids.push((await create({ intent: `list me ${i}`, notify_channel: { kind: "console_inbox" }, schedule: { kind: "interval", interval_seconds: 3600 }, target_urls: [`${pagesUrl}/none`] })).json.id)
    }
    const first = (await service.request("GET", `/v1/projects/${service.projectId}/track/monitors?page=1&page_size=2`)).json
    expect(first).toMatchObject({ page: 1, page_size: 2, has_more: true })
    expect(first.items).toHaveLength(2)
    expect(first.items[0].id).toBe(ids[2])
    const refined = await service.request("PATCH", monitorPath(ids[0]!), {
      body: { action: "refine", patch: { intent: "list me, refined", schedule: { kind: "interval", interval_seconds: 7200 } } }
    })
    expect(refined.json).toMatchObject({ intent_text: "list me, refined", schedule: { kind: "interval", interval_seconds: 7200 } })
    const badRefine = await service.request("PATCH", monitorPath(ids[0]!), { body: { action: "refine", patch: { stop_condition_dsl: { until: "tomorrow" } } } })
    expect(badRefine.status).toBe(422)
    expect((await service.request("DELETE", monitorPath(ids[1]!))).status).toBe(204)
    expect((await service.request("GET", monitorPath(ids[1]!))).json.code).toBe("monitor_not_found")
    expect((await service.request("GET", `${monitorPath(ids[0]!)}/runs/tick_01aaaaaaaaaaaaaaaaaaaaaaaa`)).json.code).toBe("run_not_found")
    expect((await service.request("GET", `${monitorPath(ids[0]!)}/snapshots/snap_01aaaaaaaaaaaaaaaaaaaaaaaa`)).json.code).toBe("snapshot_not_found")
  })

  it("a keyed run_now whose process died after its commit is found by its retry: the same tick, not a second one", async () => {
    setPage("/keyed", "Keyed page.")
    const created = await create({ intent: "keyed run_now", notify_channel: { kind: "console_inbox" }, schedule: { kind: "interval", interval_seconds: 3600 }, target_urls: [`${pagesUrl}/keyed`] })
    expect(created.status, created.text).toBe(201)
    const id = created.json.id
    await finishedTicks(id, 1)
    const headers = { "idempotency-key": randomUUID() }
    const send = () => service.request("POST", `${monitorPath(id)}/run_now`, { headers })
    const first = await send()
    expect(first.status, first.text).toBe(202)
    const db = await embeddedDatabaseClient(service.dataDir)
    try {
      // As the process that died between the tick's commit and keeping its answer left it: an
      // expired claim with no response, only the tick recorded in the create's transaction.
      const left = await db.query(
        "UPDATE idempotency_records SET status = NULL, response_headers = NULL, response_body = NULL, locked_until = now() - interval '1 second' WHERE idempotency_key = $1 RETURNING resource_id",
        [headers["idempotency-key"]]
      )
      expect(left.rows[0]?.resource_id, "the tick's transaction recorded it on the claim").toBe(first.json.id)
      const retried = await send()
      expect(retried.status, retried.text).toBe(202)
      expect(retried.headers.get("idempotent-replayed")).toBeNull()
      expect(retried.json.id).toBe(first.json.id)
      const replay = await send()
      expect(replay.headers.get("idempotent-replayed")).toBe("true")
      expect(replay.json.id).toBe(first.json.id)
      const { rows } = await db.query("SELECT count(*)::int AS n FROM runs WHERE kind = 'track_tick' AND request->>'monitor_id' = $1 AND request->>'trigger' = 'run_now'", [id])
      expect(rows[0].n).toBe(1)
    } finally {
      await db.end()
    }
    // The tick was executed once.
    const [tick] = await finishedTicks(id, 2)
    expect(tick).toMatchObject({ id: first.json.id, trigger: "run_now", status: "done" })
  })

  it("Convention B creates the same monitor under /api/v1/.../track/tracks", async () => {
    setPage("/flat", "Flat page.")
    const created = await service.request("POST", `/api/v1/projects/${service.projectId}/track/tracks`, {
      body: { intent: "flat convention", notify_channel: { kind: "console_inbox" }, schedule: { kind: "interval", interval_seconds: 3600 }, target_urls: [`${pagesUrl}/flat`] }
    })
    expect(created.status).toBe(201)
    const id = created.json.id
    const flat = await service.request("GET", `/api/v1/projects/${service.projectId}/track/tracks/${id}`)
    expect(flat.json).toMatchObject({ id, status: "active" })
    expect((await get(id)).id).toBe(id)
    const stream = await readSse(`${service.url}/api/v1/projects/${service.projectId}/track/tracks/${id}/events`, { authorization: `Bearer ${service.apiKey}` }, {
      timeoutMs: 10_000,
      stopAfter: (events) => events.some((event) => event.event === "monitor.tick.completed")
    })
    expect(stream.status).toBe(200)
    expect(stream.events[0]!.event).toBe("monitor.created")
  })
})
