/**
 * Delegation over HTTP (src/http/api/delegation.ts): the signed-request middleware, the handlers
 * of the delegation service, access keys and delegations, and the consent page.
 *
 * The consent page is server-rendered HTML at /v1/delegations/consent?grant_id=..., for a user
 * signed in with a console cookie session. The session cookie is SameSite=Strict, so a browser
 * arriving from the application's site (a cross-site navigation) does not send it: the page then
 * reloads itself once from this origin (a same-site navigation, which does), and only when there
 * is still no session does it show a sign-in form (email and password, and the SSO providers).
 * Approve and deny are a form post carrying the session's CSRF token; the page may not be framed.
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Sso } from "../../accounts/sso.ts"
import { csrfTokenFor, safeEqual } from "../../accounts/session-tokens.ts"
import { Users } from "../../accounts/users.ts"
import type { AccessKeyRow, GrantRow } from "../../delegation/delegations.ts"
import { Delegations } from "../../delegation/delegations.ts"
import { type DelegationError } from "../../delegation/errors.ts"
import { isDelegationScope } from "../../delegation/scopes.ts"
import { bodyHash } from "../../delegation/signing.ts"
import { httpErrors, toHttpError } from "../domain-errors.ts"
import { envelopeBody, jsonResponse, statusOf, validationError } from "../errors.ts"
import { AppConfig } from "../../config/config.ts"
import { CurrentCaller } from "../api/security.ts"
import { makeAuthFailureLimiter, refuseBlocked } from "../middleware/auth-failure-limit.ts"
import { CurrentUser, SESSION_COOKIE } from "../api/accounts-security.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentAccessKey, SignedRequest } from "../api/delegation.ts"
import { clientAddress } from "../middleware/console-session.ts"
import { cursorPage } from "../pagination.ts"
import { iso } from "../views/timestamps.ts"
import { publicBaseUrl } from "./do-anything.ts"
import { escapeHtml } from "../views/control-page.ts"
import { cspNonce, type PagePolicy, pageSecurityHeaders } from "../page-security.ts"
import { cookieOptions, withSessionCookies } from "./accounts.ts"
import { ProjectId } from "../../domain/run.ts"
import { DelegationGrantId } from "../../domain/id-schemas.ts"

export const SignedRequestLive = Layer.effect(
  SignedRequest,
  Effect.gen(function*() {
    const delegations = yield* Delegations
    const config = yield* AppConfig
    // Bad signatures count against the address like bad API keys (WA_AUTH_FAILURES_PER_MINUTE).
    const failures = makeAuthFailureLimiter(config.authFailuresPerMinute)
    return SignedRequest.of({
      signature: Effect.fnUntraced(function*(httpEffect, { credential: _ }) {
        const request = yield* HttpServerRequest.HttpServerRequest
        const authorization = request.headers["authorization"] ?? ""
        const address = clientAddress(request)
        const blocked = refuseBlocked(failures, address, authorization, "wrongly signed requests")
        if (blocked !== undefined) return yield* blocked
        // The body the guard already read (cached on the request).
        const body = yield* request.arrayBuffer.pipe(Effect.orElseSucceed(() => new ArrayBuffer(0)))
        const caller = yield* delegations.verifySigned({
          authorization,
          method: request.method,
          pathWithQuery: request.url,
          bodySha256: bodyHash(new Uint8Array(body))
        }).pipe(Effect.tapError(() => Effect.sync(() => failures.recordFailure(address, Date.now()))), httpErrors)
        failures.recordSuccess(authorization)
        yield* Effect.annotateCurrentSpan({ access_key_id: caller.accessKeyId })
        // The rate limit and idempotency count per access key.
        return yield* httpEffect.pipe(
          Effect.provideService(CurrentAccessKey, caller),
          Effect.provideService(CurrentCaller, { space: "delegation", id: caller.accessKeyId })
        )
      })
    })
  })
)

const iso8601 = (date: Date) => date.toISOString()

const accessKeyView = (row: AccessKeyRow) => ({
  id: row.id,
  tenant_id: row.tenant_id,
  name: row.name,
  redirect_uris: [...row.redirect_uris],
  created_by_user_id: row.created_by_user_id,
  created_at: iso8601(row.created_at),
  revoked_at: iso(row.revoked_at),
  last_used_at: iso(row.last_used_at)
})

const grantView = (row: GrantRow) => ({
  id: row.id,
  tenant_id: row.tenant_id,
  access_key_id: row.access_key_id,
  agent: row.agent,
  scopes: [...row.scopes],
  status: row.status,
  user_id: row.user_id,
  external_user_id: row.external_user_id,
  project_id: row.project_id,
  audit_id: row.audit_id,
  expires_in: row.expires_in,
  token_expires_at: iso(row.token_expires_at),
  created_at: iso8601(row.created_at),
  revoked_at: iso(row.revoked_at)
})

export const DelegationServiceHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "delegation_service",
  Effect.fn(function*(handlers) {
    const delegations = yield* Delegations
    return handlers
      .handle("createDelegation", ({ payload }) =>
        Effect.gen(function*() {
          const caller = yield* CurrentAccessKey
          const unknown = payload.scopes.flatMap((scope, index) => isDelegationScope(scope) ? [] : [{ scope, index }])
          if (unknown.length > 0) {
            return yield* validationError(
              `unknown scope(s): ${unknown.map((u) => u.scope).join(", ")}`,
              unknown.map((u) => ({ loc: ["body", "scopes", u.index], msg: "unknown scope; see README \"Delegation\" for the list", type: "enum" }))
            )
          }
          const grant = yield* httpErrors(delegations.request(caller, {
            agent: payload.agent,
            scopes: payload.scopes,
            redirectUri: payload.redirectUri,
            state: payload.state,
            userId: payload.userId,
            expiresIn: payload.expiresIn,
            projectId: payload.projectId
          }))
          const base = yield* publicBaseUrl
          return {
            grantId: grant.id,
            authorizationUrl: `${base}/v1/delegations/consent?grant_id=${encodeURIComponent(grant.id)}`,
            expiresAt: iso8601(grant.consent_expires_at)
          }
        }))
      .handle("completeDelegation", ({ payload }) =>
        Effect.gen(function*() {
          const caller = yield* CurrentAccessKey
          const { grant, token } = yield* httpErrors(delegations.complete(caller, payload.grantId, payload.code, payload.state))
          return {
            grantId: grant.id,
            delegationToken: token,
            tokenType: "Bearer" as const,
            expiresIn: grant.expires_in,
            expiresAt: iso8601(grant.token_expires_at!),
            scopes: [...grant.scopes],
            auditId: grant.audit_id,
            projectId: grant.project_id!,
            userId: grant.external_user_id,
            consentUserId: grant.user_id!,
            agent: grant.agent
          }
        }))
  })
)

export const AccessKeysHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "access_keys",
  Effect.fn(function*(handlers) {
    const delegations = yield* Delegations
    return handlers
      .handle("create", ({ params, payload }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          const { row, secret } = yield* httpErrors(
            delegations.createAccessKey(params.tid, userId, payload.name ?? null, payload.redirect_uris ?? [])
          )
          return { ...accessKeyView(row), secret_key: secret }
        }))
      .handle("list", ({ params, query }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          return yield* cursorPage(query, (limit, before) => httpErrors(delegations.listAccessKeys(params.tid, userId, limit, before)), accessKeyView)
        }))
      .handle("revoke", ({ params }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          return accessKeyView(yield* httpErrors(delegations.revokeAccessKey(params.tid, userId, params.access_key_id)))
        }))
  })
)

export const DelegationsHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "delegations",
  Effect.fn(function*(handlers) {
    const delegations = yield* Delegations
    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          return yield* cursorPage(query, (limit, before) => delegations.listGrants(userId, limit, before), grantView)
        }))
      .handle("revoke", ({ params }) =>
        Effect.gen(function*() {
          const { userId } = yield* CurrentUser
          return grantView(yield* httpErrors(delegations.revokeGrant(params.grant_id, userId)))
        }))
  })
)

// ---- the consent page ------------------------------------------------------------------------

/**
 * The consent pages' policy. Their one inline style runs by the response's nonce. Their forms post
 * to the service; the decision form's answer is a redirect to the application, and Chromium holds
 * that redirect to form-action too, so the decision page also allows the redirect URI's origin.
 * Referrer same-origin (not no-referrer): Chromium then sends the page's Origin with its form
 * posts, which are checked.
 */
