/**
 * Bearer authentication: 401 for a missing, malformed, unknown or revoked-past-grace key, 403 for
 * a valid key used on another project's path. Provides CurrentKey (with the key's scope, and
 * whether it is revoked and in its grace window) to everything after it; the handlers that need a
 * scope check it with requireScope.
 */
import { Effect, Layer, Redacted } from "effect"
import { HttpRouter } from "effect/http"
import { ApiKeys } from "../../auth/api-keys.ts"
import { forbidden, unauthorized } from "../../domain/errors.ts"
import { Authentication, CurrentKey } from "../api/security.ts"

const failureDetail = {
  malformed: "the API key is missing or malformed; send Authorization: Bearer wa_...",
  unknown: "the API key is not known",
  revoked: "the API key was revoked and its grace window has ended"
} as const

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const keys = yield* ApiKeys
    return Authentication.of({
      bearer: Effect.fnUntraced(function*(httpEffect, { credential }) {
        const token = Redacted.value(credential)
        if (token === "") return yield* unauthorized(failureDetail.malformed)
        const result = yield* keys.authenticate(token)
        if (typeof result === "string") return yield* unauthorized(failureDetail[result])
        const route = yield* HttpRouter.RouteContext
        const pid = route.params["pid"]
        if (pid !== undefined && pid !== result.project_id) {
          return yield* forbidden("this API key is not authorized for that project")
        }
        yield* Effect.annotateCurrentSpan({ project_id: result.project_id, api_key_id: result.id })
        return yield* Effect.provideService(httpEffect, CurrentKey, {
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
