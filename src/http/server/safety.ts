/**
 * Handlers of /v1/projects/{pid}/safety (admin keys only, reads included: the boundary is for
 * admins to see and set), and the create-time check DoAnything's handlers apply (403
 * safety_boundary_violated, nothing created).
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ApiKeys } from "../../auth/api-keys.ts"
import { SafetyPolicies, type StoredPolicy } from "../../safety/service.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey, requireScope } from "../api/security.ts"
import { httpErrors, toHttpError } from "../domain-errors.ts"
import { requireFreshScope } from "./api-keys.ts"
import type { ProjectId } from "../../domain/run.ts"

export const safetyView = (policy: StoredPolicy) => ({
  allowed_domains: [...policy.allowed_domains],
  denied_domains: [...policy.denied_domains],
  confirm_actions: [...policy.confirm_actions],
  updated_at: policy.updated_at === null ? null : policy.updated_at.toISOString()
})

/** DoAnything create/continue: 403 safety_boundary_violated when a URL of the body is outside the project's boundary. */
export const checkCreateSafety = (safety: SafetyPolicies["Service"], projectId: ProjectId, body: object) =>
  httpErrors(safety.checkCreate(projectId, body as Record<string, unknown>))

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
