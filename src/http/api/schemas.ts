/** Schema helpers of the contract: the shared ones (src/domain/schemas.ts) and the project path parameter. */
import { Schema } from "effect"
import { RunId, SessionId } from "../../domain/run.ts"
import { FlatRunStatuses, RunStatuses, SessionStatuses } from "../../domain/run-state.ts"

export { CallbackUrl, MaxString, OptionalNullable, Timestamp } from "../../domain/schemas.ts"

/** A run's status under Convention A (`/v1/...`): `done` on success. */
export const RunStatusA = Schema.Literals(RunStatuses).annotate({
  description: "Convention A (/v1 paths): pending, running, awaiting_input, paused, done, failed, canceled"
})
/** A run's status under Convention B (`/api/v1/...`): `succeeded` on success (terminal_reason `done`). */
export const RunStatusB = Schema.Literals(FlatRunStatuses).annotate({
  description: "Convention B (/api/v1 paths): pending, running, awaiting_input, paused, succeeded (terminal_reason done), failed, canceled"
})

export const SessionStatus = Schema.Literals(SessionStatuses)

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

/** The annotation `secretField` puts on a response field; the Idempotency-Key layer looks for it. */
export const SECRET_FIELD_ANNOTATION = "wa/secretField"

/**
 * A response field that holds a credential shown once (a key's secret, a signing secret, a URL
 * carrying a token). The Idempotency-Key layer never stores it (src/http/middleware/idempotency.ts
 * finds these fields in the endpoint's success schema), so a replay carries it as null.
 */
export const secretField = <S extends Schema.Top>(schema: S, description: string) =>
  Schema.NullOr(schema).annotate({
    [SECRET_FIELD_ANNOTATION]: true,
    description: `${description}; shown once: null when this response is an Idempotency-Key replay (the secret is never stored)`
  })
