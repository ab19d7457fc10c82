/**
 * Bounds the contract documents and the services enforce (one definition for both, no server code).
 */

/** Secrets a project may hold. */
export const MAX_SECRETS = 100
/** The longest secret value accepted (code points): passwords, tokens, otpauth URIs. */
export const MAX_VALUE_LENGTH = 4096
/** Origins one secret may be bound to. */
export const MAX_ORIGINS = 20
/** The longest origin entry accepted. */
export const MAX_ORIGIN_LENGTH = 300

/** The largest schedule trigger event payload accepted, as JSON text (added to the run's instructions). */
export const MAX_TRIGGER_PAYLOAD_BYTES = 16 * 1024

/** Webhook endpoints a project may hold. */
export const MAX_WEBHOOK_ENDPOINTS = 20

/** The safety policy: the confirmation categories, and the bounds of its domain lists. */
export const CONFIRM_CATEGORIES = ["payment", "account_deletion", "send_message"] as const
export type ConfirmCategory = typeof CONFIRM_CATEGORIES[number]
export const MAX_DOMAINS = 500
export const MAX_DOMAIN_LENGTH = 253

/** The content type of the Prometheus text exposition (GET /metrics). */
export const prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"