const consentPolicy = (nonce: string | undefined, redirectUri?: string): PagePolicy => ({
  directives: [
    ...(nonce === undefined ? [] : [`style-src 'nonce-${nonce}'`]),
    `form-action 'self'${redirectUri === undefined ? "" : ` ${formTargetSource(redirectUri)}`}`
  ],
  referrer: "same-origin"
})

/** The CSP source of a redirect URI: its origin, or its scheme for an app's own scheme (myapp://...). */
const formTargetSource = (uri: string) => {
  const url = new URL(uri)
  return url.protocol === "http:" || url.protocol === "https:" ? url.origin : url.protocol
}

/** The headers of the consent routes' JSON refusals. */
const pageHeaders = { ...pageSecurityHeaders(consentPolicy(undefined)), "cache-control": "no-store" }

const page = (status: number, title: string, body: string, head = "", redirectUri?: string) => {
  const nonce = cspNonce()
  return HttpServerResponse.text(
    `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">${head}` +
      `<title>${escapeHtml(title)}</title><style nonce="${nonce}">body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem}` +
      `button{padding:.5rem 1rem;margin-right:.5rem}label{display:block;margin:.5rem 0}</style></head>` +
      `<body><h1>${escapeHtml(title)}</h1>${body}</body></html>`,
    { status, contentType: "text/html; charset=utf-8", headers: { ...pageSecurityHeaders(consentPolicy(nonce, redirectUri)), "cache-control": "no-store" } }
  )
}

