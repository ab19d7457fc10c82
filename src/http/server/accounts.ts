/**
 * Handlers of the console account endpoints (src/http/api/accounts.ts): thin, over Users, Tenants
 * and BugReports (src/accounts/). Cookies are set here: `wa_session` (HttpOnly, SameSite=Strict,
 * Path=/, Secure when the service is reached over https) and `wa_csrf` (readable by the console's
 * script, same attributes otherwise).
 */
import { Duration, Effect } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AccountMail } from "../../accounts/account-mail.ts"
import { BugReports, type BugReportRow } from "../../accounts/bug-reports.ts"
import { AccountInvalidField } from "../../accounts/errors.ts"
import { csrfTokenFor } from "../../accounts/session-tokens.ts"
import { type InvitationRow, type MemberRow, type MembershipRow, Tenants, type TenantProjectRow } from "../../accounts/tenants.ts"
import { Users } from "../../accounts/users.ts"
import { Sso } from "../../accounts/sso.ts"
import { safeEqual } from "../../accounts/session-tokens.ts"
import { AppConfig } from "../../config/config.ts"
import { httpErrors } from "../domain-errors.ts"
import { Unauthorized, unauthorized, validationError } from "../errors.ts"
import { WebAgentApi } from "../api/api.ts"
import { CSRF_COOKIE, CurrentUser, SESSION_COOKIE } from "../api/accounts-security.ts"

/** Binds an SSO sign-in to the browser that started it (see src/accounts/sso.ts). */
const SSO_STATE_COOKIE = "wa_sso_state"
import { CurrentKey } from "../api/security.ts"
import { makeAuthFailureLimiter } from "../middleware/auth-failure-limit.ts"
import { clientAddress, consoleCredential, verifyConsoleCredential } from "../middleware/console-session.ts"
import { cursorPage, DEFAULT_LIMIT, decodeCursor, toPage } from "../pagination.ts"
import { iso } from "../views/timestamps.ts"
import { publicBaseUrl } from "./do-anything.ts"

const membershipView = (row: MembershipRow) => ({
  tenant_id: row.id,
  name: row.name,
  role: row.role,
  status: row.status,
  created_at: row.created_at.toISOString()
})

const memberView = (row: MemberRow) => ({
  user_id: row.user_id,
  auth_identity_id: row.auth_identity_id,
  role: row.role,
  status: row.status,
  display_name: row.display_name,
  email: row.email,
  invited_by_user_id: row.invited_by_user_id,
  created_at: row.created_at.toISOString()
})

const invitationView = (row: InvitationRow) => ({
  id: row.id,
  tenant_id: row.tenant_id,
  email: row.email,
  role: row.role,
  status: row.status,
  invited_by: row.invited_by,
  expires_at: row.expires_at.toISOString(),
  accepted_at: iso(row.accepted_at),
  revoked_at: iso(row.revoked_at),
  created_at: row.created_at.toISOString()
})

const projectView = (row: TenantProjectRow) => ({
  id: row.id,
  name: row.name,
  tenant_id: row.tenant_id,
  created_at: row.created_at.toISOString()
})

export const bugReportView = (row: BugReportRow) => ({
  id: row.id,
  project_id: row.project_id,
  user_id: row.user_id,
  message: row.message,
  page_path: row.page_path,
  screenshot_data_url: row.screenshot_data_url,
  input_method: row.input_method,
  viewport_width: row.viewport_width,
  viewport_height: row.viewport_height,
  user_agent: row.user_agent,
  status: row.status,
  created_at: row.created_at.toISOString()
})

/** Cookie attributes: Secure when the service's public base URL (or the proxy's scheme) is https. */
export const cookieOptions = Effect.gen(function*() {
  const base = yield* publicBaseUrl
  return { path: "/", sameSite: "strict" as const, secure: base.startsWith("https://") }
})

/** `response` with the session cookie (HttpOnly) and its CSRF cookie (readable), both until `expiresAt`. */
export const withSessionCookies = (
  response: HttpServerResponse.HttpServerResponse,
  token: string,
  expiresAt: Date,
  options: Effect.Success<typeof cookieOptions>
) => {
  const maxAge = Duration.millis(Math.max(0, expiresAt.getTime() - Date.now()))
  return HttpServerResponse.setCookie(response, SESSION_COOKIE, token, { ...options, httpOnly: true, maxAge }).pipe(
    Effect.flatMap((r) => HttpServerResponse.setCookie(r, CSRF_COOKIE, csrfTokenFor(token), { ...options, httpOnly: false, maxAge })),
    Effect.orDie
  )
}

