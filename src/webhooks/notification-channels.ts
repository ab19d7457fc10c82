/**
 * The one entry point through which Track notifies: a monitor's channel is resolved to a
 * delivery in the outbox (src/webhooks/callbacks.ts), recorded once per (tick, type).
 *
 * - `callback_url`: a POST to the monitor's URL, signed with the monitor's `notify_secret`.
 * - `global_webhook`: a POST to the project webhook endpoint's URL, signed with the endpoint's
 *   secret (both copied into the delivery when it is recorded). An endpoint that no longer exists
 *   gives a delivery recorded as `failed` with the reason, its `url` the endpoint's API path.
 * - `console_inbox`: a notification in the project's inbox, and a delivery recorded as
 *   `delivered` whose `url` is the notification's API path (`/v1/projects/{pid}/inbox/{id}`).
 * - `schedule`: triggers a DoAnything schedule of the project with the notification as payload
 *   (once per tick and type), and a delivery recorded as `delivered` whose `url` is the schedule's
 *   firings path; `failed` with the reason when the schedule is gone or paused. The scheduler is
 *   woken, so the firing's run starts now rather than at its next poll.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { MAX_TRIGGER_PAYLOAD_BYTES } from "../domain/limits.ts"
import { queueTrigger, scheduleExists } from "../schedules/session-firings.ts"
import { Schedules } from "../schedules/schedules.ts"
import { AppConfig } from "../config/config.ts"
import { InvalidField } from "../domain/errors.ts"
import { Callbacks } from "./callbacks.ts"
import { Inbox } from "./inbox.ts"
import { validateTargetUrl, WebhookEndpoints } from "./webhook-endpoints.ts"
import type { ProjectId } from "../domain/run.ts"
import type { DeliveryId } from "../domain/id-schemas.ts"
import type { MonitorId, NotifyChannel, TickRunId } from "../domain/monitor.ts"
import type { WebhookMessage } from "../domain/wire/webhook-payloads.ts"

export interface NotifyInput {
  readonly projectId: ProjectId
  readonly monitorId: MonitorId
  /** The fired tick: one notification per (tickId, type). */
  readonly tickId: TickRunId
  /** The monitor's channel as decoded (src/domain/monitor.ts): its endpoint and schedule ids are branded. */
  readonly channel: NotifyChannel
  /** The monitor's notify_secret (whsec_ + base64), which signs `callback_url` deliveries. */
  readonly secret: string
  /**
   * What the channel is told: a `monitor.triggered` body's type and data
   * (src/domain/wire/webhook-payloads.ts), the same on every channel.
   */
  readonly message: WebhookMessage<"monitor.triggered">
  /** The inbox title; default: taken from the type (a `monitor.triggered` body's data has no title). */
  readonly title?: string | undefined
}

const TITLE_MAX = 200

/** "monitor.triggered" → "Triggered". */
const titleOf = (input: NotifyInput): string => {
  if (input.title !== undefined) return input.title.slice(0, TITLE_MAX)
  const { type } = input.message
  const words = (type.split(".").pop() ?? type).replaceAll("_", " ")
  return (words.charAt(0).toUpperCase() + words.slice(1)).slice(0, TITLE_MAX)
}

const invalid = (field: ReadonlyArray<string>, msg: string, type: string) =>
  new InvalidField({ field: ["notify_channel", ...field], detail: `notify_channel: ${msg}`, msg, type })