const scopeLabels: Record<string, string> = { read: "read", manage: "create, change and cancel" }
const describeScope = (scope: string) => {
  const match = /^web_agent\.([a-z_]+):(read|manage)$/.exec(scope)
  return match === null ? scope : `${scopeLabels[match[2]!]} ${match[1]!.replace("_", " ")} (${scope})`
}

/**
 * A refusal on the consent page: the contract's JSON envelope like every other non-2xx response
 * (the browser shows it as text), with the same codes as the API.
 */
const errorPage = (error: DelegationError) => {
  const http = toHttpError(error)
  return jsonResponse(statusOf(http) ?? 400, envelopeBody(http.code, http.detail, http.extra), pageHeaders)
}
const refusal = (status: number, code: string, detail: string) => jsonResponse(status, envelopeBody(code, detail), pageHeaders)

const signInPage = (grantId: string, providers: ReadonlyArray<{ provider_id: string; display_name: string }>, message = "") =>
  page(
    200,
    "Sign in to continue",
    (message === "" ? "" : `<p id="error">${escapeHtml(message)}</p>`) +
      `<p>An application asks to act for you. Sign in to review its request.</p>` +
      `<form method="post" action="/v1/delegations/consent/sign-in">` +
      `<input type="hidden" name="grant_id" value="${escapeHtml(grantId)}">` +
      `<label>Email <input name="email" type="email" autocomplete="username" required></label>` +
      `<label>Password <input name="password" type="password" autocomplete="current-password" required></label>` +
      `<button type="submit" name="sign_in">Sign in</button></form>` +
      providers.map((p) =>
        `<p><a href="/v1/auth/sso/${encodeURIComponent(p.provider_id)}/start?return_to=${
          encodeURIComponent(`/v1/delegations/consent?grant_id=${encodeURIComponent(grantId)}`)
        }">Sign in with ${escapeHtml(p.display_name)}</a></p>`
      ).join("")
  )

/** A form post must come from this service's own pages (Origin, when the browser sends it). */
const sameOrigin = (request: HttpServerRequest.HttpServerRequest, base: string) => {
  const origin = request.headers["origin"]
  return origin === undefined || origin === "null" ? origin === undefined : origin === new URL(base).origin
}

const formOf = (request: HttpServerRequest.HttpServerRequest) =>
  request.text.pipe(Effect.map((text) => new URLSearchParams(text)), Effect.orElseSucceed(() => new URLSearchParams()))

