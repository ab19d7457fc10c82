/**
 * What the console sends and receives, as the API's contract declares it: every type here is
 * derived from the schemas the OpenAPI document is generated from (src/domain/wire/ for the
 * responses, src/domain/*.ts for the request bodies the wire files do not hold), so a field the
 * document drops or renames fails `tsc -p console` (`npm run typecheck`) where a page reads it.
 *
 * Type-only: `import type` is erased by the build, so none of the schemas (nor effect) enters the
 * console's bundle. Responses are not decoded at run time (console/src/api.ts says why).
 *
 * A body on the wire is the schema's encoded side (JSON: ids and timestamps as strings, no
 * brands), which is what the document describes: hence `Encoded`, not `Type`.
 */
import type {
  AcceptInvitationRequest, AcceptInvitationResponse, ChangePasswordRequest, CreateBugReportRequest, CreateProjectRequest,
  CreateTenantRequest, CreateTenantResponse, EmailVerificationResponse, ForgotPasswordRequest, ForgotPasswordResponse,
  InvitationListResponse, InvitationResponse, InviteRequest, InviteResponse, LoginRequest, LoginResponse, MemberListResponse,
  MemberResponse, MembershipResponse, MeResponse, PasswordChanged, ProviderInfo, ProvidersResponse, ResetPasswordRequest,
  ResetPasswordResponse, SignedOut, TenantProjectListResponse, TenantProjectResponse, UpdateMemberRequest, VerifyEmailRequest,
  VerifyEmailResponse, BugReportListResponse, BugReportResponse
} from "../../src/domain/wire/accounts.ts"
import type { ApiKeyCreatedResponse, ApiKeyListResponse, ApiKeyResponse, CreateApiKeyRequest } from "../../src/domain/wire/api-keys.ts"
import type { BillingAccountResponse, LedgerEntry, UsageResponse } from "../../src/domain/wire/billing.ts"
import type { InboxListResponse, InboxNotificationResponse, UpdateInboxNotificationRequest } from "../../src/domain/wire/inbox.ts"
import type {
  CreateMonitorResponse, MonitorListResponse, MonitorResponse, SnapshotListResponse, SnapshotResponse, TickRunListResponse,
  TickRunResponse
} from "../../src/domain/wire/track.ts"
import type { DeliveryListResponse, DeliveryResponse } from "../../src/domain/wire/webhook-deliveries.ts"
import type { ArtifactList, ArtifactResponse, ResearchRunList, ResearchRunResponse } from "../../src/domain/wire/deep-research.ts"
import type { WebSearchRunResponse } from "../../src/domain/wire/web-search.ts"
import type {
  CancelRunRequest, CreateRunRequest, InterveneRequest, InterveneResponse, MessageQueuedResponse, MessageRequest, RunResponse,
  SessionListResponse, SessionResponse
} from "../../src/domain/wire/do-anything.ts"
import type { CreateMonitorRequest, MonitorInterveneRequest, PatchMonitorRequest } from "../../src/domain/monitor.ts"
import type { CreateResearchRequest, OutlineAnswer, OutlineEdit, Phase, ResearchInterveneRequest } from "../../src/domain/research.ts"
import type { WebSearchRequest } from "../../src/domain/web-search.ts"

/** A body as it travels (JSON): the encoded side of its schema. */
export type Wire<S extends { readonly Encoded: unknown }> = S["Encoded"]

/** A list page of the cursor kind: `items` and `next_cursor`. */
export interface CursorPage<A> {
  readonly items: ReadonlyArray<A>
  readonly next_cursor: string | null
}

// ---- accounts, tenants, bug reports (/v1/auth, /v1/tenants, /v1/invitations, .../bug_reports) ----
export type Me = Wire<typeof MeResponse>
export type Membership = Wire<typeof MembershipResponse>
export type SignedIn = Wire<typeof LoginResponse>
export type SignedOutAnswer = Wire<typeof SignedOut>
export type Provider = Wire<typeof ProviderInfo>
export type Providers = Wire<typeof ProvidersResponse>
export type PasswordChangedAnswer = Wire<typeof PasswordChanged>
export type ForgotPasswordAnswer = Wire<typeof ForgotPasswordResponse>
export type ResetPasswordAnswer = Wire<typeof ResetPasswordResponse>
export type EmailVerificationAnswer = Wire<typeof EmailVerificationResponse>
export type VerifyEmailAnswer = Wire<typeof VerifyEmailResponse>
export type InvitationAccepted = Wire<typeof AcceptInvitationResponse>
export type TenantCreated = Wire<typeof CreateTenantResponse>
export type TenantProject = Wire<typeof TenantProjectResponse>
export type TenantProjectList = Wire<typeof TenantProjectListResponse>
export type Member = Wire<typeof MemberResponse>
export type MemberList = Wire<typeof MemberListResponse>
export type Invitation = Wire<typeof InvitationResponse>
export type InvitationList = Wire<typeof InvitationListResponse>
export type InvitationCreated = Wire<typeof InviteResponse>
export type BugReport = Wire<typeof BugReportResponse>
export type BugReportList = Wire<typeof BugReportListResponse>

