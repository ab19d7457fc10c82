/**
 * Screenshots: the frames runs take, as their signed URLs open them (`run.screenshot` events carry
 * the URLs; the run's event log signs them afresh on every read, src/store/screenshots.ts). A URL
 * opens its frame only while its signature holds, so a client can show frames without sending its
 * API key to an <img> tag.
 */
import { Context, Effect, Layer } from "effect"
import { InvalidSignature, SignedUrlExpired } from "../domain/errors.ts"
import type { ScreenshotId } from "../domain/id-schemas.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { ScreenshotStore } from "../store/screenshots.ts"

export class Screenshots extends Context.Service<Screenshots, {
  /** The JPEG when the URL's signature is valid and not expired (undefined: no such screenshot). */
  readonly read: (id: ScreenshotId, expires: number, signature: string) => Effect.Effect<Uint8Array | undefined, InvalidSignature | SignedUrlExpired>
}>()("wa/runs/Screenshots") {
  static readonly layer = Layer.effect(
    Screenshots,
    Effect.gen(function*() {
      const store = yield* ScreenshotStore
      return Screenshots.of(withMethodSpans("Screenshots", {
        read: (id: ScreenshotId, expires: number, signature: string) =>
          Effect.gen(function*() {
            const result = yield* store.read(id, expires, signature)
            if (result === "invalid") return yield* new InvalidSignature()
            if (result === "expired") return yield* new SignedUrlExpired({ refresh: "read the run's events again (a replay signs its screenshots afresh)" })
            return result === "missing" ? undefined : result
          })
      }))
    })
  )
}
