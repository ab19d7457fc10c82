/**
 * The one signer of the service's short-lived URLs (screenshots, workspace files, recordings'
 * replay pages, take-control pages): HMAC-SHA256 under the service's `url_signing` secret
 * (service_secrets, made at the first start and shared by every node), base64url, compared in
 * constant time. Each kind signs its own message, which starts with its purpose
 * (`screenshot:`, `workspace_file\0`, `recording:`, `control:`), so a signature made for one
 * kind is useless for another.
 */
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createHmac, timingSafeEqual } from "node:crypto"
import { decodeRows } from "../domain/rows.ts"

export interface UrlSigner {
  readonly sign: (message: string) => string
  /** Whether `signature` is this service's signature of `message`. */
  readonly matches: (message: string, signature: string) => boolean
  /** The signature first (a forged expiry is "invalid"), then the expiry (unix seconds). */
  readonly check: (message: string, expires: number, signature: string) => "valid" | "invalid" | "expired"
}

/** The `url_signing` row of service_secrets. */
const SecretRow = Schema.Struct({ value: Schema.String })

export const loadUrlSigner: Effect.Effect<UrlSigner, never, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [secret] = yield* decodeRows(SecretRow)(sql`SELECT value FROM service_secrets WHERE name = 'url_signing'`)
  if (secret === undefined) return yield* Effect.die(new Error("the url_signing secret is missing (migrations not applied?)"))
  const sign = (message: string) => createHmac("sha256", secret.value).update(message).digest("base64url")
  const matches = (message: string, signature: string) => {
    const expected = Buffer.from(sign(message))
    const given = Buffer.from(signature)
    return expected.length === given.length && timingSafeEqual(expected, given)
  }
  return {
    sign,
    matches,
    check: (message, expires, signature) =>
      !matches(message, signature) ? "invalid" : expires < Date.now() / 1000 ? "expired" : "valid"
  }
})
