/**
 * SSO sign-ins in flight in PostgreSQL (sso_logins): the state of each, with its PKCE code
 * verifier, nonce and where to return, used once. Rows are decoded through Schema.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { withMethodSpans } from "../observability/spans.ts"
import { decodeRows } from "../domain/rows.ts"

const SsoLoginRow = Schema.Struct({ provider_id: Schema.String, code_verifier: Schema.String, nonce: Schema.String, return_to: Schema.String })
export type SsoLoginRow = typeof SsoLoginRow.Type

export class SsoLoginStore extends Context.Service<SsoLoginStore, {
  /** Records a new sign-in for `ttlSeconds`; the sign-ins that expired go first. */
  readonly start: (login: SsoLoginRow & { readonly state: string }, ttlSeconds: number) => Effect.Effect<void>
  /** Takes the live sign-in of `state` (the row is gone whatever happens next), or undefined. */
  readonly take: (state: string) => Effect.Effect<SsoLoginRow | undefined>
}>()("wa/accounts/SsoLoginStore") {
  static readonly layer = Layer.effect(
    SsoLoginStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return SsoLoginStore.of(withMethodSpans("SsoLoginStore", {
        start: (login, ttlSeconds) =>
          Effect.gen(function*() {
            yield* sql`DELETE FROM sso_logins WHERE expires_at < now()`
            yield* sql`
              INSERT INTO sso_logins (state, provider_id, code_verifier, nonce, return_to, expires_at)
              VALUES (${login.state}, ${login.provider_id}, ${login.code_verifier}, ${login.nonce}, ${login.return_to},
                now() + ${`${ttlSeconds} seconds`}::interval)`
          }).pipe(Effect.orDie),
        take: (state) =>
          decodeRows(SsoLoginRow)(sql`
            DELETE FROM sso_logins WHERE state = ${state} AND expires_at > now()
            RETURNING provider_id, code_verifier, nonce, return_to`).pipe(Effect.map((rows) => rows[0]))
      }))
    })
  )
}
