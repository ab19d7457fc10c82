/**
 * The middleware of console account endpoints (tenants, members, invitations, password, sign-out):
 * a console session, as a bearer token (`Authorization: Bearer was_...`) or as the HttpOnly
 * `wa_session` cookie, whose writes also need the `X-CSRF-Token` header. API keys act for one
 * project and are refused here (403). Implementation: src/http/middleware/console-session.ts.
 */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import type { ConsoleSession } from "../../domain/console-session.ts"
import { Forbidden, TooManyRequests, Unauthorized } from "../../domain/api-errors.ts"
import type { CurrentCaller } from "./security.ts"

export const SESSION_COOKIE = "wa_session"
export const CSRF_COOKIE = "wa_csrf"
export const CSRF_HEADER = "x-csrf-token"

/** The signed-in console user of a request, and how the session was presented. */
export class CurrentUser extends Context.Service<CurrentUser, ConsoleSession & {
  readonly via: "bearer" | "cookie"
}>()("wa/http/CurrentUser") {}

/**
 * Also provides CurrentCaller (space `console`, the user's id), so the rate limit and
 * Idempotency-Key replay apply to account writes per user as well.
 */
export class ConsoleAuth extends HttpApiMiddleware.Service<ConsoleAuth, { provides: CurrentUser | CurrentCaller }>()(
  "wa/http/ConsoleAuth",
  {
    requiredForClient: true,
    security: { bearer: HttpApiSecurity.bearer },
    error: [Unauthorized, Forbidden, TooManyRequests]
  }
) {}
