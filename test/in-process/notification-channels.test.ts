/**
 * NotificationChannels.notify on its three channels, in-process: the real NotificationChannels,
 * WebhookEndpoints, Inbox and Callbacks (its dispatcher included) on a database of this file, and
 * a loopback receiver that verifies every request's signature with the `standardwebhooks` library.
 *
 * - callback_url: signed with the monitor's secret (not the project's), recorded with the monitor,
 *   the channel and the tick as run_id;
 * - global_webhook: signed with the endpoint's secret; an endpoint that does not exist gives a
 *   failed delivery saying so, which cannot be retried;
 * - console_inbox: an inbox notification and a delivery recorded as delivered, nothing sent;
 * - concurrent notify calls for one tick record one delivery, send one request; another tick is another;
 * - every body sent is a `monitor.triggered` body of the OpenAPI document's webhooks section;
 * - a receiver that fails twice gets the delivery on the third attempt, same id and signature scheme;
 * - schedule: the notification queues an event firing and wakes the scheduler, which dispatches it
 *   at once although its poll is a minute here.
 */
import { assert, expect, layer } from "@effect/vitest"
import { Context, Deferred, Duration, Effect, Layer, References } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"
import { Webhook } from "standardwebhooks"
import { Projects } from "../../src/auth/projects.ts"
import { AppConfig } from "../../src/config/config.ts"
import { makeId } from "../../src/domain/ids.ts"
import type { ProjectId } from "../../src/domain/run.ts"
import type { DeliveryId } from "../../src/domain/id-schemas.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { Schedules } from "../../src/schedules/schedules.ts"
import { SESSION_SCHEDULE_OWNER } from "../../src/do-anything/schedules.ts"
import { Callbacks, type DeliveryRow } from "../../src/webhooks/callbacks.ts"
import { Inbox } from "../../src/webhooks/inbox.ts"
import { NotificationChannels, NotificationChannelsLive } from "../../src/webhooks/notification-channels.ts"
import { newWebhookSecret, WebhookEndpoints } from "../../src/webhooks/webhook-endpoints.ts"
import { SqlClient } from "effect/sql"
import type { MonitorTriggeredData, WebhookMessage } from "../../src/domain/wire/webhook-payloads.ts"
import { checkWebhookDelivery } from "../support/webhook-receiver.ts"

interface Received {
  readonly headers: Record<string, string>
  readonly body: string
}

/** A loopback receiver: requests by path; each path answers with its scripted statuses, then 204. */
const startReceiver = () =>
  new Promise<{ url: string; byPath: Map<string, Array<Received>>; script: (p: string, statuses: Array<number>) => void; close: () => Promise<void> }>((resolve) => {
    const byPath = new Map<string, Array<Received>>()
    const scripts = new Map<string, Array<number>>()
    const server: Server = createServer((req, res) => {
      let body = ""
      req.on("data", (chunk) => (body += chunk))
      req.on("end", () => {
        const p = req.url ?? "/"
        const list = byPath.get(p) ?? []
        list.push({ headers: req.headers as Record<string, string>, body })
        byPath.set(p, list)
        res.writeHead(scripts.get(p)?.shift() ?? 204).end()
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        byPath,
        script: (p, statuses) => void scripts.set(p, statuses),
        close: () => new Promise<void>((done) => server.close(() => done()))
      }))
  })

class Env extends Context.Service<Env, {
  readonly receiver: Awaited<ReturnType<typeof startReceiver>>
  readonly projectId: ProjectId
  readonly projectSecret: string
}>()("test/notification-channels/Env") {}


/** A database of this file on the tier's PostgreSQL, and the configuration pointing at it. */
const ConfigLive = Layer.unwrap(Effect.gen(function*() {
  const url = new URL(yield* freshDatabase())
  const dataDir = yield* freshDataDir("wa-notify")
  return AppConfig.layerFrom({
    DATABASE_URL: url.toString(),
    WA_DATA_DIR: dataDir,
    // The receiver is on loopback; retries come quickly.
    WA_ALLOW_PRIVATE_NETWORKS: "true",
    WA_WEBHOOK_RETRY_BASE_MS: "50",
    WA_LOG_LEVEL: "Warn"
  })
}))

const EnvLive = Layer.effect(
  Env,
  Effect.gen(function*() {
    const receiver = yield* Effect.acquireRelease(Effect.promise(startReceiver), (r) => Effect.promise(() => r.close()))
    const project = yield* Projects.use((projects) => projects.create("notification-channels"))
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ webhook_secret: string }>`SELECT webhook_secret FROM projects WHERE id = ${project.id}`
    return Env.of({ receiver, projectId: project.id, projectSecret: row!.webhook_secret })
  }).pipe(Effect.orDie)
)

