/**
 * What a run's `recording: {enabled, quality, capture_during_take_control}` means: whether the run
 * is recorded, and the rrweb record options each quality stands for.
 *
 * | quality | mouse moves | scroll | images | fonts |
 * |---|---|---|---|---|
 * | low | not recorded | every 500 ms at most | by URL | by URL |
 * | medium (default) | every 100 ms at most | every 150 ms at most | by URL | by URL |
 * | high | every move | every 50 ms at most | inlined as data URLs | inlined |
 *
 * At every quality: stylesheets are inlined (the replay does not depend on the site's CSS URLs),
 * scripts, comments and head meta are left out (a replay never runs the page's scripts), password
 * inputs are masked (rrweb's default), input values are recorded once per change ("last"), and
 * canvases are not recorded. "By URL" means the replay loads the image from the site again, so it
 * shows nothing once the site is gone; `high` keeps them in the recording (larger).
 */
import { RecordingQualities, type RecordingQuality } from "../domain/recording.ts"
import type { DoAnythingRequest } from "../domain/run.ts"

export { RecordingQualities, RecordingQuality } from "../domain/recording.ts"

/** A run's recording settings, resolved; undefined when the run is not recorded. */
export interface RecordingSettings {
  readonly quality: RecordingQuality
  readonly captureDuringTakeControl: boolean
}

/** The settings of a run's request; `enabled` must be true (an omitted `recording` means off). */
export const recordingSettings = (request: Partial<DoAnythingRequest> | undefined): RecordingSettings | undefined => {
  const recording = request?.recording
  if (recording === undefined || recording === null || recording.enabled !== true) return undefined
  const quality = RecordingQualities.find((q) => q === recording.quality) ?? "medium"
  return { quality, captureDuringTakeControl: recording.capture_during_take_control ?? true }
}

/** rrweb `record()` options (JSON: sent into the page) for a quality. */
export const rrwebRecordOptions = (quality: RecordingQuality): Record<string, unknown> => {
  const common = {
    inlineStylesheet: true,
    slimDOMOptions: "all",
    maskInputOptions: { password: true },
    recordCanvas: false,
    recordCrossOriginIframes: false
  }
  switch (quality) {
    case "low":
      return { ...common, sampling: { mousemove: false, scroll: 500, media: 800, input: "last" }, inlineImages: false, collectFonts: false }
    case "medium":
      return { ...common, sampling: { mousemove: 100, scroll: 150, media: 800, input: "last" }, inlineImages: false, collectFonts: false }
    case "high":
      return { ...common, sampling: { mousemove: true, scroll: 50, input: "last" }, inlineImages: true, collectFonts: true }
  }
}
