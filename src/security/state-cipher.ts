/**
 * AES-256-GCM for saved browser state (profiles, src/profiles/profile-store.ts, and run
 * checkpoints, src/store/runs.ts). A sealed value is `iv (12 bytes) | tag (16) | ciphertext`, with
 * the owner's id (the profile id, the run id) as additional authenticated data, so a ciphertext
 * copied onto another row does not open. The key id is stored beside it (see src/config/secret-key.ts).
 */
import { Context, Data, Effect, Layer, Option, Redacted } from "effect"
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import { AppConfig } from "../config/config.ts"
import { keyIdOf, loadSecretKey } from "../config/secret-key.ts"
import { withMethodSpans } from "../observability/spans.ts"

/** The state was written with another key, or the bytes were altered. */
export class StateUnreadable extends Data.TaggedError("StateUnreadable")<{ readonly reason: string }> {}

export interface Sealed {
  readonly bytes: Buffer
  readonly keyId: string
}

export class StateCipher extends Context.Service<StateCipher, {
  readonly keyId: string
  readonly seal: (plaintext: Buffer, aad: string) => Sealed
  readonly open: (sealed: Sealed, aad: string) => Effect.Effect<Buffer, StateUnreadable>
}>()("wa/security/StateCipher") {
  static readonly layer = Layer.effect(
    StateCipher,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const configured = Option.map(config.secretKey, Redacted.value)
      const loaded = yield* Effect.try({
        try: () => loadSecretKey(Option.getOrUndefined(configured), config.dataDirAbsolute),
        catch: (error) => error as Error
      }).pipe(Effect.orDie)
      if (loaded.source === "generated") {
        yield* Effect.logInfo("generated the key that encrypts saved browser state").pipe(Effect.annotateLogs({ file: loaded.file }))
      }
      if (loaded.source !== "WA_SECRET_KEY" && Option.isSome(config.databaseUrl)) {
        yield* Effect.logWarning(
          "WA_SECRET_KEY is not set: saved browser state (profiles) is encrypted with this node's own key; " +
            "nodes sharing DATABASE_URL need the same WA_SECRET_KEY to read each other's profiles"
        )
      }
      return StateCipher.of(withMethodSpans("StateCipher", makeCipher(loaded.key)))
    })
  )
}

export const makeCipher = (key: Buffer): StateCipher["Service"] => {
  const keyId = keyIdOf(key)
  return {
    keyId,
    seal: (plaintext, aad) => {
      const iv = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", key, iv)
      cipher.setAAD(Buffer.from(aad))
      const body = Buffer.concat([cipher.update(plaintext), cipher.final()])
      return { bytes: Buffer.concat([iv, cipher.getAuthTag(), body]), keyId }
    },
    open: (sealed, aad) =>
      Effect.suspend(() => {
        if (sealed.keyId !== keyId) {
          return Effect.fail(new StateUnreadable({
            reason: `the saved state was encrypted with another key (key id ${sealed.keyId}, this node has ${keyId}); set the same WA_SECRET_KEY on every node`
          }))
        }
        try {
          const decipher = createDecipheriv("aes-256-gcm", key, sealed.bytes.subarray(0, 12))
          decipher.setAAD(Buffer.from(aad))
          decipher.setAuthTag(sealed.bytes.subarray(12, 28))
          return Effect.succeed(Buffer.concat([decipher.update(sealed.bytes.subarray(28)), decipher.final()]))
        } catch {
          return Effect.fail(new StateUnreadable({ reason: "the saved state failed its integrity check (altered, or written for another profile)" }))
        }
      })
  }
}
