/**
 * Console accounts: sign-in, sign-out, password change and the signed-in user (`/v1/auth/...`),
 * invitation acceptance, tenants with their members, invitations and projects (`/v1/tenants/...`),
 * and bug reports of a project (`/v1/projects/{pid}/bug_reports`). The spec gives the schemas;
 * the paths are this service's (the spec shows none). Roles: README "Accounts".
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, Forbidden, NotFound, TooManyRequests, Unauthorized, ValidationError } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import {
  AcceptInvitationRequest,
  AcceptInvitationResponse,
  BugReportListResponse,
  BugReportResponse,
  ChangePasswordRequest,
  CreateBugReportRequest,
  CreateProjectRequest,
  CreateTenantRequest,
  CreateTenantResponse,
  EmailVerificationResponse,
  ForgotPasswordRequest,
  ForgotPasswordResponse,
  InvitationListResponse,
  InvitationResponse,
  InviteRequest,
  InviteResponse,
  LoginRequest,
  LoginResponse,
  MeResponse,
  MemberListResponse,
  MemberResponse,
  PasswordChanged,
  ProvidersResponse,
  ResetPasswordRequest,
  ResetPasswordResponse,
  SignedOut,
  SsoStartQuery,
  TenantListResponse,
  TenantProjectListResponse,
  TenantProjectResponse,
  UpdateMemberRequest,
  VerifyEmailRequest,
  VerifyEmailResponse
} from "../../domain/wire/accounts.ts"
import { ConsoleAuth } from "./accounts-security.ts"
import { InvitationIdParam, ProjectIdParam, TenantIdParam, UserIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const strict = { errors: "all", onExcessProperty: "error" } as const
const IdParam = Schema.String.check(Schema.isMaxCodePoints(64))

const loginErrors = [Unauthorized, TooManyRequests, ValidationError]

/** Declares response headers the handler sets beside the schema (cookies, a redirect's Location). */
const withResponseHeaders = (status: string, headers: Record<string, unknown>) => (operation: Record<string, any>): Record<string, any> => {
  const response = operation["responses"]?.[status]
  if (response !== undefined) response["headers"] = { ...response["headers"], ...headers }
  return operation
}
const sessionCookies = (when: string) => ({
  "Set-Cookie": {
    required: false,
    description: `${when}: wa_session (HttpOnly, SameSite=Strict) and wa_csrf, the console session and its CSRF token`,
    schema: { type: "string" }
  }
})
const redirectTo = (where: string) => ({ Location: { required: true, description: where, schema: { type: "string" } } })

