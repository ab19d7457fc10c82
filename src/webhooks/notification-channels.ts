import { Layer } from "effect"

export const NotificationChannelsLive = Layer.empty
