/**
 * Screenshots: the frames runs take, as their signed URLs open them (`run.screenshot` events carry
 * the URLs; the run's event log signs them afresh on every read, src/store/screenshots.ts). A URL
 * opens its frame only while its signature holds, so a client can show frames without sending its
 * API key to an <img> tag.
 */
import { Context, Effect, Layer } from "effect"
import type { ScreenshotId } from "../domain/id-schemas.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { ScreenshotStore } from "../store/screenshots.ts"

/** What a signed screenshot URL opens: the JPEG, or why not. */
export type ScreenshotRead = Uint8Array | "expired" | "invalid" | "missing"

export class Screenshots extends Context.Service<Screenshots, {
  /** The JPEG when the URL's signature is valid and not expired. */
  readonly read: (id: ScreenshotId, expires: number, signature: string) => Effect.Effect<ScreenshotRead>
}>()("wa/runs/Screenshots") {
  static readonly layer = Layer.effect(
    Screenshots,
    Effect.gen(function*() {
      const store = yield* ScreenshotStore
      return Screenshots.of(withMethodSpans("Screenshots", {
        read: (id: ScreenshotId, expires: number, signature: string) => store.read(id, expires, signature)
      }))
    })
  )
}