export class AuthPublicApi extends HttpApiGroup.make("auth_public")
  .add(
    HttpApiEndpoint.post("login", "/v1/auth/login", {
      payload: LoginRequest,
      success: LoginResponse,
      error: loginErrors
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(OpenApi.Transform, withResponseHeaders("200", sessionCookies("Set for a cookie sign-in"))).annotate(
      OpenApi.Description,
      "Email and password sign-in. 401 unauthorized for a wrong email or password (the same answer for both); " +
        "429 rate_limit_exceeded with Retry-After after too many attempts for the account or from the address."
    ),
    HttpApiEndpoint.get("providers", "/v1/auth/providers", { success: ProvidersResponse }).annotate(
      OpenApi.Description,
      "Enabled SSO (OpenID Connect) providers for sign-in buttons; empty while none is configured."
    ),
    HttpApiEndpoint.get("ssoStart", "/v1/auth/sso/:provider_id/start", {
      params: { provider_id: IdParam },
      query: SsoStartQuery,
      success: HttpApiSchema.Empty(302),
      error: [NotFound, Unauthorized, ValidationError]
    }).annotate(OpenApi.Transform, withResponseHeaders("302", {
      ...redirectTo("The provider's authorization URL"),
      "Set-Cookie": { required: true, description: "The sign-in's state, bound to this browser (HttpOnly, SameSite=Lax, path /v1/auth/sso)", schema: { type: "string" } }
    })).annotate(
      OpenApi.Description,
      "Starts an SSO sign-in (OpenID Connect, authorization code with PKCE): 302 to the provider. `return_to` is a path " +
        "of this service (default /console/) the browser lands on once signed in."
    ),
    HttpApiEndpoint.get("ssoCallback", "/v1/auth/sso/:provider_id/callback", {
      params: { provider_id: IdParam },
      success: HttpApiSchema.Empty(302),
      error: [NotFound, Unauthorized, Conflict]
    }).annotate(OpenApi.Transform, withResponseHeaders("302", {
      ...redirectTo("return_to of the sign-in"),
      ...sessionCookies("Set once signed in (and the state cookie expired)")
    })).annotate(
      OpenApi.Description,
      "The provider's redirect: completes the sign-in, sets the console session cookies and answers 302 to return_to; " +
        "401 sso_failed when the sign-in cannot complete (unknown or used state, another browser, provider error, no verified email); " +
        "409 email_unverified when the account of that email has a password and an address nobody verified (reset its password by mail first)."
    ),
    HttpApiEndpoint.post("forgotPassword", "/v1/auth/password/forgot", {
      payload: ForgotPasswordRequest,
      success: ForgotPasswordResponse.annotate({ httpApiStatus: 202 }),
      error: [TooManyRequests, ValidationError]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Mails a password reset link (single use, 30 minutes) to the account with this email. The answer is the same " +
        "whether such an account exists. 429 rate_limit_exceeded after too many requests for the email or from the address."
    ),
    HttpApiEndpoint.post("resetPassword", "/v1/auth/password/reset", {
      payload: ResetPasswordRequest,
      success: ResetPasswordResponse,
      error: [NotFound, Conflict, ValidationError]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Sets a new password with the token of a reset mail. The address counts as verified and every session of the account " +
        "ends (sign in again). 404 token_not_found; 409 token_used / token_expired."
    ),
    HttpApiEndpoint.post("acceptInvitation", "/v1/invitations/accept", {
      payload: AcceptInvitationRequest,
      success: AcceptInvitationResponse,
      error: [Unauthorized, Forbidden, NotFound, Conflict, ValidationError, TooManyRequests]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Signed in: joins the invitation's tenant (the account's email must be the invited one). Not signed in: " +
        "creates the account for the invited email with `password`, then joins. 404 invitation_not_found for an " +
        "unknown token; 409 invitation_expired / invitation_revoked / invitation_accepted."
    )
  )
  .annotateMerge(OpenApi.annotations({ title: "Console sign-in" }))
{}

export class AccountApi extends HttpApiGroup.make("account")
  .add(
    HttpApiEndpoint.get("me", "/me", { success: MeResponse }),
    HttpApiEndpoint.post("logout", "/logout", { success: SignedOut })
      .annotate(OpenApi.Transform, withResponseHeaders("200", sessionCookies("Expired for a session signed in with the cookie"))),
    HttpApiEndpoint.post("changePassword", "/password", {
      payload: ChangePasswordRequest,
      success: PasswordChanged,
      error: [Unauthorized, ValidationError, TooManyRequests]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Changes the password and ends every other session of the user (this one stays signed in). A wrong current_password " +
        "counts as a sign-in attempt: 429 rate_limit_exceeded with Retry-After past the sign-in limit."
    ),
    HttpApiEndpoint.post("requestEmailVerification", "/email/verification", {
      success: EmailVerificationResponse,
      error: [TooManyRequests]
    }).annotate(
      OpenApi.Description,
      "Mails the signed-in user a link that verifies the account's address (single use, 24 hours). Nothing is sent when it is verified already."
    ),
    HttpApiEndpoint.post("verifyEmail", "/email/verify", {
      payload: VerifyEmailRequest,
      success: VerifyEmailResponse,
      error: [NotFound, Conflict, ValidationError]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Verifies the address with the token of the mail. Only a session of the same account can use it, so a mail that " +
        "someone else's account sent to your address cannot verify their account. 404 token_not_found; 409 token_used / token_expired."
    )
  )
  .middleware(RateLimit)
  .middleware(ConsoleAuth)
  .prefix("/v1/auth")
  .annotateMerge(OpenApi.annotations({
    title: "Console account",
    description: "Needs a console session: Authorization: Bearer was_... (bearer sessions) or the wa_session cookie " +
      "plus X-CSRF-Token on writes (cookie sessions). API keys get 403 here."
  }))
{}

// ---- tenants ---------------------------------------------------------------------------------

const TenantParam = { tid: TenantIdParam }
const tenantErrors = [NotFound, Forbidden, BadRequest]

export class TenantsApi extends HttpApiGroup.make("tenants")
  .add(
    HttpApiEndpoint.post("create", "/", {
      payload: CreateTenantRequest,
      success: CreateTenantResponse.annotate({ httpApiStatus: 201 }),
      error: Conflict
    }).annotate(HttpApi.PayloadParseOptions, strict),
    // The caller's tenants by id (ascending); the cursor is the last tenant id of the page.
    HttpApiEndpoint.get("list", "/", { query: PageQuery, success: TenantListResponse, error: BadRequest }),
    HttpApiEndpoint.get("members", "/:tid/members", {
      params: TenantParam,
      query: PageQuery,
      success: MemberListResponse,
      error: tenantErrors
    }),
    HttpApiEndpoint.patch("updateMember", "/:tid/members/:user_id", {
      params: { ...TenantParam, user_id: UserIdParam },
      payload: UpdateMemberRequest,
      success: MemberResponse,
      error: [...tenantErrors, Conflict, ValidationError]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Admins only: change a member's role and/or status (disable, re-enable). 409 last_admin when the tenant would keep no active admin."
    ),
    HttpApiEndpoint.post("invite", "/:tid/invitations", {
      params: TenantParam,
      payload: InviteRequest,
      success: InviteResponse.annotate({ httpApiStatus: 201 }),
      error: [...tenantErrors, Conflict]
    }).annotate(HttpApi.PayloadParseOptions, strict),
    HttpApiEndpoint.get("invitations", "/:tid/invitations", {
      params: TenantParam,
      query: PageQuery,
      success: InvitationListResponse,
      error: tenantErrors
    }),
    HttpApiEndpoint.delete("revokeInvitation", "/:tid/invitations/:invitation_id", {
      params: { ...TenantParam, invitation_id: InvitationIdParam },
      success: InvitationResponse,
      error: [...tenantErrors, Conflict]
    }),
    HttpApiEndpoint.get("projects", "/:tid/projects", {
      params: TenantParam,
      query: PageQuery,
      success: TenantProjectListResponse,
      error: tenantErrors
    }),
    HttpApiEndpoint.post("createProject", "/:tid/projects", {
      params: TenantParam,
      payload: CreateProjectRequest,
      success: TenantProjectResponse.annotate({ httpApiStatus: 201 }),
      error: tenantErrors
    }).annotate(HttpApi.PayloadParseOptions, strict)
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(ConsoleAuth)
  .prefix("/v1/tenants")
  .annotateMerge(OpenApi.annotations({
    title: "Tenants",
    description: "Tenants, members, invitations and projects. Needs a console session. A tenant you are not a member of " +
      "is 404 tenant_not_found; a disabled membership or a member's try at an admin operation is 403 forbidden."
  }))
{}

// ---- bug reports -----------------------------------------------------------------------------

export class BugReportsApi extends HttpApiGroup.make("bug_reports")
  .add(
    HttpApiEndpoint.post("create", "/", {
      params: ProjectIdParam,
      payload: CreateBugReportRequest,
      success: BugReportResponse.annotate({ httpApiStatus: 201 }),
      error: ValidationError
    }).annotate(HttpApi.PayloadParseOptions, strict),
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: PageQuery,
      success: BugReportListResponse,
      error: BadRequest
    }).annotate(OpenApi.Description, "Newest first. API keys and tenant admins see every report of the project; a member sees their own.")
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/bug_reports")
  .annotateMerge(OpenApi.annotations({ title: "Bug reports" }))
{}