const setSessionCookies = (token: string, expiresAt: Date) =>
  Effect.gen(function*() {
    const options = yield* cookieOptions
    yield* HttpEffect.appendPreResponseHandler((_request, response) => withSessionCookies(response, token, expiresAt, options))
  })

const clearSessionCookies = Effect.gen(function*() {
  const options = yield* cookieOptions
  yield* HttpEffect.appendPreResponseHandler((_request, response) =>
    HttpServerResponse.expireCookie(response, SESSION_COOKIE, { ...options, httpOnly: true }).pipe(
      Effect.flatMap((r) => HttpServerResponse.expireCookie(r, CSRF_COOKIE, { ...options, httpOnly: false })),
      Effect.orDie
    )
  )
})

/**
 * The base URL of links this service mails (password reset, verification): WA_PUBLIC_URL, else
 * the address the request reached as the server's socket sees it. Never the Host or
 * X-Forwarded-Host header: anyone can ask for a reset mail to someone else's address, and a
 * forged Host would put the owner's reset token into a link to the asker's server.
 */
const mailBaseUrl = Effect.gen(function*() {
  const { publicUrl } = yield* AppConfig
  if (publicUrl._tag === "Some") return publicUrl.value.replace(/\/$/, "")
  const request = yield* HttpServerRequest.HttpServerRequest
  const socket = (request.source as { readonly socket?: { readonly localAddress?: string; readonly localPort?: number } }).socket
  // An IPv4 client of a dual-stack socket shows as ::ffff:a.b.c.d; other IPv6 addresses take brackets.
  const address = (socket?.localAddress ?? "127.0.0.1").replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "")
  const host = address.includes(":") ? `[${address}]` : address
  return `http://${host}${socket?.localPort === undefined ? "" : `:${socket.localPort}`}`
})

/**
 * Where the browser goes after an SSO sign-in, decided on the URL as a browser reads it: resolved
 * against the service's own origin (tabs and newlines dropped, backslashes read as slashes,
 * `//host` as another host) it must keep that origin. The answer is the resolved absolute URL, so
 * the Location header is exactly what was checked. A path is asked for (a leading /); anything
 * else, and any other origin, is undefined.
 */
export const sameOriginReturnTo = (returnTo: string, base: string): string | undefined => {
  if (!returnTo.startsWith("/")) return undefined
  const origin = new URL(base).origin
  const resolved = URL.parse(returnTo, origin)
  return resolved !== null && resolved.origin === origin ? resolved.href : undefined
}

