/**
 * The safety boundary of a project (`/v1/projects/{pid}/safety`): the domains DoAnything runs may
 * browse and the actions a person confirms first. Admin keys only.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Forbidden, ValidationError } from "../../domain/api-errors.ts"
import { PutSafetyPolicyRequest, SafetyPolicyResponse } from "../../domain/wire/safety.ts"
import { ProjectIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const strict = { errors: "all", onExcessProperty: "error" } as const

export class SafetyApi extends HttpApiGroup.make("safety")
  .add(
    HttpApiEndpoint.get("get", "/", { params: ProjectIdParam, success: SafetyPolicyResponse, error: Forbidden })
      .annotate(OpenApi.Description, "Admin keys only. A project that never set a policy has the empty one (no boundary)."),
    HttpApiEndpoint.put("put", "/", {
      params: ProjectIdParam,
      payload: PutSafetyPolicyRequest,
      success: SafetyPolicyResponse,
      error: [Forbidden, ValidationError]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Admin keys only. Replaces the whole policy (an omitted list is empty). Applies to runs started afterwards. " +
        "A create whose URLs (http(s) URLs in instructions) break it is 403 safety_boundary_violated; a run that navigates " +
        "outside it (navigate, a click, a redirect, a pop-up) ends failed with error.code safety_boundary_violated and the reason " +
        "in error.extra.reason, the refused step not charged."
    )
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/safety")
  .annotateMerge(OpenApi.annotations({
    title: "Safety",
    description: "A project's safety boundary for DoAnything runs: domain allow and deny lists, and actions (payment, account deletion, " +
      "sending a message) a person confirms through ask_human before the agent clicks."
  }))
{}
