/** The bounds of project secrets, shared by the service and the API schemas (no server code here). */

/** Secrets a project may hold. */
export const MAX_SECRETS = 100
/** The longest value accepted (code points): passwords, tokens, otpauth URIs. */
export const MAX_VALUE_LENGTH = 4096
/** Origins one secret may be bound to. */
export const MAX_ORIGINS = 20
/** The longest origin entry accepted. */
export const MAX_ORIGIN_LENGTH = 300