export const AuthPublicHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "auth_public",
  Effect.fn(function*(handlers) {
    const users = yield* Users
    const tenants = yield* Tenants
    const sso = yield* Sso
    const accountMail = yield* AccountMail
    const config = yield* AppConfig
    const failures = makeAuthFailureLimiter(config.authFailuresPerMinute)
    return handlers
      .handle("login", ({ payload }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const kind = payload.session ?? "cookie"
          const signedIn = yield* httpErrors(users.login({
            email: payload.email,
            password: payload.password,
            address: clientAddress(request),
            kind
          }))
          if (kind === "cookie") yield* setSessionCookies(signedIn.token, signedIn.session.expiresAt)
          return {
            user_id: signedIn.user.id,
            email: signedIn.user.email,
            display_name: signedIn.user.display_name,
            session: kind,
            session_token: kind === "bearer" ? signedIn.token : null,
            csrf_token: kind === "cookie" ? csrfTokenFor(signedIn.token) : null,
            expires_at: signedIn.session.expiresAt.toISOString()
          }
        }))
      .handle("providers", () => Effect.succeed({ providers: [...sso.providers] }))
      .handle("ssoStart", ({ params, query }) =>
        Effect.gen(function*() {
          const base = yield* publicBaseUrl
          const returnTo = sameOriginReturnTo(query.return_to ?? "/console/", base)
          if (returnTo === undefined) {
            return yield* validationError("return_to must be a path of this service, starting with /", [
              { loc: ["query", "return_to"], msg: "a path of this service (read as a browser reads a URL, it must stay on this origin)", type: "value_error" }
            ])
          }
          const started = yield* httpErrors(sso.start(params.provider_id, `${base}/v1/auth/sso/${params.provider_id}/callback`, returnTo))
          const options = yield* cookieOptions
          return yield* HttpServerResponse.setCookie(HttpServerResponse.redirect(started.url, { status: 302 }), SSO_STATE_COOKIE, started.state, {
            ...options,
            // Lax: the provider's redirect back is a cross-site top-level GET, which Strict would strip.
            sameSite: "lax",
            httpOnly: true,
            path: "/v1/auth/sso",
            maxAge: Duration.minutes(10)
          }).pipe(Effect.orDie)
        }))
      .handle("ssoCallback", ({ params }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const base = yield* publicBaseUrl
          const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : ""
          const callbackUrl = new URL(`${base}/v1/auth/sso/${params.provider_id}/callback${query}`)
          // The browser that comes back must be the one that started (login CSRF).
          const bound = request.cookies[SSO_STATE_COOKIE] ?? ""
          if (bound === "" || !safeEqual(bound, callbackUrl.searchParams.get("state") ?? "")) {
            return yield* new Unauthorized({ code: "sso_failed", detail: "this SSO sign-in was not started in this browser; start again", extra: {} })
          }
          const done = yield* httpErrors(sso.complete(params.provider_id, callbackUrl))
          const signedIn = yield* users.startSession(done.user, "cookie")
          const options = yield* cookieOptions
          return yield* withSessionCookies(HttpServerResponse.redirect(done.returnTo, { status: 302 }), signedIn.token, signedIn.session.expiresAt, options).pipe(
            Effect.flatMap(HttpServerResponse.expireCookie(SSO_STATE_COOKIE, { ...options, sameSite: "lax", httpOnly: true, path: "/v1/auth/sso" })),
            Effect.orDie
          )
        }))
      .handle("forgotPassword", ({ payload }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const base = yield* mailBaseUrl
          yield* httpErrors(accountMail.requestPasswordReset(payload.email, clientAddress(request), base))
          return { accepted: true }
        }))
      .handle("resetPassword", ({ payload }) =>
        Effect.gen(function*() {
          yield* httpErrors(accountMail.resetPassword(payload.token, payload.new_password))
          return { password_reset: true, email_verified: true, sessions_ended: true }
        }))
      .handle("acceptInvitation", ({ payload }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const authorization = request.headers["authorization"] ?? ""
          const bearer = authorization.toLowerCase().startsWith("bearer ") ? authorization.slice(7).trim() : ""
          const presented = consoleCredential(request, bearer)
          if (presented === undefined && bearer !== "") {
            return yield* unauthorized("accepting an invitation takes a console session (or none, with a password); API keys are not accepted")
          }
          const accepted = presented === undefined
            ? yield* httpErrors(tenants.accept(payload.token, {
              _tag: "NewAccount",
              password: payload.password ?? null,
              displayName: payload.display_name ?? null
            }))
            : yield* Effect.gen(function*() {
              const session = yield* verifyConsoleCredential(users, failures, request, presented)
              return yield* httpErrors(tenants.accept(payload.token, { _tag: "SignedIn", userId: session.userId, email: session.email }))
            })
          return { tenant_id: accepted.tenantId, user_id: accepted.userId, role: accepted.role }
        }))
  })
)

export const AccountHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "account",
  Effect.fn(function*(handlers) {
    const users = yield* Users
    const tenants = yield* Tenants
    const accountMail = yield* AccountMail
    return handlers
      .handle("me", () =>
        Effect.gen(function*() {
          const session = yield* CurrentUser
          const user = yield* users.get(session.userId)
          const memberships = yield* tenants.listForUser(session.userId)
          return {
            user_id: session.userId,
            email: user?.email ?? session.email,
            display_name: user?.display_name ?? null,
            email_verified: user?.email_verified ?? false,
            session: session.kind,
            expires_at: session.expiresAt.toISOString(),
            tenants: memberships.map(membershipView)
          }
        }))
      .handle("logout", () =>
        Effect.gen(function*() {
          const session = yield* CurrentUser
          yield* users.logout(session.sessionId)
          if (session.via === "cookie") yield* clearSessionCookies
          return { signed_out: true }
        }))
      .handle("changePassword", ({ payload }) =>
        Effect.gen(function*() {
          const session = yield* CurrentUser
          const request = yield* HttpServerRequest.HttpServerRequest
          yield* httpErrors(users.changePassword(session, payload.current_password, payload.new_password, clientAddress(request)))
          return { password_changed: true, other_sessions_ended: true }
        }))
      .handle("requestEmailVerification", () =>
        Effect.gen(function*() {
          const session = yield* CurrentUser
          const request = yield* HttpServerRequest.HttpServerRequest
          const base = yield* mailBaseUrl
          const sent = yield* httpErrors(accountMail.requestVerification(session.userId, clientAddress(request), base))
          return { email: sent.email, email_verified: sent.emailVerified, mail_sent: sent.mailSent }
        }))
      .handle("verifyEmail", ({ payload }) =>
        Effect.gen(function*() {
          const session = yield* CurrentUser
          yield* httpErrors(accountMail.verifyEmail(session.userId, payload.token))
          return { email: session.email, email_verified: true }
        }))
  })
)

