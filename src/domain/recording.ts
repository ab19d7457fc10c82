/** A run's recording quality (`recording.quality`); what each means is src/recordings/settings.ts. */
import { Schema } from "effect"

export const RecordingQualities = ["low", "medium", "high"] as const
export const RecordingQuality = Schema.Literals(RecordingQualities)
export type RecordingQuality = typeof RecordingQuality.Type
