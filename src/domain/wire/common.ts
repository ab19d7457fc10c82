/**
 * Helpers of the wire schemas (src/domain/wire/): a run's status under each convention, a
 * session's status, a credential shown once, and the query of a signed URL.
 */
import { Schema } from "effect"
import { FlatRunStatuses, RunStatuses, SessionStatuses, TerminalReasons } from "../run-state.ts"
import { MaxString } from "../schemas.ts"

/** A run's status under Convention A (`/v1/...`): `done` on success. */
export const RunStatusA = Schema.Literals(RunStatuses).annotate({
  description: "Convention A (/v1 paths): pending, running, awaiting_input, paused, done, failed, canceled"
})
/** A run's status under Convention B (`/api/v1/...`): `succeeded` on success (terminal_reason `done`). */
export const RunStatusB = Schema.Literals(FlatRunStatuses).annotate({
  description: "Convention B (/api/v1 paths): pending, running, awaiting_input, paused, succeeded (terminal_reason done), failed, canceled"
})

export const SessionStatus = Schema.Literals(SessionStatuses)

/** Why a run ended (null while it has not); Convention B also says `done` for a run that succeeded. */
export const TerminalReason = Schema.NullOr(Schema.Literals(TerminalReasons)).annotate({
  description: "null while the run has not ended; then done (finished), failed, canceled, budget_exceeded (credits or the " +
    "monthly budget ran out), expired (max_steps reached), duration_exceeded (max_duration_minutes reached), " +
    "outline_rejected (DeepResearch: the outline was rejected), skipped (a Track tick that did not run)"
})

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

/** The query of a signed, short-lived URL (no API key needed): its expiry (unix seconds) and signature. */
export const SignedUrlQuery = { expires: Schema.NumberFromString, signature: MaxString(128) }
