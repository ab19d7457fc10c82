/**
 * The middlewares every project endpoint carries, declared on the contract so the OpenAPI document
 * shows the bearer scheme and the errors they add. Implementations live in src/http/middleware.
 */
import { Context, Effect } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import type { ApiKeyScope } from "../../domain/api-key-scope.ts"
import type { ApiKeyId, Principal, ProjectId } from "../../domain/run.ts"
import type { AccessKeyId, DelegationGrantId, UserId } from "../../domain/id-schemas.ts"
import { RunStartedBy } from "../../domain/run-started-by.ts"
import { Conflict, Forbidden, TooManyRequests, Unauthorized, ValidationError } from "../../domain/api-errors.ts"

/**
 * Who acts on a project endpoint, told apart by `userId`: without it an API key acts and `keyId`
 * is the key's id; with it a console user acts (a signed-in session, src/http/middleware/authentication.ts,
 * or a delegation token on the consenting user's behalf, src/http/middleware/delegated.ts) and
 * `keyId` is the user's id or the delegation's grant id. Either way `keyId` is the acting
 * principal the per-caller counts see (rate limits, idempotency, session caps, `runs.api_key_id`).
 */
export type KeyActor =
  | {
    readonly keyId: ApiKeyId
    readonly userId?: undefined
  }
  | {
    readonly keyId: UserId | DelegationGrantId
    /**
     * The console user: then `scope` comes from the user's role in the project's tenant (admin:
     * `admin`, member: `run`), or is `run` for a delegation.
     */
    readonly userId: UserId
  }

/** The API key (or console user) a request authenticated with, and the project it is scoped to. */
export class CurrentKey extends Context.Service<CurrentKey, KeyActor & {
  readonly projectId: ProjectId
  /** `admin` may manage keys and read the webhook secret; `run` may use the products only. */
  readonly scope: ApiKeyScope
  /** Revoked and in its grace window: it may finish work (what `run` may), nothing more. */
  readonly revoked: boolean
}>()("wa/http/CurrentKey") {}

/**
 * Who a request counts against: the owner of its rate-limit budget and of its Idempotency-Key
 * records. `space` is where the caller acts (the project of a project endpoint, `console` on the
 * account endpoints, `delegation` on the signed delegation service); `id` is the API key, console
 * user or access key. Every authentication middleware provides it.
 */
export class CurrentCaller extends Context.Service<CurrentCaller,
  | { readonly space: ProjectId; readonly id: Principal }
  | { readonly space: "console"; readonly id: UserId }
  | { readonly space: "delegation"; readonly id: AccessKeyId }
>()("wa/http/CurrentCaller") {}

/** CurrentKey and the CurrentCaller it is, for a project endpoint's authentication to provide. */
export const provideKey = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  key: CurrentKey["Service"]
): Effect.Effect<A, E, Exclude<R, CurrentKey | CurrentCaller>> =>
  // One context update for both (this runs on every authenticated request).
  Effect.updateContext(effect, (context: Context.Context<Exclude<R, CurrentKey | CurrentCaller>>) =>
    // RunStartedBy: the runs this request starts record the key (runs.api_key_id, its per-key cap).
    Context.add(Context.add(Context.add(context, CurrentKey, key), CurrentCaller, { space: key.projectId, id: key.keyId }), RunStartedBy, key.keyId) as Context.Context<R>)

/**
 * The 403 a key gets for an operation that needs `required`, or undefined when it may. `run` is
 * what every authenticated key may do, a revoked one in its grace window included; `admin` needs
 * an admin key that is not revoked.
 */
export const scopeFailure = (
  key: { readonly scope: ApiKeyScope; readonly revoked: boolean },
  required: ApiKeyScope
): Forbidden | undefined => {
  if (required === "run") return undefined
  if (key.revoked) {
    return new Forbidden({
      code: "forbidden",
      detail: "this API key is revoked: in its grace window it may still use the products, but not manage API keys or read the webhook secret",
      extra: { required_scope: required, key_scope: key.scope, revoked: true }
    })
  }
  if (key.scope !== required) {
    return new Forbidden({
      code: "forbidden",
      detail: `this API key has scope ${key.scope}; this operation needs a key with scope ${required}`,
      extra: { required_scope: required, key_scope: key.scope }
    })
  }
  return undefined
}

/** Fails with 403 `forbidden` unless the request's key may act with `required` (see scopeFailure). */
export const requireScope = (required: ApiKeyScope): Effect.Effect<void, Forbidden, CurrentKey> =>
  CurrentKey.use((key) => {
    const failure = scopeFailure(key, required)
    return failure === undefined ? Effect.void : Effect.fail(failure)
  })

export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: CurrentKey | CurrentCaller }>()(
  "wa/http/Authentication",
  {
    requiredForClient: true,
    security: { bearer: HttpApiSecurity.bearer },
    error: [Unauthorized, Forbidden, TooManyRequests]
  }
) {}

export class RateLimit extends HttpApiMiddleware.Service<RateLimit, { requires: CurrentCaller }>()(
  "wa/http/RateLimit",
  { error: TooManyRequests }
) {}

export class Idempotency extends HttpApiMiddleware.Service<Idempotency, { requires: CurrentCaller }>()(
  "wa/http/Idempotency",
  { error: [Conflict, ValidationError] }
) {}
