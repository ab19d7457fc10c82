/** Tables of Track: monitors, their events, tick runs and snapshots. */
import { Effect } from "effect"

export const m0012_track = Effect.void
