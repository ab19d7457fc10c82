/**
 * The safety boundary of a project (`/v1/projects/{pid}/safety`): the domains DoAnything runs may
 * browse and the actions a person confirms first. Admin keys only.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { CONFIRM_CATEGORIES, MAX_DOMAIN_LENGTH, MAX_DOMAINS } from "../../domain/limits.ts"
import { Forbidden, ValidationError } from "../../domain/api-errors.ts"
import { MaxString, ProjectIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const Domains = (description: string) =>
  Schema.Array(MaxString(MAX_DOMAIN_LENGTH)).check(Schema.isMaxLength(MAX_DOMAINS)).annotate({ description })

const allowedDescription = "domains runs may open (empty: any domain not denied); an entry matches itself and its subdomains. " +
  "Host names or IP addresses, normalised: lower case, punycode (IDN), no trailing dot, a leading *. dropped; no scheme, port or path"
const deniedDescription = "domains runs may never open (wins over allowed_domains); matched as allowed_domains"
const confirmDescription = `action categories a person confirms through ask_human before the agent clicks (${CONFIRM_CATEGORIES.join(", ")}); default none`

export const SafetyPolicyResponse = Schema.Struct({
  allowed_domains: Schema.Array(Schema.String).annotate({ description: allowedDescription }),
  denied_domains: Schema.Array(Schema.String).annotate({ description: deniedDescription }),
  confirm_actions: Schema.Array(Schema.String).annotate({ description: confirmDescription }),
  updated_at: Schema.NullOr(Schema.String).annotate({ description: "null while the project has never set a policy" })
})

export const PutSafetyPolicyRequest = Schema.Struct({
  allowed_domains: Schema.optional(Domains(allowedDescription)),
  denied_domains: Schema.optional(Domains(deniedDescription)),
  confirm_actions: Schema.optional(Schema.Array(MaxString(64)).check(Schema.isMaxLength(CONFIRM_CATEGORIES.length * 2)).annotate({ description: confirmDescription }))
})

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
