/**
 * The `recording` field of a DoAnything run's view: null when the run is not recorded; else its
 * settings, and once the recording is stored, its artifact id and a fresh signed replay URL.
 */
import { Effect } from "effect"
import type { Run } from "../../domain/run.ts"
import { Recordings } from "../../recordings/service.ts"
import { recordingSettings } from "../../recordings/settings.ts"

export interface RecordingView {
  readonly enabled: true
  readonly quality: string
  readonly capture_during_take_control: boolean
  readonly artifact_id: string | null
  readonly size_bytes: number | null
  readonly replay_url: string | null
  readonly replay_url_expires_at: string | null
}

/** What the run's request says (no artifact yet): the view every run answer carries. */
export const recordingSettingsView = (run: Run): RecordingView | null => {
  const settings = recordingSettings(run.request._tag === "DoAnything" ? run.request : undefined)
  if (settings === undefined) return null
  return {
    enabled: true,
    quality: settings.quality,
    capture_during_take_control: settings.captureDuringTakeControl,
    artifact_id: null,
    size_bytes: null,
    replay_url: null,
    replay_url_expires_at: null
  }
}

/** The full field: with the stored recording's artifact and replay URL (stored once the run has ended). */
export const recordingView = (run: Run): Effect.Effect<RecordingView | null, never, Recordings> =>
  Effect.gen(function*() {
    const base = recordingSettingsView(run)
    if (base === null) return null
    const stored = yield* (yield* Recordings).ofRun(run.id)
    if (stored === undefined) return base
    const { row, replay } = stored
    return { ...base, artifact_id: row.id, size_bytes: row.size_bytes, replay_url: replay.url, replay_url_expires_at: replay.expiresAt.toISOString() }
  })

/** A run view with its `recording` field completed. */
export const withRecording = <V extends object>(view: (run: Run) => V) => (run: Run) =>
  Effect.map(recordingView(run), (recording) => ({ ...view(run), recording }))
