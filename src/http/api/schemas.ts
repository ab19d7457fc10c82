/**
 * The path parameters of the contract. The schemas of bodies, views and queries are in
 * src/domain/wire/ (issue 27 §1: domain owns every schema the wire uses).
 */
import { Schema } from "effect"
import {
  AccessKeyId, ControlGrantId, DelegationGrantId, EmailId, DeliveryId, InvitationId, NotificationId, ProfileId, ScheduleId, SecretId,
  TenantId, UserId, WebhookEndpointId
} from "../../domain/id-schemas.ts"
import { ApiKeyId, RunId, SessionId } from "../../domain/run.ts"

export { MaxString } from "../../domain/schemas.ts"
/** Re-exported for the Idempotency-Key layer (src/http/middleware/idempotency.ts). */
export { SECRET_FIELD_ANNOTATION } from "../../domain/wire/common.ts"

export const ProjectIdParam = { pid: Schema.String.check(Schema.isMaxCodePoints(64)) }

/**
 * Longest decoded path parameter the router matches (its default, 100, turned 101-character file
 * names into 405); a parameter past it is 414 uri_too_long. The schemas bound each parameter below it.
 */
export const MAX_PATH_PARAM_LENGTH = 1024

/**
 * Session and run ids in a path, decoded once here as the model's branded ids (the brand is
 * type-level: on the wire they are the same strings, at most 64 characters).
 */
export const SessionIdParam = SessionId.check(Schema.isMaxCodePoints(64))
export const RunIdParam = RunId.check(Schema.isMaxCodePoints(64))
/** A profile id in a path (`/profiles/{profile_id}`), branded the same way. */
export const ProfileIdParam = ProfileId.check(Schema.isMaxCodePoints(64))
/** A webhook endpoint id in a path (`/webhooks/{webhook_id}`). */
export const WebhookEndpointIdParam = WebhookEndpointId.check(Schema.isMaxCodePoints(64))
/** A secret id in a path (`/secrets/{secret_id}`). */
export const SecretIdParam = SecretId.check(Schema.isMaxCodePoints(64))
/** An API key id in a path (`/api_keys/{key_id}`). */
export const ApiKeyIdParam = ApiKeyId.check(Schema.isMaxCodePoints(64))
/** A DoAnything schedule id in a path (`/schedules/{schedule_id}`). */
export const ScheduleIdParam = ScheduleId.check(Schema.isMaxCodePoints(64))
/** A webhook delivery id in a path (`/webhook_deliveries/{delivery_id}`). */
export const DeliveryIdParam = DeliveryId.check(Schema.isMaxCodePoints(64))
/** A tenant id in a path (`/tenants/{tid}`). */
export const TenantIdParam = TenantId.check(Schema.isMaxCodePoints(64))
/** A console user id in a path (`/members/{user_id}`). */
export const UserIdParam = UserId.check(Schema.isMaxCodePoints(64))
/** An invitation id in a path (`/invitations/{invitation_id}`). */
export const InvitationIdParam = InvitationId.check(Schema.isMaxCodePoints(64))
/** A delegation access key id in a path (`/access_keys/{access_key_id}`). */
export const AccessKeyIdParam = AccessKeyId.check(Schema.isMaxCodePoints(64))
/** A delegation grant id in a path (`/delegations/{grant_id}`). */
export const DelegationGrantIdParam = DelegationGrantId.check(Schema.isMaxCodePoints(64))
/** An inbox notification id in a path (`/inbox/{notification_id}`). */
export const NotificationIdParam = NotificationId.check(Schema.isMaxCodePoints(64))
/** A take-control grant id in a control URL (`/v1/control/{grant}`). */
export const ControlGrantIdParam = ControlGrantId.check(Schema.isMaxCodePoints(64))
/** An inbound email id in a path (`/inbox/{message_id}`). */
export const EmailIdParam = EmailId.check(Schema.isMaxCodePoints(64))