export const TenantsHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "tenants",
  Effect.fn(function*(handlers) {
    const tenants = yield* Tenants
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          const tenant = yield* httpErrors(tenants.create(userId, payload.name))
          return { tenant_id: tenant.id, name: tenant.name, role: "admin" as const, created_at: tenant.created_at.toISOString() }
        }))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          // Tenants are ordered by id (ascending); the cursor is the last tenant id.
          const limit = query.limit ?? DEFAULT_LIMIT
          const after = yield* decodeCursor(query.cursor)
          const page = toPage(yield* tenants.listForUser(userId, { limit: limit + 1, after }), limit)
          return { items: page.items.map(membershipView), next_cursor: page.next_cursor }
        }))
      .handle("members", ({ params, query }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          // Members are ordered by user id (ascending); the cursor is the last user id.
          const limit = query.limit ?? DEFAULT_LIMIT
          const after = yield* decodeCursor(query.cursor)
          const rows = yield* httpErrors(tenants.members(params.tid, userId, limit + 1, after))
          const page = toPage(rows.map((row) => ({ ...row, id: row.user_id })), limit)
          return { items: page.items.map(memberView), next_cursor: page.next_cursor }
        }))
      .handle("updateMember", ({ params, payload }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          if (payload.role === undefined && payload.status === undefined) {
            return yield* httpErrors(Effect.fail(new AccountInvalidField({ field: "role", detail: "give role and/or status" })))
          }
          return memberView(yield* httpErrors(tenants.updateMember(params.tid, userId, params.user_id, payload)))
        }))
      .handle("invite", ({ params, payload }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          const { invitation, token } = yield* httpErrors(tenants.invite(params.tid, userId, payload.email, payload.role ?? "member"))
          const base = yield* publicBaseUrl
          return {
            invitation_id: invitation.id,
            invite_url: `${base}/console/accept-invitation?token=${encodeURIComponent(token)}`,
            expires_at: invitation.expires_at.toISOString()
          }
        }))
      .handle("invitations", ({ params, query }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          return yield* cursorPage(query, (limit, before) => httpErrors(tenants.invitations(params.tid, userId, limit, before)), invitationView)
        }))
      .handle("revokeInvitation", ({ params }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          return invitationView(yield* httpErrors(tenants.revokeInvitation(params.tid, userId, params.invitation_id)))
        }))
      .handle("projects", ({ params, query }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          return yield* cursorPage(query, (limit, before) => httpErrors(tenants.projects(params.tid, userId, limit, before)), projectView)
        }))
      .handle("createProject", ({ params, payload }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          return projectView(yield* httpErrors(tenants.createProject(params.tid, userId, payload.name)))
        }))
  })
)

export const BugReportsHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "bug_reports",
  Effect.fn(function*(handlers) {
    const reports = yield* BugReports
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const key = yield* CurrentKey
          const row = yield* httpErrors(reports.create(key.projectId, {
            userId: key.userId ?? null,
            // Without a console user, the acting principal is the API key itself.
            apiKeyId: key.userId === undefined ? key.keyId : null
          }, {
            message: payload.message,
            page_path: payload.page_path,
            input_method: payload.input_method ?? "text",
            screenshot_data_url: payload.screenshot_data_url ?? null,
            user_agent: payload.user_agent ?? null,
            viewport_width: payload.viewport_width ?? null,
            viewport_height: payload.viewport_height ?? null
          }))
          return bugReportView(row)
        }))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const key = yield* CurrentKey
          // A tenant member (run scope through a console session) sees their own reports.
          const onlyUserId = key.userId !== undefined && key.scope !== "admin" ? key.userId : null
          const limit = query.limit ?? DEFAULT_LIMIT
          const before = yield* decodeCursor(query.cursor)
          const { rows, total } = yield* reports.list(key.projectId, onlyUserId, limit + 1, before)
          const page = toPage(rows, limit)
          return { items: page.items.map(bugReportView), total, next_cursor: page.next_cursor }
        }))
  })
)
