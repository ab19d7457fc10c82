/**
 * Console sessions on the wire. A session is presented either as a bearer token
 * (`Authorization: Bearer was_...`, sessions signed in with `session: "bearer"`) or as the
 * HttpOnly, SameSite=Strict `wa_session` cookie (sessions signed in with `session: "cookie"`, the
 * default). Each kind is accepted only the way it was issued. A cookie-authenticated request with
 * a method other than GET/HEAD/OPTIONS must also send `X-CSRF-Token`, whose value the sign-in
 * returned (and left readable in the `wa_csrf` cookie): HMAC of the session token, compared in
 * constant time. Used by ConsoleAuth (account endpoints) and by the project Authentication (a
 * signed-in user acting on a project of one of their tenants).
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import { type ConsoleSession, type SessionFailure, Users } from "../../accounts/users.ts"
import { csrfTokenFor, safeEqual, SESSION_TOKEN_PREFIX } from "../../accounts/session-tokens.ts"
import { AppConfig } from "../../config/config.ts"
import { Forbidden, TooManyRequests, Unauthorized, unauthorized } from "../errors.ts"
import { makeAuthFailureLimiter, type AuthFailureLimiter, refuseBlocked } from "./auth-failure-limit.ts"
import { ConsoleAuth, CSRF_HEADER, CurrentUser, SESSION_COOKIE } from "../api/accounts-security.ts"
import { CurrentCaller } from "../api/security.ts"

export interface ConsoleCredential {
  readonly token: string
  readonly via: "bearer" | "cookie"
}

/** The console credential of a request: a `was_` bearer token, else the session cookie. */
export const consoleCredential = (request: HttpServerRequest.HttpServerRequest, bearer: string): ConsoleCredential | undefined => {
  if (bearer.startsWith(SESSION_TOKEN_PREFIX)) return { token: bearer, via: "bearer" }
  if (bearer !== "") return undefined
  const cookie = request.cookies[SESSION_COOKIE]
  return cookie === undefined || cookie === "" ? undefined : { token: cookie, via: "cookie" }
}

const safeMethods = new Set(["GET", "HEAD", "OPTIONS"])

const sessionDetail = {
  malformed: "the console session token is malformed; sign in again",
  unknown: "the console session is not known; sign in again",
  ended: "the console session has ended (signed out, password changed or expired); sign in again",
  kind: "this session was issued for the other transport (cookie or bearer); present it the way it was issued"
} as const

export const clientAddress = (request: HttpServerRequest.HttpServerRequest) =>
  Option.getOrElse(request.remoteAddress, () => "unknown")

/**
 * Verifies a console credential: the session must be live and presented the way it was issued,
 * and a cookie session's write must carry the CSRF token. Failures count against the address
 * (the same limiter API keys use).
 */
export const verifyConsoleCredential = <S extends ConsoleSession = ConsoleSession>(
  users: Users["Service"],
  failures: AuthFailureLimiter,
  request: HttpServerRequest.HttpServerRequest,
  credential: ConsoleCredential,
  /** How the token is looked up (the project Authentication also reads the membership with it). */
  authenticate: (token: string) => Effect.Effect<S | SessionFailure> = users.authenticate as (token: string) => Effect.Effect<S | SessionFailure>
): Effect.Effect<S & { readonly via: "bearer" | "cookie" }, Unauthorized | Forbidden | TooManyRequests> =>
  Effect.gen(function*() {
    const address = clientAddress(request)
    const blocked = refuseBlocked(failures, address, credential.token, "requests with a wrong credential")
    if (blocked !== undefined) return yield* blocked
    const result = yield* authenticate(credential.token)
    const failure = typeof result === "string" ? result : result.kind !== credential.via ? "kind" as const : undefined
    if (failure !== undefined) {
      failures.recordFailure(address, Date.now())
      return yield* unauthorized(sessionDetail[failure])
    }
    const session = result as S
    failures.recordSuccess(credential.token)
    if (credential.via === "cookie" && !safeMethods.has(request.method.toUpperCase())) {
      const sent = request.headers[CSRF_HEADER] ?? ""
      if (!safeEqual(sent, csrfTokenFor(credential.token))) {
        return yield* new Forbidden({
          code: "csrf_failed",
          detail: "a cookie-authenticated write needs the X-CSRF-Token header with the csrf_token the sign-in returned (also in the wa_csrf cookie)",
          extra: {}
        })
      }
    }
    return { ...session, via: credential.via }
  })

export const ConsoleAuthLive = Layer.effect(
  ConsoleAuth,
  Effect.gen(function*() {
    const users = yield* Users
    const config = yield* AppConfig
    const failures = makeAuthFailureLimiter(config.authFailuresPerMinute)
    return ConsoleAuth.of({
      bearer: Effect.fnUntraced(function*(httpEffect, { credential }) {
        const request = yield* HttpServerRequest.HttpServerRequest
        const token = Redacted.value(credential)
        const presented = consoleCredential(request, token)
        if (presented === undefined) {
          if (token !== "") {
            return yield* new Forbidden({
              code: "forbidden",
              detail: "API keys act for one project; account and tenant endpoints need a console session (POST /v1/auth/login)",
              extra: {}
            })
          }
          return yield* unauthorized("sign in first: send Authorization: Bearer was_... or the wa_session cookie (POST /v1/auth/login)")
        }
        const session = yield* verifyConsoleCredential(users, failures, request, presented)
        return yield* httpEffect.pipe(
          Effect.provideService(CurrentUser, session),
          Effect.provideService(CurrentCaller, { space: "console", id: session.userId })
        )
      })
    })
  })
)