export const ConsentRoutes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const users = yield* Users
    const delegations = yield* Delegations
    const sso = yield* Sso

    /** The signed-in cookie session of the request, or undefined. */
    const cookieSession = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const token = request.cookies[SESSION_COOKIE]
        if (token === undefined || token === "") return undefined
        const session = yield* users.authenticate(token)
        return typeof session === "string" || session.kind !== "cookie" ? undefined : { ...session, token }
      })

    yield* router.add("GET", "/v1/delegations/consent", Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const url = new URL(request.url, "http://service")
      const grantId = url.searchParams.get("grant_id") ?? ""
      const session = yield* cookieSession(request)
      if (session === undefined) {
        if (url.searchParams.get("bounce") === null) {
          // Reload once from this origin: a same-site navigation carries the SameSite=Strict cookie.
          url.searchParams.set("bounce", "1")
          const again = escapeHtml(`${url.pathname}${url.search}`)
          return page(200, "Checking your session", `<p><a href="${again}">Continue</a></p>`, `<meta http-equiv="refresh" content="0;url=${again}">`)
        }
        return signInPage(grantId, sso.providers)
      }
      // The grant id enters from the consent URL's query (an unknown one is the store's 404).
      const view = yield* Effect.result(delegations.consentView(DelegationGrantId.make(grantId), session.userId))
      if (view._tag === "Failure") return errorPage(view.failure)
      const { grant, tenantName, projects } = view.success
      const projectField = grant.requested_project_id !== null
        ? `<p>Project: <strong>${escapeHtml(projects[0]?.name ?? grant.requested_project_id)}</strong></p>` +
          `<input type="hidden" name="project_id" value="${escapeHtml(grant.requested_project_id)}">`
        : `<label>Project <select name="project_id">${
          projects.map((p) => `<option value="${escapeHtml(p.id)}">${escapeHtml(p.name)} (${escapeHtml(p.id)})</option>`).join("")
        }</select></label>`
      const hours = grant.expires_in >= 3600 ? `${(grant.expires_in / 3600).toFixed(grant.expires_in % 3600 === 0 ? 0 : 1)} hours` : `${Math.round(grant.expires_in / 60)} minutes`
      return page(
        200,
        "Allow access?",
        `<p><strong id="agent">${escapeHtml(grant.agent)}</strong> asks to act for you (${escapeHtml(session.email)}) in ` +
          `<strong>${escapeHtml(tenantName)}</strong>, as its user <code>${escapeHtml(grant.external_user_id)}</code>, for <strong id="expiry">${hours}</strong>. It may:</p>` +
          `<ul id="scopes">${grant.scopes.map((s) => `<li data-scope="${escapeHtml(s)}">${escapeHtml(describeScope(s))}</li>`).join("")}</ul>` +
          `<form method="post" action="/v1/delegations/consent">` +
          `<input type="hidden" name="grant_id" value="${escapeHtml(grant.id)}">` +
          `<input type="hidden" name="csrf_token" value="${escapeHtml(csrfTokenFor(session.token))}">` +
          projectField +
          `<p><button type="submit" name="decision" value="approve">Allow</button>` +
          `<button type="submit" name="decision" value="deny">Deny</button></p></form>` +
          `<p>You can revoke it any time (DELETE /v1/delegations/${escapeHtml(grant.id)}).</p>`,
        "",
        grant.redirect_uri
      )
    }))

    yield* router.add("POST", "/v1/delegations/consent", Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const base = yield* publicBaseUrl
      const form = yield* formOf(request)
      const grantId = form.get("grant_id") ?? ""
      const session = yield* cookieSession(request)
      if (session === undefined) return signInPage(grantId, sso.providers, "Your session has ended; sign in again.")
      if (!sameOrigin(request, base) || !safeEqual(form.get("csrf_token") ?? "", csrfTokenFor(session.token))) {
        return refusal(403, "csrf_failed", "this form was not sent from the consent page; open it again")
      }
      const decision = form.get("decision")
      if (decision !== "approve" && decision !== "deny") {
        return jsonResponse(422, envelopeBody("validation_error", "decision must be approve or deny", { errors: [{ loc: ["body", "decision"], msg: "approve or deny", type: "enum" }] }), pageHeaders)
      }
      // The grant and project ids enter from the consent form (decide checks the project is one of the tenant's).
      const projectId = form.get("project_id") ?? ""
      const result = yield* Effect.result(
        delegations.decide(DelegationGrantId.make(grantId), session.userId, decision, projectId === "" ? undefined : ProjectId.make(projectId))
      )
      if (result._tag === "Failure") return errorPage(result.failure)
      return HttpServerResponse.redirect(result.success, { status: 303, headers: { "cache-control": "no-store", "referrer-policy": "no-referrer" } })
    }))

    yield* router.add("POST", "/v1/delegations/consent/sign-in", Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const base = yield* publicBaseUrl
      const form = yield* formOf(request)
      const grantId = form.get("grant_id") ?? ""
      if (!sameOrigin(request, base)) return refusal(403, "csrf_failed", "this form was not sent from the sign-in page")
      const email = form.get("email") ?? ""
      const password = form.get("password") ?? ""
      if (email.length < 3 || email.length > 255 || password.length < 1 || password.length > 128) {
        return signInPage(grantId, sso.providers, "Give your email and password.")
      }
      const signedIn = yield* Effect.result(users.login({ email, password, address: clientAddress(request), kind: "cookie" }))
      if (signedIn._tag === "Failure") {
        const failure = signedIn.failure
        if (failure._tag === "LoginThrottled") {
          return jsonResponse(429, envelopeBody("rate_limit_exceeded", `too many sign-in attempts; retry after ${failure.retryAfterSeconds} s`, {
            retry_after_seconds: failure.retryAfterSeconds
          }), { ...pageHeaders, "retry-after": String(failure.retryAfterSeconds) })
        }
        return signInPage(grantId, sso.providers, "The email or the password is wrong.")
      }
      const redirect = HttpServerResponse.redirect(`/v1/delegations/consent?grant_id=${encodeURIComponent(grantId)}&bounce=1`, { status: 303 })
      return yield* withSessionCookies(redirect, signedIn.success.token, signedIn.success.session.expiresAt, yield* cookieOptions)
    }))
  })
)

