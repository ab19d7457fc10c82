/** Schema helpers of the contract: the shared ones (src/domain/schemas.ts) and the project path parameter. */
import { Schema } from "effect"
import { RunId, SessionId } from "../../domain/run.ts"

export { CallbackUrl, MaxString, OptionalNullable, Timestamp } from "../../domain/schemas.ts"

export const ProjectIdParam = { pid: Schema.String.check(Schema.isMaxLength(64)) }

/**
 * Session and run ids in a path, decoded once here as the model's branded ids (the brand is
 * type-level: on the wire they are the same strings, at most 64 characters).
 */
export const SessionIdParam = SessionId.check(Schema.isMaxLength(64))
export const RunIdParam = RunId.check(Schema.isMaxLength(64))