export class NotificationChannels extends Context.Service<NotificationChannels, {
  /** Records the notification on the channel; idempotent per (tickId, type). */
  readonly notify: (input: NotifyInput) => Effect.Effect<{ readonly deliveryId: DeliveryId | null }>
  /**
   * Checks a channel when a monitor is created or changed: the field that matches the kind is
   * given and the other is not, a callback URL passes the callback_url checks, a webhook endpoint
   * exists in the project. Fails with InvalidField on `notify_channel.<field>` (a 422).
   */
  readonly validateChannel: (projectId: ProjectId, channel: NotifyChannel) => Effect.Effect<void, InvalidField>
  /**
   * Wakes the channels' dispatchers (callback deliveries, schedule firings). `notify` wakes them
   * itself; a `notify` inside a transaction did so before its commit, so its caller calls this after.
   */
  readonly wake: Effect.Effect<void>
}>()("wa/webhooks/NotificationChannels") {
  static readonly layer = Layer.effect(
    NotificationChannels,
    Effect.gen(function*() {
      const callbacks = yield* Callbacks
      const endpoints = yield* WebhookEndpoints
      const inbox = yield* Inbox
      const config = yield* AppConfig
      const sql = yield* SqlClient.SqlClient
      const schedules = yield* Schedules

      const notify = Effect.fn("NotificationChannels.notify")(function*(input: NotifyInput) {
        const { channel } = input
        const base = {
          projectId: input.projectId,
          runId: input.tickId,
          monitorId: input.monitorId,
          channel: channel.kind,
          message: input.message
        }
        switch (channel.kind) {
          case "callback_url": {
            if (channel.url === null) {
              const deliveryId = yield* callbacks.send({
                ...base,
                url: "",
                settled: { status: "failed", error: "the monitor's notify_channel has no url" }
              })
              return { deliveryId }
            }
            const deliveryId = yield* callbacks.send({ ...base, url: channel.url, secret: input.secret })
            return { deliveryId }
          }
          case "global_webhook": {
            const webhookId = channel.webhook_id
            const endpoint = webhookId === null || webhookId === "" ? undefined : yield* endpoints.findWithSecret(input.projectId, webhookId)
            if (endpoint === undefined) {
              const deliveryId = yield* callbacks.send({
                ...base,
                url: `/v1/projects/${input.projectId}/webhooks/${webhookId ?? ""}`,
                settled: { status: "failed", error: `webhook endpoint ${webhookId || "(none)"} does not exist in this project` }
              })
              return { deliveryId }
            }
            const deliveryId = yield* callbacks.send({ ...base, url: endpoint.url, secret: endpoint.secret })
            return { deliveryId }
          }
          case "console_inbox": {
            const notification = yield* inbox.add({
              projectId: input.projectId,
              monitorId: input.monitorId,
              tickId: input.tickId,
              type: input.message.type,
              title: titleOf(input),
              data: input.message.data
            })
            const deliveryId = yield* callbacks.send({
              ...base,
              url: `/v1/projects/${input.projectId}/inbox/${notification.id}`,
              settled: { status: "delivered" }
            })
            return { deliveryId }
          }
          case "schedule": {
            const scheduleId = channel.schedule_id ?? null
            const { type, data } = input.message
            const full = { type, monitor_id: input.monitorId, tick_id: input.tickId, data }
            // The run gets the notification; one too large for a trigger keeps its identity only.
            const payload = Buffer.byteLength(JSON.stringify(full)) <= MAX_TRIGGER_PAYLOAD_BYTES
              ? full
              : { type, monitor_id: input.monitorId, tick_id: input.tickId, truncated: true }
            const queued = scheduleId === null
              ? { _tag: "not_found" as const }
              : yield* sql.withTransaction(queueTrigger(input.projectId, scheduleId, payload, `${input.tickId}:${type}`)).pipe(
                Effect.provideService(SqlClient.SqlClient, sql),
                Effect.orDie
              )
            if (queued._tag === "queued") yield* schedules.wake
            const deliveryId = yield* callbacks.send({
              ...base,
              url: `/v1/projects/${input.projectId}/schedules/${scheduleId ?? ""}/firings`,
              settled: queued._tag === "queued"
                ? { status: "delivered" }
                : { status: "failed", error: queued._tag === "paused" ? `schedule ${scheduleId} is paused` : `schedule ${scheduleId || "(none)"} does not exist in this project` }
            })
            return { deliveryId }
          }
        }
      })

      const validateChannel = Effect.fn("NotificationChannels.validateChannel")(function*(projectId: ProjectId, channel: NotifyChannel) {
        switch (channel.kind) {
          case "callback_url": {
            if (channel.webhook_id !== null) return yield* invalid(["webhook_id"], "webhook_id is for kind global_webhook; kind callback_url takes url", "value_error.extra")
            if (channel.url === null) return yield* invalid(["url"], "url is required when kind is callback_url", "missing")
            return yield* validateTargetUrl(channel.url, config.allowPrivateNetworks, ["notify_channel", "url"])
          }
          case "global_webhook": {
            if (channel.url !== null) return yield* invalid(["url"], "url is for kind callback_url; kind global_webhook takes webhook_id", "value_error.extra")
            if (channel.webhook_id === null) return yield* invalid(["webhook_id"], "webhook_id is required when kind is global_webhook", "missing")
            const endpoint = yield* endpoints.find(projectId, channel.webhook_id)
            if (endpoint === undefined) {
              return yield* invalid(["webhook_id"], `no webhook endpoint ${channel.webhook_id} in this project; create one with POST /v1/projects/{pid}/webhooks`, "value_error.webhook_not_found")
            }
            return
          }
          case "console_inbox": {
            if (channel.url !== null) return yield* invalid(["url"], "kind console_inbox takes neither url nor webhook_id", "value_error.extra")
            if (channel.webhook_id !== null) return yield* invalid(["webhook_id"], "kind console_inbox takes neither url nor webhook_id", "value_error.extra")
            return
          }
          case "schedule": {
            if (channel.schedule_id === undefined || channel.schedule_id === null) {
              return yield* invalid(["schedule_id"], "schedule_id is required when kind is schedule", "missing")
            }
            const scheduleId = channel.schedule_id
            if (!(yield* scheduleExists(projectId, scheduleId).pipe(Effect.provideService(SqlClient.SqlClient, sql)))) {
              return yield* invalid(["schedule_id"], `no schedule ${scheduleId} in this project; a DoAnything session request with schedule {kind: "event"} makes one`, "value_error.schedule_not_found")
            }
            return
          }
        }
      })

      // An Effect value (two queue offers), not a method: no span, as Callbacks.wake and Schedules.wake.
      const wake = Effect.andThen(callbacks.wake, schedules.wake)
      return NotificationChannels.of({ notify, validateChannel, wake })
    })
  )
}

/** Every service of the notification channels, over Callbacks, Schedules, the database and the config. */
export const NotificationChannelsLive = NotificationChannels.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(WebhookEndpoints.layer, Inbox.layer))
)
