/**
 * Screenshots of runs, served through short-lived signed URLs (`run.screenshot` events carry
 * them), so a client can show frames without sending its API key to an <img> tag. The URL stored
 * in the event expires; whoever reads the event later (a replay, a reconnect) gets it signed again
 * (`refreshUrl`, applied by RunStore.eventsAfter), so a replayed frame always loads.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { loadUrlSigner } from "./url-signer.ts"
import { decodeRows } from "../domain/rows.ts"
import { makeId } from "../domain/ids.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { RunId } from "../domain/run.ts"
import type { ScreenshotId } from "../domain/id-schemas.ts"

export const SCREENSHOT_URL_TTL_SECONDS = 15 * 60
const screenshotRows = decodeRows(Schema.Struct({ data: Schema.Uint8Array }))
/** The path `save` returns; the id is what a fresh signature covers. */
const screenshotUrlPattern = /^\/v1\/screenshots\/([A-Za-z0-9_]{1,64})\?/

export class ScreenshotStore extends Context.Service<ScreenshotStore, {
  /** Stores a JPEG and returns its signed URL path. */
  readonly save: (runId: RunId, jpeg: Uint8Array) => Effect.Effect<string>
  /** A screenshot URL of an event, signed again from now (anything that is not one is returned as is). */
  readonly refreshUrl: (url: string) => string
  /** The JPEG when the signature is valid and not expired. */
  readonly read: (id: ScreenshotId, expires: number, signature: string) => Effect.Effect<Uint8Array | "expired" | "invalid" | "missing">
}>()("wa/store/ScreenshotStore") {
  static readonly layer = Layer.effect(
    ScreenshotStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const signer = yield* loadUrlSigner
      const message = (id: string, expires: number) => `screenshot:${id}:${expires}`
      const sign = (id: string, expires: number) => signer.sign(message(id, expires))
      const signedUrl = (id: string) => {
        const expires = Math.floor(Date.now() / 1000) + SCREENSHOT_URL_TTL_SECONDS
        return `/v1/screenshots/${id}?expires=${expires}&signature=${sign(id, expires)}`
      }
      return ScreenshotStore.of(withMethodSpans("ScreenshotStore", {
        save: (runId, jpeg) =>
          Effect.gen(function*() {
            const id = makeId("shot")
            yield* sql`INSERT INTO screenshots (id, run_id, data) VALUES (${id}, ${runId}, ${Buffer.from(jpeg)})`
            return signedUrl(id)
          }).pipe(Effect.orDie),
        refreshUrl: (url) => {
          const id = screenshotUrlPattern.exec(url)?.[1]
          return id === undefined ? url : signedUrl(id)
        },
        read: (id, expires, signature) =>
          Effect.gen(function*() {
            const verdict = signer.check(message(id, expires), expires, signature)
            if (verdict !== "valid") return verdict
            const rows = yield* screenshotRows(sql`SELECT data FROM screenshots WHERE id = ${id}`)
            return rows[0] === undefined ? "missing" as const : new Uint8Array(rows[0].data)
          }).pipe(Effect.orDie)
      }))
    })
  )
}
