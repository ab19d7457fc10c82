/**
 * Schemas of the branded resource ids (src/domain/ids.ts makes them, `IdOf<prefix>`), for ids that
 * are decoded (path parameters, request fields, rows) rather than made. Each brand is the one its
 * prefix gets in ids.ts, so `makeId("prof")` is a `ProfileId` (test/in-process/ids.test.ts). The
 * brand is type-level: on the wire and in the OpenAPI document these are plain strings. Kept apart
 * from ids.ts, which needs node:crypto, because the browser SDK bundles the domain schemas.
 * ProjectId, ApiKeyId, SessionId and RunId are in run.ts; the Track ids in monitor.ts.
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
