/**
 * Signed, short-lived replay URLs of recordings (like screenshot and workspace URLs): a browser
 * opens the replay page without an API key, and the page fetches the events with the same
 * signature. A signature names one artifact and its expiry; it is useless for anything else.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { createHmac, timingSafeEqual } from "node:crypto"

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
      const sql = yield* SqlClient.SqlClient
      const [secret] = yield* sql<{ value: string }>`SELECT value FROM service_secrets WHERE name = 'url_signing'`.pipe(Effect.orDie)
      const signature = (artifactId: string, expires: number) =>
        createHmac("sha256", secret!.value).update(`recording:${artifactId}:${expires}`).digest("base64url")
      return RecordingLinks.of({
        sign: (artifactId) =>
          Effect.sync(() => {
            const expires = Math.floor(Date.now() / 1000) + REPLAY_URL_TTL_SECONDS
            return {
              url: `/v1/recordings/${encodeURIComponent(artifactId)}/replay?expires=${expires}&signature=${signature(artifactId, expires)}`,
              expiresAt: new Date(expires * 1000)
            }
          }),
        verify: (artifactId, expires, given) =>
          Effect.sync(() => {
            const expected = Buffer.from(signature(artifactId, expires))
            const actual = Buffer.from(given)
            if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return "invalid" as const
            return expires < Date.now() / 1000 ? "expired" as const : "valid" as const
          })
      })
    })
  )
}
