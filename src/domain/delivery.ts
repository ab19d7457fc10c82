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
