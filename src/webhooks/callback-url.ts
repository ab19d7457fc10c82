/**
 * The rules a `callback_url` must meet, checked when the request that carries it arrives (a
 * refused URL is a 422 and nothing is created) and again at every delivery (DNS may change):
 * - form: an absolute http(s) URL with a host, at most 2083 characters, no user name or
 *   password in it;
 * - address (unless WA_ALLOW_PRIVATE_NETWORKS): a literal IP is classified directly, a host name
 *   is resolved and every address it resolves to must be public (src/net/private-address.ts).
 */
import { Duration, Effect } from "effect"
import { validationError } from "../http/errors.ts"
import { resolvePublicAddresses } from "../net/private-address.ts"

export const CALLBACK_URL_MAX_LENGTH = 2083

/** How long the request-time DNS check of a callback host may take. */
const RESOLVE_TIMEOUT = Duration.seconds(5)

/** What is wrong with the callback URL's form, or undefined when it is well formed. */
export const callbackUrlFormProblem = (url: string): string | undefined => {
  if (url.length > CALLBACK_URL_MAX_LENGTH) return `callback_url is longer than ${CALLBACK_URL_MAX_LENGTH} characters`
  if (url.trim() !== url || url === "") return "callback_url must be an absolute http or https URL"
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return "callback_url must be an absolute http or https URL"
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return `callback_url must use http or https, not ${parsed.protocol.replace(/:$/, "")}`
  }
  if (parsed.hostname === "") return "callback_url must name a host"
  if (parsed.username !== "" || parsed.password !== "") return "callback_url must not carry a user name or password"
  return undefined
}

const refuse = (msg: string, type: string) =>
  validationError(`callback_url refused: ${msg}`, [{ loc: ["body", "callback_url"], msg, type }])

/**
 * Validates a request's callback_url: its form always, its address unless `allowPrivate`.
 * Fails with a 422 `validation_error` naming `["body", "callback_url"]`.
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
