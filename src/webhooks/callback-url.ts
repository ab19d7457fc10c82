/**
 * The rules a `callback_url` must meet, checked when the request that carries it arrives (a
 * refused URL is a 422 and nothing is created) and again at every delivery (DNS may change):
 * - form: an absolute http(s) URL with a host, at most 2083 characters, no user name or
 *   password in it;
 * - address (unless WA_ALLOW_PRIVATE_NETWORKS): a literal IP is classified directly, a host name
 *   is resolved and every address it resolves to must be public (src/net/private-address.ts).
 */
import { Duration, Effect } from "effect"
import { callbackUrlFormProblem } from "../domain/callback-url.ts"
import { InvalidField } from "../domain/errors.ts"
import { resolvePublicAddresses } from "../net/private-address.ts"

/** How long the request-time DNS check of a callback host may take. */
const RESOLVE_TIMEOUT = Duration.seconds(5)

const refuse = (msg: string, type: string) =>
  new InvalidField({ field: ["callback_url"], detail: `callback_url refused: ${msg}`, msg, type })

/**
 * Validates a request's callback_url: its form always, its address unless `allowPrivate`.
 * Fails with InvalidField on `callback_url` (a 422 `validation_error` on the wire).
 */
export const validateCallbackUrl = (url: string | null | undefined, allowPrivate: boolean) =>
  Effect.gen(function*() {
    if (url === undefined || url === null) return
    const problem = callbackUrlFormProblem(url)
    if (problem !== undefined) return yield* refuse(problem, "value_error.url")
    if (allowPrivate) return
    yield* resolvePublicAddresses(url).pipe(
      Effect.timeoutOrElse({
        duration: RESOLVE_TIMEOUT,
        orElse: () => Effect.fail(refuse(`the host of callback_url did not resolve within ${Duration.format(RESOLVE_TIMEOUT)}`, "value_error.url.host"))
      }),
      Effect.catchTag("PrivateAddressRefused", (refused) => Effect.fail(refuse(refused.message, "value_error.url.private_address")))
    )
  })