export type LoginBody = Wire<typeof LoginRequest>
export type ForgotPasswordBody = Wire<typeof ForgotPasswordRequest>
export type ResetPasswordBody = Wire<typeof ResetPasswordRequest>
export type VerifyEmailBody = Wire<typeof VerifyEmailRequest>
export type ChangePasswordBody = Wire<typeof ChangePasswordRequest>
export type AcceptInvitationBody = Wire<typeof AcceptInvitationRequest>
export type CreateTenantBody = Wire<typeof CreateTenantRequest>
export type CreateProjectBody = Wire<typeof CreateProjectRequest>
export type UpdateMemberBody = Wire<typeof UpdateMemberRequest>
export type InviteBody = Wire<typeof InviteRequest>
export type CreateBugReportBody = Wire<typeof CreateBugReportRequest>

// ---- API keys, billing, inbox ----
export type ApiKey = Wire<typeof ApiKeyResponse>
export type ApiKeyCreated = Wire<typeof ApiKeyCreatedResponse>
export type ApiKeyList = Wire<typeof ApiKeyListResponse>
export type CreateApiKeyBody = Wire<typeof CreateApiKeyRequest>
export type BillingAccount = Wire<typeof BillingAccountResponse>
export type LedgerLine = Wire<typeof LedgerEntry>
export type Usage = Wire<typeof UsageResponse>
export type InboxNotification = Wire<typeof InboxNotificationResponse>
export type InboxList = Wire<typeof InboxListResponse>
export type UpdateInboxNotificationBody = Wire<typeof UpdateInboxNotificationRequest>

// ---- Track ----
export type Monitor = Wire<typeof MonitorResponse>
export type MonitorCreated = Wire<typeof CreateMonitorResponse>
export type MonitorList = Wire<typeof MonitorListResponse>
export type TickRun = Wire<typeof TickRunResponse>
export type TickRunList = Wire<typeof TickRunListResponse>
export type Snapshot = Wire<typeof SnapshotResponse>
export type SnapshotList = Wire<typeof SnapshotListResponse>
export type Delivery = Wire<typeof DeliveryResponse>
export type DeliveryList = Wire<typeof DeliveryListResponse>
export type CreateMonitorBody = Wire<typeof CreateMonitorRequest>
export type PatchMonitorBody = Wire<typeof PatchMonitorRequest>
export type MonitorInterveneBody = Wire<typeof MonitorInterveneRequest>

// ---- DeepResearch, WebSearch (Convention A: the console calls /v1) ----
export type ResearchRun = Wire<typeof ResearchRunResponse>
export type ResearchRunListPage = Wire<typeof ResearchRunList>
export type ResearchPhase = Phase
export type Artifact = Wire<typeof ArtifactResponse>
export type Artifacts = Wire<typeof ArtifactList>
export type CreateResearchBody = Wire<typeof CreateResearchRequest>
export type ResearchInterveneBody = Wire<typeof ResearchInterveneRequest>
/** The `response` of an intervene at the outline gate (the body's schema leaves it open; the gate decodes it with this one). */
export type OutlineAnswerBody = Wire<typeof OutlineAnswer>
export type OutlineEditBody = Wire<typeof OutlineEdit>
export type SearchRun = Wire<typeof WebSearchRunResponse>
export type WebSearchBody = Wire<typeof WebSearchRequest>

// ---- DoAnything ----
export type Session = Wire<typeof SessionResponse>
export type SessionList = Wire<typeof SessionListResponse>
export type Run = Wire<typeof RunResponse>
export type Intervened = Wire<typeof InterveneResponse>
export type MessageQueued = Wire<typeof MessageQueuedResponse>
export type CreateRunBody = Wire<typeof CreateRunRequest>
export type CancelRunBody = Wire<typeof CancelRunRequest>
export type MessageBody = Wire<typeof MessageRequest>
export type InterveneBody = Wire<typeof InterveneRequest>
