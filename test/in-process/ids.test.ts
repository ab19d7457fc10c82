/**
 * Resource ids (src/domain/ids.ts): sortable by creation, one prefix per kind, and branded where
 * they are made, so an id of one kind cannot be passed where another kind is expected (checked by
 * tsc on this file: the @ts-expect-error lines must stay errors).
 */
import { describe, expect, it } from "vitest"
import { Schema } from "effect"
import { makeId } from "../../src/domain/ids.ts"
import { ApiKeyId, type ProjectId, type RunId, type SessionId } from "../../src/domain/run.ts"
import type { MonitorId } from "../../src/domain/monitor.ts"
import {
  AccessKeyId, ArtifactId, AuditId, AuthIdentityId, BugReportId, CacheScriptId, ControlGrantId, DelegationGrantId, DeliveryId, EmailId,
  InputRequestId, InvitationId, NotificationId, ProfileId, ScheduleId, SecretId, SkillId, TenantId, UserId, UserSessionId, WebhookEndpointId,
  WorkspaceId
} from "../../src/domain/id-schemas.ts"

const takesRun = (id: RunId) => id
const takesProject = (id: ProjectId) => id

describe("ids", () => {
  it("are branded by their prefix's kind where they are made", () => {
    const run: RunId = makeId("run")
    const session: SessionId = makeId("sess")
    const monitor: MonitorId = makeId("mon")
    expect(takesRun(run)).toMatch(/^run_[0-9a-z]{26}$/)
    expect(session.startsWith("sess_")).toBe(true)
    expect(monitor.startsWith("mon_")).toBe(true)
    // @ts-expect-error a project id is not a run id
    takesRun(makeId("proj"))
    // @ts-expect-error a run id is not a project id
    takesProject(run)
    // Still strings where a string is asked for.
    const text: string = makeId("key")
    expect(text.startsWith("key_")).toBe(true)
  })

  it("made ids are the brands their schemas decode", () => {
    const profile: ProfileId = makeId("prof")
    expect(Schema.decodeUnknownSync(ProfileId)(profile)).toBe(profile)
    // @ts-expect-error a session id is not a profile id
    const notProfile: ProfileId = makeId("sess")
    expect(notProfile.startsWith("sess_")).toBe(true)
    const workspace: WorkspaceId = makeId("ws")
    expect(Schema.decodeUnknownSync(WorkspaceId)(workspace)).toBe(workspace)
    // @ts-expect-error a profile id is not a workspace id
    const notWorkspace: WorkspaceId = profile
    expect(notWorkspace).toBe(profile)
    const endpoint: WebhookEndpointId = makeId("wh")
    expect(Schema.decodeUnknownSync(WebhookEndpointId)(endpoint)).toBe(endpoint)
    const skill: SkillId = makeId("sk")
    expect(Schema.decodeUnknownSync(SkillId)(skill)).toBe(skill)
    const secret: SecretId = makeId("sec")
    expect(Schema.decodeUnknownSync(SecretId)(secret)).toBe(secret)
    const key: ApiKeyId = makeId("key")
    expect(Schema.decodeUnknownSync(ApiKeyId)(key)).toBe(key)
    const schedule: ScheduleId = makeId("sched")
    expect(Schema.decodeUnknownSync(ScheduleId)(schedule)).toBe(schedule)
    const userSession: UserSessionId = makeId("uss")
    expect(Schema.decodeUnknownSync(UserSessionId)(userSession)).toBe(userSession)
    const delivery: DeliveryId = makeId("dlv")
    expect(Schema.decodeUnknownSync(DeliveryId)(delivery)).toBe(delivery)
    // @ts-expect-error a console user's session is not a DoAnything session
    const notSession: SessionId = userSession
    expect(notSession).toBe(userSession)
  })

  it("the account, delegation, mail, control and store ids are their prefix's brands too", () => {
    const user: UserId = makeId("usr")
    expect(Schema.decodeUnknownSync(UserId)(user)).toBe(user)
    const tenant: TenantId = makeId("ten")
    expect(Schema.decodeUnknownSync(TenantId)(tenant)).toBe(tenant)
    const invitation: InvitationId = makeId("inv")
    expect(Schema.decodeUnknownSync(InvitationId)(invitation)).toBe(invitation)
    const grant: DelegationGrantId = makeId("dgr")
    expect(Schema.decodeUnknownSync(DelegationGrantId)(grant)).toBe(grant)
    // A delegation access key is `wak_`; a sign-in identity is `aid_`.
    const accessKey: AccessKeyId = makeId("wak")
    expect(Schema.decodeUnknownSync(AccessKeyId)(accessKey)).toBe(accessKey)
    const identity: AuthIdentityId = makeId("aid")
    expect(Schema.decodeUnknownSync(AuthIdentityId)(identity)).toBe(identity)
    const audit: AuditId = makeId("aud")
    const artifact: ArtifactId = makeId("art")
    const notification: NotificationId = makeId("ntf")
    const control: ControlGrantId = makeId("ctl")
    const email: EmailId = makeId("eml")
    const script: CacheScriptId = makeId("cs")
    const bug: BugReportId = makeId("bug")
    const inputRequest: InputRequestId = makeId("ir")
    for (const id of [audit, artifact, notification, control, email, script, bug, inputRequest]) expect(id).toMatch(/^[a-z]+_[0-9a-z]{26}$/)
    // @ts-expect-error a user id is not a tenant id
    const notTenant: TenantId = user
    expect(notTenant).toBe(user)
    // @ts-expect-error an access key id is not a sign-in identity id
    const notIdentity: AuthIdentityId = accessKey
    expect(notIdentity).toBe(accessKey)
    // @ts-expect-error a plain string is not a user id
    const notUser: UserId = "usr_x"
    expect(notUser).toBe("usr_x")
  })

  it("sort by creation time", () => {
    const earlier = makeId("run", 1_000_000)
    const later = makeId("run", 2_000_000)
    expect(earlier < later).toBe(true)
  })
})
