/**
 * SSO sign-in with OpenID Connect providers (WA_OIDC_PROVIDERS), through `openid-client`: the
 * authorization-code flow with PKCE (S256), a state and a nonce per sign-in. The state row (with
 * the code verifier and nonce) lives in PostgreSQL for 10 minutes and is used once, so a callback
 * can land on any node; the state is also bound to the browser that started the flow by an
 * HttpOnly cookie (checked by the HTTP handler), which stops login CSRF.
 *
 * Which account: the one linked to (provider, subject); else the account with the provider's
 * email if the provider says it is verified (the identity is then linked to it); else a new
 * account without a password. A provider that gives no verified email is refused, and so is an
 * account whose address was never verified while it has a password (409 `email_unverified`, see
 * Users.resolveSsoIdentity): SSO never hands a proven address to an account someone else may hold.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import * as client from "openid-client"
import { AppConfig } from "../config/config.ts"
import { type AccountConflict, AccountResourceNotFound, SsoFailed } from "./errors.ts"
import { SsoLoginStore } from "./sso-login-store.ts"
import { type UserRow, Users } from "./users.ts"

const ProviderConfig = Schema.Struct({
  provider_id: Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9_-]{0,63}$/)),
  display_name: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)),
  issuer: Schema.String.check(Schema.isPattern(/^https?:\/\//)),
  client_id: Schema.String.check(Schema.isMinLength(1)),
  client_secret: Schema.String.check(Schema.isMinLength(1))
})
type ProviderConfig = typeof ProviderConfig.Type

const STATE_TTL_SECONDS = 600

/** Parses WA_OIDC_PROVIDERS; a bad value stops start-up with a message naming the variable. */
export const parseProviders = (raw: string | undefined): ReadonlyArray<ProviderConfig> => {
  if (raw === undefined || raw.trim() === "") return []
  let json: unknown
  try {
    json = JSON.parse(raw)
  } catch {
    throw new Error("invalid configuration: WA_OIDC_PROVIDERS must be a JSON array")
  }
  const decoded = Schema.decodeUnknownOption(Schema.Array(ProviderConfig))(json)
  if (Option.isNone(decoded)) {
    throw new Error("invalid configuration: WA_OIDC_PROVIDERS items need provider_id ([a-z0-9_-]), display_name, issuer (http(s) URL), client_id, client_secret")
  }
  const ids = decoded.value.map((p) => p.provider_id)
  if (new Set(ids).size !== ids.length) throw new Error("invalid configuration: WA_OIDC_PROVIDERS has a provider_id twice")
  return decoded.value
}

