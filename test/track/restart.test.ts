/**
 * Track across a restart of the all-in-one service (embedded PostgreSQL, same data dir): a monitor
 * on a 2 s interval ticks, the service goes down (SIGTERM, then in a second case SIGKILL in the
 * middle of a tick) for longer than three slots while its page changes, and comes back.
 *
 * What must hold (spec "Schedules": durable, catch up once after downtime):
 * - every scheduled tick's slot_at lies on the monitor's slot grid (anchor + k * interval) and no
 *   slot appears twice;
 * - up to the stop no slot was skipped; the slots missed while down (three or more) are fired as
 *   ONE catch-up tick (for the first missed slot), then the ticks go on at the regular slots after
 *   the restart, again without skipping one;
 * - every tick ends (a tick cut off by the kill is taken up again after the restart);
 * - the change made while the service was down fires one tick, whose signed notification is
 *   received exactly once.
 */
import { createServer, type Server } from "node:http"
import { rmSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { listenOnLoopback } from "../support/listen.ts"
import { startWebhookReceiver, verifiedDelivery, type WebhookReceiver } from "../support/webhook-receiver.ts"
import { eventually } from "../support/runs.ts"
import { newDataDir, type Service, startService } from "../support/service.ts"

const INTERVAL_MS = 2_000
/** The service stays down this long: three slots at least are missed. */
const DOWN_MS = 7_000

let pages: Server
let pagesUrl: string
let receiver: WebhookReceiver
const content = new Map<string, string>()
/** Page requests the server has not answered yet (a tick reading the page). */
const pending = new Set<string>()
/** Page requests whose client went away before the answer (its process was killed mid-tick). */
const aborted: Array<string> = []
/** Milliseconds the page server waits before answering: a tick takes a while, so a kill can cut one off. */
let pageDelayMs = 0

const dataDir = newDataDir()
let service: Service | undefined
let credentials: { projectId: string; apiKey: string } | undefined

const env = {
  WA_ALLOW_PRIVATE_NETWORKS: "true",
  WA_SCHEDULE_MIN_INTERVAL_SECONDS: "1",
  WA_SCHEDULER_POLL_MS: "100",
  WA_WEBHOOK_RETRY_BASE_MS: "100",
  WA_DRAIN_SECONDS: "1",
  // The test polls its monitors; the per-key limit is tested elsewhere.
  WA_RATE_LIMIT_REQUESTS: "100000"
}

const html = (text: string) =>
  `<!doctype html><html><head><title>Stock</title></head><body><main><h1>Widget</h1><p>${text}</p></main></body></html>`

const start = async () => {
  service = await startService({ dataDir, env, ...(credentials === undefined ? {} : { credentials }) })
  credentials = { projectId: service.projectId, apiKey: service.apiKey }
  return service
}

const monitorPath = (id: string) => `/v1/projects/${credentials!.projectId}/track/monitors/${id}`
const ticks = async (id: string): Promise<Array<any>> => {
  const response = await service!.request("GET", `${monitorPath(id)}/runs?limit=100`)
  expect(response.status, response.text).toBe(200)
  return response.json.items
}
const scheduled = (all: Array<any>) =>
  all.filter((tick) => tick.trigger === "schedule").sort((x, y) => Date.parse(x.slot_at) - Date.parse(y.slot_at))

beforeAll(async () => {
  pages = createServer((request, response) => {
    const url = request.url ?? "/"
    const key = `${url}#${Math.random()}`
    pending.add(key)
    response.on("close", () => {
      if (pending.delete(key) && !response.writableFinished) aborted.push(url)
    })
    setTimeout(() => {
      if (response.destroyed) return
      const text = content.get(url)
      response.writeHead(text === undefined ? 404 : 200, { "content-type": "text/html; charset=utf-8" })
      response.end(text === undefined ? "not found" : html(text))
    }, pageDelayMs)
  })
  pagesUrl = (await listenOnLoopback(pages)).url
  receiver = await startWebhookReceiver()
  await start()
})

afterAll(async () => {
  await service?.stop()
  rmSync(dataDir, { recursive: true, force: true })
  await new Promise((resolve) => pages?.close(resolve))
  await receiver?.close()
})

/**
 * Creates a monitor on `path`, lets it tick three times, takes the service down with `down`, changes the page, waits DOWN_MS and starts the service again; then waits
 * for three regular ticks after the restart and checks the schedule, the ends of the ticks and the
 * notification.
 */
const acrossRestart = async (path: string, down: (service: Service) => Promise<void>) => {
  content.set(path, "In stock.")
  const created = await service!.request("POST", `/v1/projects/${credentials!.projectId}/track/monitors`, {
    body: {
      intent: "Tell me when the widget's stock changes",
      notify_channel: { kind: "callback_url", url: `${receiver.url}${path}` },
      schedule: { kind: "interval", interval_seconds: INTERVAL_MS / 1000 },
      target_urls: [`${pagesUrl}${path}`]
    }
  })
  expect(created.status, created.text).toBe(201)
  const id = created.json.id as string
  const secret = created.json.notify_secret as string
  await eventually("three finished ticks before the stop", async () =>
    (await ticks(id)).filter((tick) => tick.status === "done").length >= 3 ? true : undefined, { timeoutMs: 30_000 })
  await down(service!)
  // The service is down from here: nothing it fires can be due later than this.
  const downAt = Date.now()
  content.set(path, "Sold out.")
  await new Promise((resolve) => setTimeout(resolve, DOWN_MS))
  const restartAt = Date.now()
  await start()

  // Three regular slots after the restart, and every tick ended.
  const all = await eventually("three regular ticks after the restart, and no tick under way", async () => {
    const list = await ticks(id)
    const after = scheduled(list).filter((tick) => Date.parse(tick.slot_at) > restartAt && tick.status === "done")
    return after.length >= 3 && list.every((tick) => tick.status !== "running") ? list : undefined
  }, { timeoutMs: 45_000 })
  const ordered = scheduled(all)
  const slots = ordered.map((tick) => Date.parse(tick.slot_at))
  const slotList = slots.map((slot) => new Date(slot).toISOString()).join(", ")

  // No slot twice; every slot on the grid anchored at the first (the create's instant).
  expect(new Set(slots).size).toBe(slots.length)
  for (const slot of slots) expect((slot - slots[0]!) % INTERVAL_MS, `slot ${new Date(slot).toISOString()} off the grid of ${slotList}`).toBe(0)
  // One gap from the stop on: the slots between the catch-up tick and the first regular slot
  // after the restart were not fired. Before the stop, a slot that came while the previous tick
  // still ran is skipped (a tick can overrun a 2 s interval on a loaded machine); those gaps lie
  // between two ticks both fired before the stop. Everywhere else, consecutive slots.
  const allGaps = slots.slice(1).map((slot, i) => ({ at: i, size: slot - slots[i]! })).filter((gap) => gap.size !== INTERVAL_MS)
  const gaps = allGaps.filter((gap) => Date.parse(ordered[gap.at + 1].created_at) >= downAt)
  expect(gaps, `slots: ${slotList}`).toHaveLength(1)
  const catchUp = ordered[gaps[0]!.at]
  const firstRegular = ordered[gaps[0]!.at + 1]
  // The catch-up tick is for a slot that passed while the service was down, fired by the restarted
  // service; it is the only such tick.
  expect(Date.parse(catchUp.slot_at)).toBeLessThan(restartAt)
  expect(Date.parse(catchUp.created_at)).toBeGreaterThanOrEqual(restartAt)
  expect(ordered.filter((tick) => Date.parse(tick.slot_at) < restartAt && Date.parse(tick.created_at) >= restartAt)).toHaveLength(1)
  // The service missed three slots or more (the catch-up's and at least two skipped after it), and
  // the first regular slot after the catch-up is after the restart.
  expect(gaps[0]!.size / INTERVAL_MS - 1, `slots: ${slotList}`).toBeGreaterThanOrEqual(2)
  expect(Date.parse(firstRegular.slot_at)).toBeGreaterThan(restartAt)
  // The catch-up slot is the first one after the last slot fired before the stop.
  expect(Date.parse(ordered[gaps[0]!.at - 1].created_at)).toBeLessThan(downAt)

  // Every tick ended well, each with its own number.
  expect(all.map((tick) => tick.status)).toEqual(all.map(() => "done"))
  const numbers = all.map((tick) => tick.n).sort((x, y) => x - y)
  expect(numbers).toEqual(numbers.map((_, i) => i + 1))
  // The change made while down fired one tick (the first to read the page after the restart) ...
  const fired = all.filter((tick) => tick.fired === true)
  expect(fired).toHaveLength(1)
  expect(Date.parse(fired[0].finished_at)).toBeGreaterThanOrEqual(restartAt)
  // ... whose signed notification arrived exactly once (three ticks later, nothing more came).
  const delivery = await eventually("the notification", async () => {
    const ours = receiver.received.filter((entry) => entry.body.includes(id))
    return ours.length > 0 ? ours : undefined
  })
  const payloads = receiver.received.filter((entry) => entry.body.includes(id)).map((entry) => ({ id: entry.headers["webhook-id"], payload: verifiedDelivery(secret, entry) }))
  expect(payloads, `deliveries: ${delivery.length}`).toHaveLength(1)
  expect(payloads[0]!.payload.type).toBe("monitor.triggered")
  expect(payloads[0]!.payload.data).toMatchObject({ monitor_id: id, run_id: fired[0].id, changed: true })
  expect(payloads[0]!.payload.data.diff.unified).toContain("+Sold out.")
  const deliveries = (await service!.request("GET", `${monitorPath(id)}/deliveries`)).json.items
  expect(deliveries).toHaveLength(1)
  expect(deliveries[0]).toMatchObject({ status: "delivered" })
  // The next case starts with a quiet service.
  expect((await service!.request("PATCH", monitorPath(id), { body: { action: "cancel" } })).json.status).toBe("canceled")
  return { id, all }
}

describe("a monitor across a restart of the service", () => {
  it("after a graceful stop (SIGTERM) it ticks once to catch up, then on its regular slots, and notifies once", async () => {
    await acrossRestart("/graceful", (node) => node.stop())
  }, 90_000)

  it("after a crash (SIGKILL) in the middle of a tick, that tick ends after the restart, and the catch-up is still one tick", async () => {
    const kill = async (node: Service) => {
      // Ticks take a while now: kill while one reads the page.
      pageDelayMs = 1_500
      await eventually("a tick reading the page", async () => [...pending].some((key) => key.startsWith("/crash#")) ? true : undefined, { timeoutMs: 15_000 })
      await node.kill()
      pageDelayMs = 0
    }
    const { all } = await acrossRestart("/crash", kill)
    // The page server saw the killed process give up a read: a tick was under way when it died ...
    expect(aborted).toContain("/crash")
    // ... and it was taken up again after the restart (a tick that started before the kill and
    // ended after it), like every other tick.
    expect(all.some((tick) => Date.parse(tick.finished_at) - Date.parse(tick.started_at) >= DOWN_MS)).toBe(true)
  }, 90_000)
})
