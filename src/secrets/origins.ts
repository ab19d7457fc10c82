/**
 * The origins a secret is bound to: where its value may be typed. An entry is an origin
 * (`https://example.com`, `http://127.0.0.1:8080`: scheme, host, optional port, nothing else) or
 * a wildcard over subdomains (`https://*.example.com` matches `https://app.example.com` and
 * `https://a.b.example.com`, not `https://example.com`; list both for both). Scheme and port
 * must match as they are written (a default port may be left out). Only http and https.
 */

/** An origin pattern, parsed. */
export interface OriginPattern {
  readonly protocol: "http:" | "https:"
  /** The host for an exact entry, the suffix after `*.` for a wildcard (lower case, punycode). */
  readonly hostname: string
  /** "" for the scheme's default port. */
  readonly port: string
  readonly wildcard: boolean
}

const problem = "must be an origin such as https://example.com, http://127.0.0.1:8080 or https://*.example.com (scheme, host and optional port; no path, query or credentials)"

/** Parses one entry; a string saying what is wrong otherwise. */
export const parseOrigin = (entry: string): OriginPattern | string => {
  const trimmed = entry.trim()
  const match = /^(https?):\/\/(\*\.)?([^/?#]+)\/?$/i.exec(trimmed)
  if (match === null) return problem
  const wildcard = match[2] !== undefined
  let url: URL
  try {
    url = new URL(`${match[1]!.toLowerCase()}://${match[3]}`)
  } catch {
    return problem
  }
  if (url.username !== "" || url.password !== "" || url.hostname === "") return problem
  if (wildcard && (url.hostname.startsWith("[") || /^[\d.]+$/.test(url.hostname) || !url.hostname.includes("."))) {
    return "a wildcard (*.) must stand before a domain name with at least two labels, such as https://*.example.com"
  }
  return { protocol: url.protocol as "http:" | "https:", hostname: url.hostname, port: url.port, wildcard }
}

/** The entry as it is stored and shown: lower case, default port left out. */
export const formatOrigin = (pattern: OriginPattern): string =>
  `${pattern.protocol}//${pattern.wildcard ? "*." : ""}${pattern.hostname}${pattern.port === "" ? "" : `:${pattern.port}`}`

/** Whether a document's origin (`location.origin`: "null" for opaque ones) is one of the patterns. */
export const originAllowed = (origin: string, patterns: ReadonlyArray<OriginPattern>): boolean => {
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    return false
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return false
  return patterns.some((p) =>
    p.protocol === url.protocol && p.port === url.port &&
    (p.wildcard ? url.hostname.endsWith(`.${p.hostname}`) : url.hostname === p.hostname)
  )
}
