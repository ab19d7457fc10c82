/** Everything Track adds to a runner: the Monitors service and the Monitor entity. Placeholder until built. */
import { Layer } from "effect"

export const TrackLive = Layer.empty
