/**
 * Resource ids: a prefix (`proj_`, `sess_`, `run_`, ...) then 26 characters that sort by creation
 * time (48-bit millisecond time, then 80 random bits, Crockford base32), so ordering by id is
 * ordering by creation and cursor pagination stays stable under concurrent inserts.
 */
import { randomBytes } from "node:crypto"
import type { Brand } from "effect"

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

const encodeTime = (ms: number): string => {
  let out = ""
  for (let i = 0; i < 10; i++) {
    out = alphabet[ms % 32] + out
    ms = Math.floor(ms / 32)
  }
  return out
}

const encodeRandom = (): string => {
  const bytes = randomBytes(16)
  let out = ""
  for (let i = 0; i < 16; i++) out += alphabet[bytes[i]! % 32]
  return out
}

/**
 * The brand of each prefix's ids: an id of one kind cannot be passed where another is expected.
 * Screenshots had `evt_` ids (the execution token's prefix) before `shot_`; nothing reads the
 * prefix of a stored id (ids are text columns; a screenshot URL matches any `[A-Za-z0-9_]{1,64}`),
 * so those rows still load. Auto-recharges made before `arc` was here are `arc_` then 32 hex digits
 * (a UUID): same prefix, another tail, read the same way.
 */
const brandOfPrefix = {
  proj: "ProjectId", key: "ApiKeyId", sess: "SessionId", run: "RunId", prof: "ProfileId", ir: "InputRequestId",
  ws: "WorkspaceId", evt: "ExecutionToken", dlv: "DeliveryId", mon: "MonitorId", art: "ArtifactId", tick: "RunId",
  snap: "SnapshotId", wh: "WebhookEndpointId", ntf: "NotificationId", ctl: "ControlGrantId", sched: "ScheduleId",
  usr: "UserId", aid: "AuthIdentityId", uss: "UserSessionId", ten: "TenantId", inv: "InvitationId", bug: "BugReportId",
  wak: "AccessKeyId", dgr: "DelegationGrantId", aud: "AuditId", sec: "SecretId", eml: "EmailId", cs: "CacheScriptId", sk: "SkillId",
  shot: "ScreenshotId", arc: "AutoRechargeId"
} as const

export type IdPrefix = keyof typeof brandOfPrefix

/** An id made with `prefix`: a string branded with its kind (ProjectId, RunId, ...). */
export type IdOf<P extends IdPrefix> = string & Brand.Brand<typeof brandOfPrefix[P]>

/** A new id of that kind, branded where it is made. */
export const makeId = <P extends IdPrefix>(prefix: P, now: number = Date.now()): IdOf<P> =>
  `${prefix}_${encodeTime(now)}${encodeRandom()}` as IdOf<P>
