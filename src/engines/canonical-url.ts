/**
 * The de-duplication key of WebSearch results, and the site matching used by the whitelist and
 * blacklist. Two URLs that point at the same page from a reader's point of view (tracking
 * parameters, `www.`, default port, fragment, trailing slash, parameter order) get one key.
 */

/** Query parameters that only track the click, never select content. Lower-case names. */
const trackingParams = new Set([
  "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "mc_cid", "mc_eid", "ref_src", "ref_url",
  "igshid", "igsh", "yclid", "ysclid", "_ga", "_gl", "_hsenc", "_hsmi", "__hstc", "__hssc", "__hsfp", "hsctatracking",
  "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_conv", "vero_id", "wickedid", "twclid", "ttclid", "li_fat_id",
  "s_cid", "epik", "rb_clickid", "srsltid", "spm", "scm", "si", "_openstat", "cmpid", "trk", "trkcampaign"
])

/** Prefixes of tracking parameter families (utm_source, utm_medium, pk_campaign, ...). */
const trackingPrefixes = ["utm_", "pk_", "mtm_", "piwik_", "matomo_", "hmb_", "stm_"]

export const isTrackingParam = (name: string): boolean => {
  const lower = name.toLowerCase()
  return trackingParams.has(lower) || trackingPrefixes.some((prefix) => lower.startsWith(prefix))
}

const defaultPorts: Record<string, string> = { "http:": "80", "https:": "443", "ftp:": "21" }

/**
 * Canonical form of a URL: lower-case scheme and host, no `www.`, no default port, no fragment,
 * no trailing slash, tracking parameters removed and the remaining parameters sorted (by name,
 * then value, so repeated names keep a stable order). A string that is not an absolute URL is
 * returned trimmed, so it still de-duplicates against itself.
 */
export const canonicalUrl = (input: string): string => {
  const trimmed = input.trim()
  let url: URL
  try {
    url = new URL(trimmed)
  } catch {
    return trimmed
  }
  const scheme = url.protocol.toLowerCase()
  let host = url.hostname.toLowerCase().replace(/\.$/, "")
  if (host.startsWith("www.")) host = host.slice(4)
  const port = url.port !== "" && url.port !== defaultPorts[scheme] ? `:${url.port}` : ""
  const params = [...url.searchParams.entries()]
    .filter(([name]) => !isTrackingParam(name))
    .sort(([a, av], [b, bv]) => a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0)
  const query = params.length === 0 ? "" : `?${new URLSearchParams(params).toString()}`
  let path = url.pathname
  // Collapse duplicate slashes and drop the trailing one ("/a/b/" and "/a/b" are one page; so are "/" and "").
  path = path.replace(/\/{2,}/g, "/").replace(/\/+$/, "")
  const auth = url.username !== "" ? `${url.username}${url.password !== "" ? `:${url.password}` : ""}@` : ""
  return `${scheme}//${auth}${host}${port}${path}${query}`
}

/** The host of a URL, lower-case, without `www.`; undefined when the URL does not parse. */
export const hostOf = (input: string): string | undefined => {
  try {
    const host = new URL(input).hostname.toLowerCase().replace(/\.$/, "")
    return host.startsWith("www.") ? host.slice(4) : host
  } catch {
    return undefined
  }
}

/**
 * Normalizes a site given by a user ("https://www.Example.com/path", "example.com", "*.example.com")
 * to a bare host ("example.com"). Empty when nothing host-like is left.
 */
export const normalizeSite = (site: string): string => {
  let value = site.trim().toLowerCase()
  value = value.replace(/^[a-z][a-z0-9+.-]*:\/\//, "").replace(/^\*\./, "").replace(/^\.+/, "")
  value = value.split(/[/?#]/, 1)[0] ?? ""
  value = value.replace(/:\d+$/, "").replace(/\.$/, "")
  if (value.startsWith("www.")) value = value.slice(4)
  return value
}

/** True when the host is the site or one of its subdomains ("docs.example.com" matches "example.com"). */
export const hostMatchesSite = (host: string, site: string): boolean =>
  site !== "" && (host === site || host.endsWith(`.${site}`))

/** True when the URL's host matches any of the (normalized) sites. */
export const urlMatchesAnySite = (url: string, sites: ReadonlyArray<string>): boolean => {
  const host = hostOf(url)
  return host !== undefined && sites.some((site) => hostMatchesSite(host, site))
}
