/**
 * Bearer authentication: 401 for a missing, malformed, unknown or revoked-past-grace key, 403 for
 * a valid key used on another project's path, 429 for an address that keeps failing (see
 * auth-failure-limit.ts). Provides CurrentKey (with the key's scope, and whether it is revoked and
 * in its grace window) and CurrentCaller (for the rate limit and idempotency) to everything after
 * it; the handlers that need a scope check it with requireScope.
 */
import { Effect, Layer, Redacted } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { ApiKeys } from "../../auth/api-keys.ts"
import { AppConfig } from "../../config/config.ts"
import { forbidden, unauthorized } from "../errors.ts"
import { makeAuthFailureLimiter, refuseBlocked } from "./auth-failure-limit.ts"
import { Authentication, provideKey } from "../api/security.ts"
import { ProjectId } from "../../domain/run.ts"
import { Users } from "../../accounts/users.ts"
import { clientAddress, consoleCredential, verifyConsoleCredential } from "./console-session.ts"
import { Delegations } from "../../delegation/delegations.ts"
import { DELEGATION_TOKEN_PREFIX } from "../../delegation/signing.ts"
import { authenticateDelegated } from "./delegated.ts"

const failureDetail = {
  malformed: "the API key is missing or malformed; send Authorization: Bearer wa_...",
  unknown: "the API key is not known",
  revoked: "the API key was revoked and its grace window has ended"
} as const

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const keys = yield* ApiKeys
    const config = yield* AppConfig
    const failures = makeAuthFailureLimiter(config.authFailuresPerMinute)
    const users = yield* Users
    const delegations = yield* Delegations
    return Authentication.of({
      bearer: Effect.fnUntraced(function*(httpEffect, { credential }) {
        const token = Redacted.value(credential)
        const request = yield* HttpServerRequest.HttpServerRequest
        // A signed-in console user (was_ bearer token or the session cookie) acts on the projects
        // of their tenants with their role there: admin as an admin key, member as a run key.
        // A delegation token (wad_...): the consenting user on the grant's project, for its scopes only.
        if (token.startsWith(DELEGATION_TOKEN_PREFIX)) return yield* authenticateDelegated(delegations, failures, request, token, httpEffect)
        const console = consoleCredential(request, token)
        if (console !== undefined) {
          // The project id enters here, from the path: branded once, for every call below.
          const pathPid = (yield* HttpRouter.RouteContext).params["pid"]
          if (pathPid === undefined) {
            // A bad session is still 401; a good one is refused for want of a project.
            yield* verifyConsoleCredential(users, failures, request, console)
            return yield* forbidden("a console session acts on a project named in the path (/v1/projects/{pid}/...)")
          }
          const pid = ProjectId.make(pathPid)
          // The session and the user's role in the project's tenant in one statement.
          const session = yield* verifyConsoleCredential(users, failures, request, console, (token) => users.authenticateOnProject(token, pid))
          const access = session.access
          if (access === "disabled") return yield* forbidden("your membership of this project's tenant is disabled")
          if (access === "none") return yield* forbidden("you are not a member of a tenant that holds this project")
          yield* Effect.annotateCurrentSpan({ project_id: pid, user_id: session.userId })
          return yield* provideKey(httpEffect, {
            keyId: session.userId,
            // The path's project, which authenticateOnProject just found the user may act on.
            projectId: pid,
            scope: access.role === "admin" ? "admin" : "run",
            revoked: false,
            userId: session.userId
          })
        }
        const address = clientAddress(request)
        const blocked = refuseBlocked(failures, address, token, "requests with a missing or wrong API key")
        if (blocked !== undefined) return yield* blocked
        const result = token === "" ? "malformed" as const : yield* keys.authenticate(token)
        if (typeof result === "string") {
          failures.recordFailure(address, Date.now())
          return yield* unauthorized(failureDetail[result])
        }
        failures.recordSuccess(token)
        const route = yield* HttpRouter.RouteContext
        const pid = route.params["pid"]
        if (pid !== undefined && pid !== result.project_id) {
          return yield* forbidden("this API key is not authorized for that project")
        }
        yield* Effect.annotateCurrentSpan({ project_id: result.project_id, api_key_id: result.id })
        return yield* provideKey(httpEffect, {
          keyId: result.id,
          projectId: result.project_id,
          scope: result.scope,
          // authenticate refuses a key past its grace window, so a set grace_until means "in it".
          revoked: result.grace_until !== null
        })
      })
    })
  })
)
