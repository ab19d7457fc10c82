/**
 * Console accounts on the wire: sign-in, password and email verification, the signed-in user,
 * invitations, tenants with their members and projects, and bug reports
 * (src/http/api/accounts.ts). Roles: README "Accounts".
 */
import { Schema } from "effect"
import { BugReportStatuses } from "../bug-report.ts"
import { MaxString, OptionalNullable, Timestamp } from "../schemas.ts"
import { secretField } from "./common.ts"

const Bounded = (min: number, max: number) => Schema.String.check(Schema.isMinCodePoints(min), Schema.isMaxCodePoints(max))
const Email = Bounded(3, 255)
const InviteEmail = Email.check(Schema.isPattern(/^[^\s@]+@[^\s@]+$/u))
export const Role = Schema.Literals(["admin", "member"])

// ---- sign-in ---------------------------------------------------------------------------------

export const LoginRequest = Schema.Struct({
  email: Email,
  password: Bounded(1, 128),
  session: Schema.optional(Schema.Literals(["cookie", "bearer"])).annotate({
    description: "cookie (default): the session is set as the HttpOnly wa_session cookie and writes need X-CSRF-Token; " +
      "bearer: the response carries session_token for Authorization: Bearer (programs; no cookie is set)"
  })
})

export const LoginResponse = Schema.Struct({
  user_id: Schema.String,
  email: Schema.String,
  display_name: Schema.NullOr(Schema.String),
  session: Schema.Literals(["cookie", "bearer"]),
  session_token: Schema.NullOr(Schema.String).annotate({ description: "was_...; only for session: bearer (null for cookie sessions)" }),
  csrf_token: Schema.NullOr(Schema.String).annotate({ description: "send as X-CSRF-Token on cookie-authenticated writes; null for bearer sessions" }),
  expires_at: Timestamp
})

export const ForgotPasswordRequest = Schema.Struct({ email: Email })
export const ForgotPasswordResponse = Schema.Struct({ accepted: Schema.Boolean })
export const ResetPasswordRequest = Schema.Struct({
  token: Bounded(8, 255).annotate({ description: "the token of the mailed link (/console/reset-password?token=...)" }),
  new_password: Bounded(8, 200)
})
export const ResetPasswordResponse = Schema.Struct({ password_reset: Schema.Boolean, email_verified: Schema.Boolean, sessions_ended: Schema.Boolean })
export const EmailVerificationResponse = Schema.Struct({
  email: Schema.String,
  email_verified: Schema.Boolean,
  mail_sent: Schema.Boolean.annotate({ description: "false when the address is already verified or the mail server failed (then ask again)" })
})
export const VerifyEmailRequest = Schema.Struct({
  token: Bounded(8, 255).annotate({ description: "the token of the mailed link (/console/verify-email?token=...), also given as a code in the mail" })
})
export const VerifyEmailResponse = Schema.Struct({ email: Schema.String, email_verified: Schema.Boolean })

export const ChangePasswordRequest = Schema.Struct({
  current_password: Bounded(1, 200),
  new_password: Bounded(8, 200)
})

export const ProviderInfo = Schema.Struct({ provider_id: Schema.String, display_name: Schema.String })
export const ProvidersResponse = Schema.Struct({ providers: Schema.Array(ProviderInfo) })

export const AcceptInvitationRequest = Schema.Struct({
  token: Bounded(8, 255),
  password: OptionalNullable(Bounded(8, 200)).annotate({
    description: "when not signed in: the password of the account created for the invitation's email"
  }),
  display_name: OptionalNullable(Bounded(1, 100))
})
export const AcceptInvitationResponse = Schema.Struct({ tenant_id: Schema.String, user_id: Schema.String, role: Role })

export const MembershipResponse = Schema.Struct({
  tenant_id: Schema.String,
  name: Schema.String,
  role: Role,
  status: Schema.Literals(["active", "disabled"]),
  created_at: Timestamp
})

export const MeResponse = Schema.Struct({
  user_id: Schema.String,
  email: Schema.String,
  display_name: Schema.NullOr(Schema.String),
  email_verified: Schema.Boolean.annotate({
    description: "whether the owner of the address proved it (a mailed link, SSO, or an account the operator made); " +
      "an account made by accepting an invitation starts unverified"
  }),
  session: Schema.Literals(["cookie", "bearer"]),
  expires_at: Timestamp,
  tenants: Schema.Array(MembershipResponse)
})