// A scheduler that looks for due work once a minute only: a firing dispatched sooner was woken.
const SchedulesLive = Layer.effect(Schedules, Schedules.make({ pollMs: 60_000 }))

const TestLayer = EnvLive.pipe(
  Layer.provideMerge(NotificationChannelsLive),
  Layer.provideMerge(SchedulesLive),
  Layer.provideMerge(Layer.mergeAll(Callbacks.layer, Projects.layer)),
  Layer.provideMerge(databaseLayer("own")),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
  Layer.provideMerge(ConfigLive)
)

/** The delivery, once `done` holds for it (the dispatcher works on its own; re-read until then). */
const awaitDelivery = (projectId: ProjectId, id: DeliveryId, done: (row: DeliveryRow) => boolean) =>
  Effect.gen(function*() {
    const callbacks = yield* Callbacks
    while (true) {
      const row = yield* callbacks.find(projectId, id)
      if (row !== undefined && done(row)) return row
      yield* Effect.sleep("20 millis")
    }
  })

/** The body, held to the document's webhooks section, if its signature is valid for `secret`. */
const verify = (secret: string, received: Received) => {
  expect(checkWebhookDelivery(received.headers, received.body).problems).toEqual([])
  return new Webhook(secret).verify(received.body, {
    "webhook-id": received.headers["webhook-id"]!,
    "webhook-timestamp": received.headers["webhook-timestamp"]!,
    "webhook-signature": received.headers["webhook-signature"]!
  })
}

const ids = () => ({ monitorId: makeId("mon"), tickId: makeId("tick") })

/** A tick's notification, as Track sends it (src/track/tick.ts notificationData). */
const triggered = (monitorId: string, tickId: string, data: Partial<MonitorTriggeredData> = {}): WebhookMessage<"monitor.triggered"> => ({
  type: "monitor.triggered",
  data: {
    monitor_id: monitorId, run_id: tickId, tick_n: 2, intent: "Tell me when the price drops", snapshot_id: makeId("snap"), changed: true,
    extracted: { price: 99 }, diff: { kind: "json", changes: [{ op: "changed", path: "/price", old: 120, new: 99 }] },
    target_urls: ["https://example.com/product"], fetched_at: new Date().toISOString(),
    ...data
  }
})

