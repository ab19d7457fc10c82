/** A run's recording quality (`recording.quality`); what each means is src/recordings/settings.ts. */
import { Schema } from "effect"

export const RecordingQualities = ["low", "medium", "high"] as const
export const RecordingQuality = Schema.Literals(RecordingQualities)
export type RecordingQuality = typeof RecordingQuality.Type

/** The replay page's static assets (GET .../recordings/assets/{name}). */
export const replayAssetNames = ["rrweb.js", "rrweb.css", "replay.js", "replay.css"] as const
