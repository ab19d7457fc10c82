/**
 * The safety boundary of a project, as plain data and pure checks (no I/O):
 *
 * - Domains. An entry is a host name or an IP address; it matches itself and, for a name, every
 *   subdomain (`example.com` matches `example.com`, `shop.example.com`, `a.b.example.com`; not
 *   `notexample.com`). Entries and the hosts they are matched against go through the WHATWG URL
 *   parser, so case, IDN (`bücher.de` is `xn--bcher-kva.de`), a trailing dot (`example.com.`),
 *   IPv4 shorthands (`127.1`, `0x7f000001`), IPv6 spellings and IPv4-mapped IPv6 addresses
 *   (`[::ffff:127.0.0.1]` is `127.0.0.1`) compare as the browser would see them. A leading
 *   `*.` is accepted and dropped (it means the same). `localhost` and `127.0.0.1` are different
 *   hosts, as they are to the browser.
 * - `denied_domains` wins over `allowed_domains`; an empty `allowed_domains` allows every domain
 *   not denied. Only documents are checked (top-level pages, pop-ups and frames), not the
 *   images, scripts and API calls a page makes: a boundary on sub-resources would break most sites.
 * - URLs without a host that load nothing from the network (about:, data:, blob:, javascript:)
 *   pass; any other scheme (file:, ftp:, chrome:...) passes only when there is no allow-list.
 */

import { CONFIRM_CATEGORIES, type ConfirmCategory, MAX_DOMAIN_LENGTH, MAX_DOMAINS } from "../domain/limits.ts"

// The policy's categories and bounds are the contract's (src/domain/limits.ts).
export { CONFIRM_CATEGORIES, type ConfirmCategory, MAX_DOMAIN_LENGTH, MAX_DOMAINS }

export interface SafetyPolicy {
  readonly allowed_domains: ReadonlyArray<string>
  readonly denied_domains: ReadonlyArray<string>
  readonly confirm_actions: ReadonlyArray<ConfirmCategory>
}

export const emptyPolicy: SafetyPolicy = { allowed_domains: [], denied_domains: [], confirm_actions: [] }

/** Whether the policy restricts nothing (no row behaves the same). */
export const isEmptyPolicy = (policy: SafetyPolicy): boolean =>
  policy.allowed_domains.length === 0 && policy.denied_domains.length === 0 && policy.confirm_actions.length === 0

const ipv4 = /^\d{1,3}(\.\d{1,3}){3}$/

/**
 * A host as the URL parser writes it, without a trailing dot, and an IPv4-mapped IPv6 address
 * (`[::ffff:127.0.0.1]`, which the parser writes `[::ffff:7f00:1]`) as the IPv4 address it
 * reaches, so that an entry for one spelling matches the other.
 */
