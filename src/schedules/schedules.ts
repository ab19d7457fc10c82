import { Layer } from "effect"

export const SchedulesLive = Layer.empty
