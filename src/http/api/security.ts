/**
 * The middlewares every project endpoint carries, declared on the contract so the OpenAPI document
 * shows the bearer scheme and the errors they add. Implementations live in src/http/middleware.
 */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { Conflict, Forbidden, TooManyRequests, Unauthorized, ValidationError } from "../../domain/errors.ts"

/** The API key a request authenticated with, and the project it is scoped to. */
export class CurrentKey extends Context.Service<CurrentKey, {
  readonly keyId: string
  readonly projectId: string
}>()("wa/http/CurrentKey") {}

export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: CurrentKey }>()(
  "wa/http/Authentication",
  {
    requiredForClient: true,
    security: { bearer: HttpApiSecurity.bearer },
    error: [Unauthorized, Forbidden]
  }
) {}

export class RateLimit extends HttpApiMiddleware.Service<RateLimit, { requires: CurrentKey }>()(
  "wa/http/RateLimit",
  { error: TooManyRequests }
) {}

export class Idempotency extends HttpApiMiddleware.Service<Idempotency, { requires: CurrentKey }>()(
  "wa/http/Idempotency",
  { error: [Conflict, ValidationError] }
) {}