const canonicalHost = (hostname: string): string => {
  const host = hostname.toLowerCase().replace(/\.$/, "")
  const mapped = /^\[(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/.exec(host)
  if (mapped === null) return host
  const high = parseInt(mapped[1]!, 16)
  const low = parseInt(mapped[2]!, 16)
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`
}

const isIpLiteral = (host: string): boolean => host.startsWith("[") || ipv4.test(host)

const entryProblem = "must be a domain name or an IP address such as example.com, shop.example.com or 127.0.0.1 " +
  "(no scheme, port, path or wildcard other than a leading *.)"

/** One domain entry normalised; a string saying what is wrong otherwise. */
export const normaliseDomain = (entry: string): { readonly domain: string } | string => {
  let raw = entry.trim()
  if (raw.startsWith("*.")) raw = raw.slice(2)
  if (raw === "" || raw.length > MAX_DOMAIN_LENGTH || /[\s/\\?#@*]/.test(raw)) return entryProblem
  // A port (host:port) is refused; a bracketed IPv6 address keeps its colons.
  if (!raw.startsWith("[") && raw.includes(":")) return entryProblem
  let url: URL
  try {
    url = new URL(`http://${raw}/`)
  } catch {
    return entryProblem
  }
  if (url.port !== "" || url.username !== "" || url.password !== "" || url.pathname !== "/") return entryProblem
  const domain = canonicalHost(url.hostname)
  if (domain === "" || domain.startsWith(".") || domain.includes("..")) return entryProblem
  return { domain }
}

/** Whether `host` (canonical) is `domain` or one of its subdomains (IP addresses: only itself). */
export const domainMatches = (host: string, domain: string): boolean =>
  host === domain || (!isIpLiteral(domain) && !isIpLiteral(host) && host.endsWith(`.${domain}`))

/** Why a URL is outside the boundary. */
export interface BoundaryRefusal {
  /** For people and the model: what was refused and which rule refused it. */
  readonly reason: string
  readonly url: string
  readonly domain: string | null
  readonly rule: "denied_domains" | "allowed_domains"
}

const quietSchemes = new Set(["about:", "data:", "blob:", "javascript:"])
const webSchemes = new Set(["http:", "https:", "ws:", "wss:"])

/** The host of a URL as the policy compares it, or undefined for a URL with none. */
export const hostOf = (url: string): string | undefined => {
  try {
    const parsed = new URL(url)
    return webSchemes.has(parsed.protocol) && parsed.hostname !== "" ? canonicalHost(parsed.hostname) : undefined
  } catch {
    return undefined
  }
}

/** Undefined when the policy lets a document load from `url`; the refusal otherwise. */
export const checkUrl = (policy: SafetyPolicy, url: string): BoundaryRefusal | undefined => {
  if (policy.allowed_domains.length === 0 && policy.denied_domains.length === 0) return undefined
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined // not a URL the browser can open either
  }
  if (quietSchemes.has(parsed.protocol)) return undefined
  const shown = url.length > 200 ? `${url.slice(0, 200)}…` : url
  const host = hostOf(url)
  if (host === undefined) {
    if (policy.allowed_domains.length === 0) return undefined
    return {
      reason: `${shown} is not on the project's allowed_domains (only http and https pages of ${policy.allowed_domains.slice(0, 10).join(", ")} may be opened)`,
      url,
      domain: null,
      rule: "allowed_domains"
    }
  }
  const denied = policy.denied_domains.find((domain) => domainMatches(host, domain))
  if (denied !== undefined) {
    return {
      reason: `${host} is on the project's denied_domains (${denied}); ${shown} was not opened`,
      url,
      domain: host,
      rule: "denied_domains"
    }
  }
  if (policy.allowed_domains.length > 0 && !policy.allowed_domains.some((domain) => domainMatches(host, domain))) {
    const listed = policy.allowed_domains.slice(0, 10).join(", ") + (policy.allowed_domains.length > 10 ? ", …" : "")
    return {
      reason: `${host} is not on the project's allowed_domains (${listed}); ${shown} was not opened`,
      url,
      domain: host,
      rule: "allowed_domains"
    }
  }
  return undefined
}

/** The http(s) URLs written in a text (instructions). */
export const urlsInText = (text: string): ReadonlyArray<string> =>
  [...text.matchAll(/\bhttps?:\/\/[^\s"'<>`)\]}]+/gi)].map((m) => m[0].replace(/[.,;:!?]+$/, ""))

/**
 * The URLs of a DoAnything create the boundary applies to: every http(s) URL in `instructions`,
 * and any top-level `*_url` string field but `callback_url` (where the service posts results,
 * which the agent never browses), with the field it came from.
 */
export const urlsOfCreate = (body: Readonly<Record<string, unknown>>): ReadonlyArray<{ readonly field: string; readonly url: string }> => {
  const found: Array<{ field: string; url: string }> = []
  for (const [field, value] of Object.entries(body)) {
    if (typeof value !== "string") continue
    // payload: a schedule trigger's event data, handed to the run as context (a JSON text here).
    if (field === "instructions" || field === "content" || field === "payload") for (const url of urlsInText(value)) found.push({ field, url })
    else if (field.endsWith("_url") && field !== "callback_url") found.push({ field, url: value })
  }
  return found
}