layer(TestLayer, { excludeTestServices: true })("NotificationChannels", (it) => {
  it.effect("callback_url: a POST to the URL signed with the monitor's secret, recorded with monitor, channel and tick", () =>
    Effect.gen(function*() {
      const { receiver, projectId, projectSecret } = yield* Env
      const channels = yield* NotificationChannels
      const { monitorId, tickId } = ids()
      const secret = newWebhookSecret()
      const message = triggered(monitorId, tickId)
      const { deliveryId } = yield* channels.notify({
        projectId, monitorId, tickId, secret, message,
        channel: { kind: "callback_url", url: `${receiver.url}/callback`, webhook_id: null }
      })
      assert(deliveryId !== null)
      const row = yield* awaitDelivery(projectId, deliveryId, (r) => r.status === "delivered")
      expect(row).toMatchObject({ run_id: tickId, monitor_id: monitorId, channel: "callback_url", url: `${receiver.url}/callback`, event_type: "monitor.triggered", attempts: 1 })
      const [received] = receiver.byPath.get("/callback")!
      expect(received!.headers["webhook-id"]).toBe(deliveryId)
      expect(verify(secret, received!)).toMatchObject(message)
      // Signed with the monitor's secret, not the project's.
      expect(() => verify(projectSecret, received!)).toThrow()
    }))

  it.effect("global_webhook: a POST to the endpoint's URL signed with the endpoint's secret", () =>
    Effect.gen(function*() {
      const { receiver, projectId } = yield* Env
      const channels = yield* NotificationChannels
      const { row: endpoint, secret: endpointSecret } = yield* WebhookEndpoints.use((e) =>
        e.create(projectId, { url: `${receiver.url}/global`, description: "ops" })
      ).pipe(Effect.orDie)
      const channel = { kind: "global_webhook" as const, url: null, webhook_id: endpoint.id }
      yield* channels.validateChannel(projectId, channel)
      const { monitorId, tickId } = ids()
      const { deliveryId } = yield* channels.notify({
        projectId, monitorId, tickId, secret: newWebhookSecret(), message: triggered(monitorId, tickId, { tick_n: 1 }), channel
      })
      assert(deliveryId !== null)
      const row = yield* awaitDelivery(projectId, deliveryId, (r) => r.status === "delivered")
      expect(row).toMatchObject({ channel: "global_webhook", monitor_id: monitorId, run_id: tickId, url: `${receiver.url}/global` })
      const [received] = receiver.byPath.get("/global")!
      expect(verify(endpointSecret, received!)).toMatchObject({ type: "monitor.triggered", data: { monitor_id: monitorId, run_id: tickId, tick_n: 1 } })
    }))

  it.effect("global_webhook to an endpoint that does not exist: a failed delivery saying so, not retryable", () =>
    Effect.gen(function*() {
      const { projectId } = yield* Env
      const channels = yield* NotificationChannels
      const callbacks = yield* Callbacks
      const { monitorId, tickId } = ids()
      const missing = makeId("wh")
      const channel = { kind: "global_webhook" as const, url: null, webhook_id: missing }
      const invalid = yield* Effect.flip(channels.validateChannel(projectId, channel))
      expect(invalid).toMatchObject({ _tag: "InvalidField", field: ["notify_channel", "webhook_id"], type: "value_error.webhook_not_found" })

      const { deliveryId } = yield* channels.notify({
        projectId, monitorId, tickId, secret: newWebhookSecret(), message: triggered(monitorId, tickId), channel
      })
      assert(deliveryId !== null)
      const row = yield* callbacks.find(projectId, deliveryId)
      expect(row).toMatchObject({ status: "failed", channel: "global_webhook", attempts: 0, next_attempt_at: null })
      expect(row!.last_error).toContain(`${missing} does not exist`)
      const retried = yield* Effect.flip(callbacks.retry(projectId, deliveryId))
      expect(retried).toMatchObject({ _tag: "DeliveryNotRetryable", status: "failed" })
      expect(retried.reason).toContain("no HTTP target")
    }))

  it.effect("console_inbox: an unread notification and a delivery recorded as delivered; nothing is sent", () =>
    Effect.gen(function*() {
      const { receiver, projectId } = yield* Env
      const channels = yield* NotificationChannels
      const inbox = yield* Inbox
      const callbacks = yield* Callbacks
      const { monitorId, tickId } = ids()
      const before = yield* inbox.unreadCount(projectId)
      const sentBefore = [...receiver.byPath.values()].flat().length
      const { deliveryId } = yield* channels.notify({
        projectId, monitorId, tickId, secret: newWebhookSecret(), message: triggered(monitorId, tickId, { extracted: { price: 99 } }),
        title: "Price dropped to 99", channel: { kind: "console_inbox", url: null, webhook_id: null }
      })
      assert(deliveryId !== null)
      const [notification] = yield* inbox.list(projectId, { limit: 1 })
      expect(notification).toMatchObject({ monitor_id: monitorId, tick_id: tickId, type: "monitor.triggered", title: "Price dropped to 99", data: { monitor_id: monitorId, extracted: { price: 99 } }, read_at: null })
      expect(yield* inbox.unreadCount(projectId)).toBe(before + 1)
      const row = yield* callbacks.find(projectId, deliveryId)
      expect(row).toMatchObject({ status: "delivered", channel: "console_inbox", attempts: 0, url: `/v1/projects/${projectId}/inbox/${notification!.id}` })
      expect(row!.delivered_at).not.toBeNull()
      expect([...receiver.byPath.values()].flat().length).toBe(sentBefore)
      const retried = yield* Effect.flip(callbacks.retry(projectId, deliveryId))
      expect(retried).toMatchObject({ _tag: "DeliveryNotRetryable", status: "delivered" })
    }))

  it.effect("concurrent notify calls for one tick record one delivery per channel and send once", () =>
    Effect.gen(function*() {
      const { receiver, projectId } = yield* Env
      const channels = yield* NotificationChannels
      const callbacks = yield* Callbacks
      const inbox = yield* Inbox
      const { secret: endpointSecret, row: endpoint } = yield* WebhookEndpoints.use((e) =>
        e.create(projectId, { url: `${receiver.url}/once-global`, description: null })
      ).pipe(Effect.orDie)
      const monitorSecret = newWebhookSecret()
      const cases = [
        { kind: "callback_url" as const, url: `${receiver.url}/once-callback`, webhook_id: null, path: "/once-callback", secret: monitorSecret },
        { kind: "global_webhook" as const, url: null, webhook_id: endpoint.id, path: "/once-global", secret: endpointSecret },
        { kind: "console_inbox" as const, url: null, webhook_id: null, path: undefined, secret: undefined }
      ]
      for (const c of cases) {
        const { monitorId, tickId } = ids()
        const results = yield* Effect.forEach(
          Array.from({ length: 8 }, () => undefined),
          () => channels.notify({
            projectId, monitorId, tickId, secret: monitorSecret, message: triggered(monitorId, tickId, { intent: c.kind }),
            channel: { kind: c.kind, url: c.url, webhook_id: c.webhook_id }
          }),
          { concurrency: "unbounded" }
        )
        const deliveryIds = new Set(results.map((r) => r.deliveryId))
        expect(deliveryIds.size).toBe(1)
        const rows = yield* callbacks.list(projectId, { runId: tickId, limit: 100 })
        expect(rows.map((r) => r.id)).toEqual([...deliveryIds])
        // Another tick of the same monitor is another delivery.
        const otherTick = makeId("tick")
        const other = yield* channels.notify({
          projectId, monitorId, tickId: otherTick, secret: monitorSecret, message: triggered(monitorId, otherTick),
          channel: { kind: c.kind, url: c.url, webhook_id: c.webhook_id }
        })
        expect(deliveryIds.has(other.deliveryId)).toBe(false)
        const byMonitor = yield* callbacks.list(projectId, { monitorId, limit: 100 })
        expect(byMonitor.map((r) => r.run_id).sort()).toEqual([tickId, otherTick].sort())
        if (c.path === undefined) {
          const notifications = (yield* inbox.list(projectId, { limit: 100 })).filter((n) => n.monitor_id === monitorId)
          expect(notifications.map((n) => n.tick_id).sort()).toEqual([tickId, otherTick].sort())
        } else {
          yield* awaitDelivery(projectId, [...deliveryIds][0]!, (r) => r.status === "delivered")
          yield* awaitDelivery(projectId, other.deliveryId!, (r) => r.status === "delivered")
          const received = receiver.byPath.get(c.path)!
          expect(received.length).toBe(2)
          for (const r of received) verify(c.secret!, r)
        }
      }
    }))

  it.effect("a delivery the receiver refused twice is delivered on the third attempt", () =>
    Effect.gen(function*() {
      const { receiver, projectId } = yield* Env
      const channels = yield* NotificationChannels
      const { monitorId, tickId } = ids()
      const secret = newWebhookSecret()
      receiver.script("/flaky", [500, 503])
      const { deliveryId } = yield* channels.notify({
        projectId, monitorId, tickId, secret, message: triggered(monitorId, tickId),
        channel: { kind: "callback_url", url: `${receiver.url}/flaky`, webhook_id: null }
      })
      const row = yield* awaitDelivery(projectId, deliveryId!, (r) => r.status === "delivered" || r.status === "failed")
      expect(row).toMatchObject({ status: "delivered", attempts: 3, last_status_code: 204, last_error: null })
      const received = receiver.byPath.get("/flaky")!
      expect(received.length).toBe(3)
      for (const attempt of received) {
        expect(attempt.headers["webhook-id"]).toBe(deliveryId)
        verify(secret, attempt)
      }
    }))

  it.effect("validateChannel: the field matching the kind is required, the other refused", () =>
    Effect.gen(function*() {
      const { projectId } = yield* Env
      const channels = yield* NotificationChannels
      const refused = (channel: Parameters<typeof channels.validateChannel>[1]) => Effect.flip(channels.validateChannel(projectId, channel))
      expect(yield* refused({ kind: "callback_url", url: null, webhook_id: null })).toMatchObject({ field: ["notify_channel", "url"], type: "missing" })
      expect(yield* refused({ kind: "callback_url", url: "ftp://example.com/x", webhook_id: null })).toMatchObject({ field: ["notify_channel", "url"] })
      expect(yield* refused({ kind: "global_webhook", url: null, webhook_id: null })).toMatchObject({ field: ["notify_channel", "webhook_id"], type: "missing" })
      expect(yield* refused({ kind: "console_inbox", url: "https://example.com", webhook_id: null })).toMatchObject({ field: ["notify_channel", "url"] })
      yield* channels.validateChannel(projectId, { kind: "console_inbox", url: null, webhook_id: null })
      yield* channels.validateChannel(projectId, { kind: "callback_url", url: "http://127.0.0.1:9/hook", webhook_id: null })
    }))

  it.effect("schedule: the notification queues an event firing and wakes the scheduler (dispatched at once, not at the next poll)", () =>
    Effect.gen(function*() {
      const { projectId } = yield* Env
      const channels = yield* NotificationChannels
      const schedules = yield* Schedules
      const sql = yield* SqlClient.SqlClient
      const scheduleId = makeId("sched")
      const at = new Date()
      yield* sql`
        INSERT INTO session_schedules (id, project_id, session_id, spec, instructions, request, created_at, updated_at)
        VALUES (${scheduleId}, ${projectId}, ${makeId("sess")}, ${JSON.stringify({ kind: "event", event: null })}::jsonb,
          'React to the change', '{}'::jsonb, ${at}, ${at})`
      yield* schedules.set({ kind: SESSION_SCHEDULE_OWNER, id: scheduleId }, { kind: "event", event: null })
      // Stands in for the session schedules' handler (not built here): records what it is given.
      const fired = yield* Deferred.make<{ ownerId: string; slot: Date }>()
      yield* schedules.register(SESSION_SCHEDULE_OWNER, (ownerId, slot) => Deferred.succeed(fired, { ownerId, slot }).pipe(Effect.asVoid))
      // Registering wakes the loop once; let that pass finish so only the notification can wake it.
      yield* Effect.sleep("200 millis")
      const { monitorId, tickId } = ids()
      const { deliveryId } = yield* channels.notify({
        projectId, monitorId, tickId, secret: newWebhookSecret(), message: triggered(monitorId, tickId),
        channel: { kind: "schedule", schedule_id: scheduleId, url: null, webhook_id: null }
      })
      assert(deliveryId !== null)
      const firing = yield* Deferred.await(fired).pipe(Effect.timeout(Duration.seconds(10)))
      expect(firing.ownerId).toBe(scheduleId)
      const [queued] = yield* sql<{ trigger: string; payload: { monitor_id: string; tick_id: string } }>`
        SELECT trigger, payload FROM session_schedule_firings WHERE schedule_id = ${scheduleId}`
      expect(queued).toMatchObject({ trigger: "event", payload: { monitor_id: monitorId, tick_id: tickId } })
    }).pipe(Effect.scoped))
})
