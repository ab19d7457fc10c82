/**
 * Handlers of /v1/projects/{pid}/safety (admin keys only, reads included: the boundary is for
 * admins to see and set), and the create-time check DoAnything's handlers apply (403
 * safety_boundary_violated, nothing created).
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ApiKeys } from "../../auth/api-keys.ts"
import { SafetyBoundaryViolated, SafetyPolicies, type StoredPolicy } from "../../safety/service.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey, requireScope } from "../api/security.ts"
import { toHttpError } from "../domain-errors.ts"
import { Forbidden } from "../errors.ts"
import { requireFreshScope } from "./api-keys.ts"

export const safetyView = (policy: StoredPolicy) => ({
  allowed_domains: [...policy.allowed_domains],
  denied_domains: [...policy.denied_domains],
  confirm_actions: [...policy.confirm_actions],
  updated_at: policy.updated_at === null ? null : policy.updated_at.toISOString()
})

/** The envelope of a create refused by the boundary. */
export const safetyForbidden = (e: SafetyBoundaryViolated) =>
  new Forbidden({
    code: "safety_boundary_violated",
    detail: `refused by the project's safety boundary (/v1/projects/{pid}/safety): ${e.field} names ${e.url}; ${e.reason}`,
    extra: { reason: e.reason, field: e.field, url: e.url, domain: e.domain, rule: e.rule }
  })

/** DoAnything create/continue: 403 safety_boundary_violated when a URL of the body is outside the project's boundary. */
export const checkCreateSafety = (safety: SafetyPolicies["Service"], projectId: string, body: object) =>
  safety.checkCreate(projectId, body as Record<string, unknown>).pipe(
    Effect.catchTag("SafetyBoundaryViolated", (e) => Effect.fail(safetyForbidden(e)))
  )

export const SafetyHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "safety",
  Effect.fn(function*(handlers) {
    const safety = yield* SafetyPolicies
    const keys = yield* ApiKeys
    return handlers
      .handle("get", () =>
        Effect.gen(function*() {
          yield* requireScope("admin")
          const { projectId } = yield* CurrentKey
          return safetyView(yield* safety.get(projectId))
        }))
      .handle("put", ({ payload }) =>
        Effect.gen(function*() {
          yield* requireFreshScope(keys, "admin")
          const { projectId } = yield* CurrentKey
          const stored = yield* safety.put(projectId, payload).pipe(Effect.catchTag("InvalidField", (e) => Effect.fail(toHttpError(e))))
          return safetyView(stored)
        }))
  })
)
