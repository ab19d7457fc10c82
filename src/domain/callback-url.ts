/**
 * The form a `callback_url` must have: an absolute http(s) URL with a host, at most 2083
 * characters, no user name or password in it. Its address is checked where DNS and the
 * configuration are at hand (src/webhooks/callback-url.ts).
 */
export const CALLBACK_URL_MAX_LENGTH = 2083

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
