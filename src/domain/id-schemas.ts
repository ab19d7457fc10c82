/**
 * Schemas of the branded resource ids (src/domain/ids.ts makes them, `IdOf<prefix>`), for ids that
 * are decoded (path parameters, request fields, rows) rather than made. Each brand is the one its
 * prefix gets in ids.ts, so `makeId("prof")` is a `ProfileId` (test/in-process/ids.test.ts). The
 * brand is type-level: on the wire and in the OpenAPI document these are plain strings. Kept apart
 * from ids.ts, which needs node:crypto, because the browser SDK bundles the domain schemas.
 * ProjectId, ApiKeyId, SessionId and RunId are in run.ts; SnapshotId (and TickRunId, a RunId) in
 * monitor.ts. MonitorId is here so that run.ts (a tick run's request names its monitor) can use it
 * without importing monitor.ts, which imports run.ts.
 */
import { Schema } from "effect"

/** `prof_`: a browser profile (src/profiles/). */
export const ProfileId = Schema.String.pipe(Schema.brand("ProfileId"))
export type ProfileId = typeof ProfileId.Type

/** `ws_`: a workspace (src/store/workspace-store.ts); its files are named, not id'd. */
export const WorkspaceId = Schema.String.pipe(Schema.brand("WorkspaceId"))
export type WorkspaceId = typeof WorkspaceId.Type

/** `wh_`: a project webhook endpoint (src/webhooks/webhook-endpoints.ts). */
export const WebhookEndpointId = Schema.String.pipe(Schema.brand("WebhookEndpointId"))
export type WebhookEndpointId = typeof WebhookEndpointId.Type

/** `sk_`: a project skill (src/store/skills.ts); the API also addresses one by its name. */
export const SkillId = Schema.String.pipe(Schema.brand("SkillId"))
export type SkillId = typeof SkillId.Type

/** `sec_`: a project secret (src/secrets/); runs name secrets by their name. */
export const SecretId = Schema.String.pipe(Schema.brand("SecretId"))
export type SecretId = typeof SecretId.Type

/** `sched_`: a DoAnything session schedule (src/do-anything/schedules.ts). The generic scheduler (src/schedules/) keys its owners by text. */
export const ScheduleId = Schema.String.pipe(Schema.brand("ScheduleId"))
export type ScheduleId = typeof ScheduleId.Type

/** `uss_`: a signed-in console user's session (src/accounts/users.ts); not a DoAnything SessionId. */
export const UserSessionId = Schema.String.pipe(Schema.brand("UserSessionId"))
export type UserSessionId = typeof UserSessionId.Type

/**
 * An outbound webhook delivery (src/webhooks/callbacks.ts): `msg_` (the Standard Webhooks message
 * id, sent as `webhook-id`) then the time-sorted tail of a `dlv_` id.
 */
export const DeliveryId = Schema.String.pipe(Schema.brand("DeliveryId"))
export type DeliveryId = typeof DeliveryId.Type

/** `usr_`: a console user (src/accounts/users.ts). */
export const UserId = Schema.String.pipe(Schema.brand("UserId"))
export type UserId = typeof UserId.Type

/** `ten_`: a tenant, the console's organisation that owns projects (src/accounts/tenants.ts). */
export const TenantId = Schema.String.pipe(Schema.brand("TenantId"))
export type TenantId = typeof TenantId.Type

/** `inv_`: an invitation to a tenant (src/accounts/tenant-store.ts). */
export const InvitationId = Schema.String.pipe(Schema.brand("InvitationId"))
export type InvitationId = typeof InvitationId.Type

/** `dgr_`: a delegation grant (src/delegation/). */
export const DelegationGrantId = Schema.String.pipe(Schema.brand("DelegationGrantId"))
export type DelegationGrantId = typeof DelegationGrantId.Type

/** `wak_`: a tenant's delegation access key (src/delegation/delegation-store.ts), the Credential of a signed request. */
export const AccessKeyId = Schema.String.pipe(Schema.brand("AccessKeyId"))
export type AccessKeyId = typeof AccessKeyId.Type

/** `art_`: a stored artifact (src/store/artifacts.ts). */
export const ArtifactId = Schema.String.pipe(Schema.brand("ArtifactId"))
export type ArtifactId = typeof ArtifactId.Type

/** `ntf_`: a notification in a project's inbox (src/webhooks/inbox-store.ts). */
export const NotificationId = Schema.String.pipe(Schema.brand("NotificationId"))
export type NotificationId = typeof NotificationId.Type

/** `ctl_`: a take-control grant (src/control/). */
export const ControlGrantId = Schema.String.pipe(Schema.brand("ControlGrantId"))
export type ControlGrantId = typeof ControlGrantId.Type

/** `eml_`: an inbound email (src/mail/inbound/). */
export const EmailId = Schema.String.pipe(Schema.brand("EmailId"))
export type EmailId = typeof EmailId.Type

/** `cs_`: a cache script (src/store/cache-scripts.ts). */
export const CacheScriptId = Schema.String.pipe(Schema.brand("CacheScriptId"))
export type CacheScriptId = typeof CacheScriptId.Type

/** `aud_`: the audit id of a delegation grant (src/delegation/delegation-store.ts). */
export const AuditId = Schema.String.pipe(Schema.brand("AuditId"))
export type AuditId = typeof AuditId.Type

/** `aid_`: a console user's sign-in identity (password or SSO; src/accounts/user-store.ts). */
export const AuthIdentityId = Schema.String.pipe(Schema.brand("AuthIdentityId"))
export type AuthIdentityId = typeof AuthIdentityId.Type

/** `bug_`: a bug report (src/accounts/bug-reports.ts). */
export const BugReportId = Schema.String.pipe(Schema.brand("BugReportId"))
export type BugReportId = typeof BugReportId.Type

/** `ir_`: an input request of a run (a question to a human). */
export const InputRequestId = Schema.String.pipe(Schema.brand("InputRequestId"))
export type InputRequestId = typeof InputRequestId.Type

/**
 * `evt_`: the token of one execution of a run (src/store/runs.ts `claimExecution`): a later
 * execution's claim supersedes it, and its writes are refused after that.
 */
export const ExecutionToken = Schema.String.pipe(Schema.brand("ExecutionToken"))
export type ExecutionToken = typeof ExecutionToken.Type

/** `shot_`: a run's screenshot (src/store/screenshots.ts); older ones are `evt_` ids. */
export const ScreenshotId = Schema.String.pipe(Schema.brand("ScreenshotId"))
export type ScreenshotId = typeof ScreenshotId.Type

/** `arc_`: an auto-recharge (src/billing/auto-recharge.ts); older ones end in 32 hex digits. */
export const AutoRechargeId = Schema.String.pipe(Schema.brand("AutoRechargeId"))
export type AutoRechargeId = typeof AutoRechargeId.Type

/** `mon_`: a Track monitor (src/track/); re-exported by monitor.ts with the other Track ids. */
export const MonitorId = Schema.String.pipe(Schema.brand("MonitorId"))
export type MonitorId = typeof MonitorId.Type
