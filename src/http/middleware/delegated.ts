/**
 * A delegation token (`Authorization: Bearer wad_...`, src/delegation/) on a project endpoint: it
 * acts for the user who approved the delegation, on the grant's project only, with what a `run`
 * key may do, and only on the endpoints its scopes name (src/delegation/scopes.ts). Checked on
 * every request against the database (revocation, expiry, the user's membership of the project's
 * tenant), so a revocation bites at the next request on every node.
 *
 * 401 unauthorized: unknown, expired or revoked token. 403 forbidden: another project, an endpoint
 * no scope covers, or the user's membership is gone or disabled. 403 insufficient_scope: the
 * endpoint needs a scope the token was not granted (extra.required_scope, extra.granted_scopes).
 */
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest } from "effect/http"
import type { Delegations } from "../../delegation/delegations.ts"
import { requiredScope } from "../../delegation/scopes.ts"
import { Forbidden, forbidden, unauthorized } from "../errors.ts"
import { provideKey } from "../api/security.ts"
import { type AuthFailureLimiter, refuseBlocked } from "./auth-failure-limit.ts"
import { clientAddress } from "./console-session.ts"

const failureDetail = {
  malformed: "the delegation token is malformed",
  unknown: "the delegation token is not known",
  expired: "the delegation token has expired; start a new delegation",
  revoked: "the delegation token was revoked"
} as const

export const authenticateDelegated = <A, E, R>(
  delegations: Delegations["Service"],
  failures: AuthFailureLimiter,
  request: HttpServerRequest.HttpServerRequest,
  token: string,
  httpEffect: Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const address = clientAddress(request)
    const blocked = refuseBlocked(failures, address, token, "requests with a wrong credential")
    if (blocked !== undefined) return yield* blocked
    const identity = yield* delegations.authenticateToken(token)
    if (identity === "membership") return yield* forbidden("the user who approved this delegation is no longer an active member of the project's tenant")
    if (typeof identity === "string") {
      failures.recordFailure(address, Date.now())
      return yield* unauthorized(failureDetail[identity])
    }
    failures.recordSuccess(token)
    const route = yield* HttpRouter.RouteContext
    const pid = route.params["pid"]
    if (pid !== undefined && pid !== identity.projectId) return yield* forbidden("this delegation token is not authorized for that project")
    const needed = requiredScope(request.method, route.route.path)
    if (needed === undefined) return yield* forbidden("delegation tokens cannot use this endpoint (API keys, webhooks, billing, inbox and bug reports are not delegable)")
    if (!identity.scopes.includes(needed)) {
      return yield* new Forbidden({
        code: "insufficient_scope",
        detail: `this endpoint needs the scope ${needed}, which the delegation did not grant`,
        extra: { required_scope: needed, granted_scopes: identity.scopes }
      })
    }
    yield* Effect.annotateCurrentSpan({ project_id: identity.projectId, user_id: identity.userId, delegation_id: identity.grantId, audit_id: identity.auditId })
    return yield* provideKey(httpEffect, {
      keyId: identity.grantId,
      projectId: identity.projectId,
      scope: "run",
      revoked: false,
      userId: identity.userId
    })
  })