export class Sso extends Context.Service<Sso, {
  readonly providers: ReadonlyArray<{ readonly provider_id: string; readonly display_name: string }>
  /** Starts a sign-in: the URL to send the browser to, and the state to bind to it. */
  readonly start: (providerId: string, redirectUri: string, returnTo: string) => Effect.Effect<{ readonly url: string; readonly state: string }, AccountResourceNotFound | SsoFailed>
  /** Completes a sign-in from the callback URL: the user, and where to send the browser. */
  readonly complete: (providerId: string, callbackUrl: URL) => Effect.Effect<{ readonly user: UserRow; readonly returnTo: string }, AccountResourceNotFound | SsoFailed | AccountConflict>
}>()("wa/accounts/Sso") {
  static readonly layer = Layer.effect(
    Sso,
    Effect.gen(function*() {
      const store = yield* SsoLoginStore
      const users = yield* Users
      const config = yield* AppConfig
      const providers = parseProviders(Option.getOrUndefined(config.oidcProviders))
      const byId = new Map(providers.map((p) => [p.provider_id, p]))
      // Discovery once per provider, on first use; a failure is retried at the next sign-in.
      const discovered = new Map<string, Promise<client.Configuration>>()
      const configurationOf = (provider: ProviderConfig) =>
        Effect.tryPromise({
          try: () => {
            let pending = discovered.get(provider.provider_id)
            if (pending === undefined) {
              const issuer = new URL(provider.issuer)
              pending = client.discovery(issuer, provider.client_id, provider.client_secret, undefined, {
                // Plain http only when the operator configured an http issuer (a local provider).
                ...(issuer.protocol === "http:" ? { execute: [client.allowInsecureRequests] } : {}),
                timeout: 10
              })
              pending.catch(() => discovered.delete(provider.provider_id))
              discovered.set(provider.provider_id, pending)
            }
            return pending
          },
          catch: (error) => new SsoFailed({ detail: `the SSO provider ${provider.provider_id} could not be reached: ${String(error)}` })
        })

      const find = (providerId: string) => {
        const provider = byId.get(providerId)
        return provider === undefined ? Effect.fail(new AccountResourceNotFound({ what: "provider", id: providerId })) : Effect.succeed(provider)
      }

      const start = Effect.fn("Sso.start")(function*(providerId: string, redirectUri: string, returnTo: string) {
        const provider = yield* find(providerId)
        const configuration = yield* configurationOf(provider)
        const codeVerifier = client.randomPKCECodeVerifier()
        const state = client.randomState()
        const nonce = client.randomNonce()
        const challenge = yield* Effect.promise(() => client.calculatePKCECodeChallenge(codeVerifier))
        yield* store.start({ state, provider_id: providerId, code_verifier: codeVerifier, nonce, return_to: returnTo }, STATE_TTL_SECONDS)
        const url = client.buildAuthorizationUrl(configuration, {
          redirect_uri: redirectUri,
          scope: "openid email profile",
          response_type: "code",
          code_challenge: challenge,
          code_challenge_method: "S256",
          state,
          nonce
        })
        return { url: url.href, state }
      })

      const complete = Effect.fn("Sso.complete")(function*(providerId: string, callbackUrl: URL) {
        const provider = yield* find(providerId)
        const state = callbackUrl.searchParams.get("state") ?? ""
        // Used once: the row is gone whatever happens next.
        const login = yield* store.take(state)
        if (login === undefined || login.provider_id !== providerId) {
          return yield* new SsoFailed({ detail: "this SSO sign-in is unknown, used or older than 10 minutes; start again" })
        }
        const providerError = callbackUrl.searchParams.get("error")
        if (providerError !== null) {
          return yield* new SsoFailed({ detail: `the SSO provider refused the sign-in: ${providerError.slice(0, 200)}` })
        }
        const configuration = yield* configurationOf(provider)
        const tokens = yield* Effect.tryPromise({
          try: () => client.authorizationCodeGrant(configuration, callbackUrl, {
            pkceCodeVerifier: login.code_verifier,
            expectedState: state,
            expectedNonce: login.nonce,
            idTokenExpected: true
          }),
          catch: (error) => new SsoFailed({ detail: `the SSO sign-in could not be completed: ${String(error).slice(0, 300)}` })
        })
        const claims = tokens.claims()
        if (claims === undefined) return yield* new SsoFailed({ detail: "the SSO provider returned no ID token" })
        // Providers that keep the ID token small (OpenID Connect's default when an access token is
        // issued) give the email at the userinfo endpoint; its subject must be the ID token's.
        const profile: Record<string, unknown> = typeof claims["email"] === "string"
          ? claims
          : yield* Effect.tryPromise({
            try: () => client.fetchUserInfo(configuration, tokens.access_token, claims.sub),
            catch: (error) => new SsoFailed({ detail: `the SSO provider's userinfo could not be read: ${String(error).slice(0, 300)}` })
          })
        const email = typeof profile["email"] === "string" ? profile["email"] : undefined
        if (email === undefined || profile["email_verified"] !== true || email.length < 3 || email.length > 255) {
          return yield* new SsoFailed({ detail: "the SSO provider gave no verified email address for this account" })
        }
        const user = yield* users.resolveSsoIdentity(providerId, claims.sub, email)
        return { user, returnTo: login.return_to }
      })

      return Sso.of({
        providers: providers.map((p) => ({ provider_id: p.provider_id, display_name: p.display_name })),
        start,
        complete
      })
    })
  ).pipe(Layer.provide(SsoLoginStore.layer))
}