export const SignedOut = Schema.Struct({ signed_out: Schema.Boolean })
export const PasswordChanged = Schema.Struct({ password_changed: Schema.Boolean, other_sessions_ended: Schema.Boolean })

// ---- tenants ---------------------------------------------------------------------------------

export const CreateTenantRequest = Schema.Struct({ name: Bounded(1, 100) })
export const CreateTenantResponse = Schema.Struct({ tenant_id: Schema.String, name: Schema.String, role: Role, created_at: Timestamp })
export const TenantListResponse = Schema.Struct({ items: Schema.Array(MembershipResponse), next_cursor: Schema.NullOr(Schema.String) })

export const MemberResponse = Schema.Struct({
  user_id: Schema.String,
  auth_identity_id: Schema.NullOr(Schema.String),
  role: Role,
  status: Schema.Literals(["active", "disabled"]),
  display_name: Schema.NullOr(Schema.String),
  email: Schema.String,
  invited_by_user_id: Schema.NullOr(Schema.String),
  created_at: Timestamp
})
export const MemberListResponse = Schema.Struct({ items: Schema.Array(MemberResponse), next_cursor: Schema.NullOr(Schema.String) })
export const UpdateMemberRequest = Schema.Struct({
  role: Schema.optional(Role),
  status: Schema.optional(Schema.Literals(["active", "disabled"]))
})

export const InviteRequest = Schema.Struct({
  email: InviteEmail,
  role: Schema.optional(Role).annotate({ description: "default member" })
})
export const InviteResponse = Schema.Struct({
  invitation_id: Schema.String,
  // The whole URL is the secret: it carries the invitation token.
  invite_url: secretField(Schema.String, "the invitation link for the invitee (it carries the invitation token)"),
  expires_at: Timestamp
})
export const InvitationResponse = Schema.Struct({
  id: Schema.String,
  tenant_id: Schema.String,
  email: Schema.String,
  role: Role,
  status: Schema.Literals(["pending", "accepted", "revoked", "expired"]),
  invited_by: Schema.NullOr(Schema.String),
  expires_at: Timestamp,
  accepted_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp),
  created_at: Timestamp
})
export const InvitationListResponse = Schema.Struct({ items: Schema.Array(InvitationResponse), next_cursor: Schema.NullOr(Schema.String) })

export const TenantProjectResponse = Schema.Struct({ id: Schema.String, name: Schema.String, tenant_id: Schema.String, created_at: Timestamp })
export const TenantProjectListResponse = Schema.Struct({ items: Schema.Array(TenantProjectResponse), next_cursor: Schema.NullOr(Schema.String) })
export const CreateProjectRequest = Schema.Struct({ name: Bounded(1, 100) })

// ---- bug reports -----------------------------------------------------------------------------

export const CreateBugReportRequest = Schema.Struct({
  message: Bounded(1, 2000),
  page_path: Bounded(1, 2048),
  input_method: Schema.optional(Schema.Literals(["text", "voice", "mixed"])),
  screenshot_data_url: OptionalNullable(Schema.String).annotate({
    description: "data:image/png|jpeg|webp;base64,...; at most WA_BUG_REPORT_SCREENSHOT_MAX_BYTES characters (default 524288)"
  }),
  user_agent: OptionalNullable(MaxString(512)),
  viewport_width: OptionalNullable(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10000 }))),
  viewport_height: OptionalNullable(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10000 })))
})

export const BugReportResponse = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  user_id: Schema.NullOr(Schema.String),
  message: Schema.String,
  page_path: Schema.String,
  screenshot_data_url: Schema.NullOr(Schema.String),
  input_method: Schema.Literals(["text", "voice", "mixed"]),
  viewport_width: Schema.NullOr(Schema.Int),
  viewport_height: Schema.NullOr(Schema.Int),
  user_agent: Schema.NullOr(Schema.String),
  status: Schema.Literals(BugReportStatuses).annotate({ description: "open: every report is filed open (no route changes it yet)" }),
  created_at: Timestamp
})
export const BugReportListResponse = Schema.Struct({
  items: Schema.Array(BugReportResponse),
  total: Schema.Int,
  next_cursor: Schema.NullOr(Schema.String)
})

/** The query of an SSO sign-in's start: where the browser lands once signed in. */
export const SsoStartQuery = { return_to: Schema.optional(Bounded(1, 2048)) }
