/** Tables of the notification channels: project webhook endpoints and the console inbox. */
import { Effect } from "effect"

export const m0011_notification_channels = Effect.void
