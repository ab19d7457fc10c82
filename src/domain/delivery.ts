/** A delivery record's status and channel (callbacks, webhooks, the console inbox, schedules). */
import { Schema } from "effect"

export const DeliveryStatus = Schema.Literals(["pending", "retrying", "delivered", "failed"])
export type DeliveryStatus = typeof DeliveryStatus.Type

/**
 * The channel a delivery went out on: `callback_url` (a run's or a monitor's own URL),
 * `global_webhook` (a project webhook endpoint), `console_inbox` (recorded, not sent over HTTP).
 */
export const DeliveryChannel = Schema.Literals(["callback_url", "global_webhook", "console_inbox", "schedule"])
export type DeliveryChannel = typeof DeliveryChannel.Type

/**
 * The message types a delivery carries (its `event_type`, the body's `type`): `run.completed` (a
 * run's callback, src/webhooks/run-notifier.ts) and `monitor.triggered` (a monitor's notification,
 * src/track/tick.ts). The same as the keys of WebhookMessages (src/domain/wire/webhook-payloads.ts,
 * whose data schemas this module does not load: the browser SDK reads deliveries without them);
 * test/in-process/contract-deviations.test.ts holds the two together.
 */
export const DeliveryEventTypes = ["run.completed", "monitor.triggered"] as const
export type DeliveryEventType = typeof DeliveryEventTypes[number]

/**
 * The types of the console inbox's notifications, each written by one place: `monitor.triggered`
 * (a monitor's notification on its console_inbox channel, the webhook message of that name,
 * src/webhooks/notification-channels.ts) and `billing.quota_warning` (the period's budget warning,
 * src/store/ledger.ts).
 */
export const InboxNotificationTypes = ["monitor.triggered", "billing.quota_warning"] as const
export type InboxNotificationType = typeof InboxNotificationTypes[number]
