/**
 * Signed, short-lived replay URLs of recordings (like screenshot and workspace URLs): a browser
 * opens the replay page without an API key, and the page fetches the events with the same
 * signature. A signature names one artifact and its expiry; it is useless for anything else.
 */
import { Context, Effect, Layer } from "effect"
import { loadUrlSigner } from "../store/url-signer.ts"
import { withMethodSpans } from "../observability/spans.ts"

export const REPLAY_URL_TTL_SECONDS = 15 * 60

export interface SignedReplayUrl {
  /** Path of the replay page, e.g. `/v1/recordings/art_.../replay?expires=...&signature=...`. */
  readonly url: string
  readonly expiresAt: Date
}

export class RecordingLinks extends Context.Service<RecordingLinks, {
  readonly sign: (artifactId: string) => Effect.Effect<SignedReplayUrl>
  readonly verify: (artifactId: string, expires: number, signature: string) => Effect.Effect<"valid" | "invalid" | "expired">
}>()("wa/recordings/RecordingLinks") {
  static readonly layer = Layer.effect(
    RecordingLinks,
    Effect.gen(function*() {
      const signer = yield* loadUrlSigner
      const message = (artifactId: string, expires: number) => `recording:${artifactId}:${expires}`
      const signature = (artifactId: string, expires: number) => signer.sign(message(artifactId, expires))
      return RecordingLinks.of(withMethodSpans("RecordingLinks", {
        sign: (artifactId) =>
          Effect.sync(() => {
            const expires = Math.floor(Date.now() / 1000) + REPLAY_URL_TTL_SECONDS
            return {
              url: `/v1/recordings/${encodeURIComponent(artifactId)}/replay?expires=${expires}&signature=${signature(artifactId, expires)}`,
              expiresAt: new Date(expires * 1000)
            }
          }),
        verify: (artifactId, expires, given) =>
          Effect.sync(() => signer.check(message(artifactId, expires), expires, given))
      }))
    })
  )
}
