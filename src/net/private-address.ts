/**
 * Refuses outbound targets on private, loopback, link-local and metadata addresses
 * (server-side request forgery guard). Checked after DNS resolution, so a public name that
 * resolves to 127.0.0.1 is refused too; callers check again on every redirect.
 */
import { Effect, Schema } from "effect"
import { lookup } from "node:dns/promises"
import { isIP } from "node:net"

export class PrivateAddressRefused extends Schema.TaggedError<PrivateAddressRefused>()("PrivateAddressRefused", {
  url: Schema.String,
  address: Schema.String,
  message: Schema.String
}) {}

const parseV4 = (ip: string): Array<number> => ip.split(".").map(Number)

const isPrivateV4 = (ip: string): boolean => {
  const [a, b] = parseV4(ip) as [number, number, number, number]
  return a === 0 || a === 10 || a === 127 ||
    (a === 100 && b >= 64 && b <= 127) || // carrier-grade NAT
    (a === 169 && b === 254) || // link-local, cloud metadata (169.254.169.254)
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0) ||
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    a >= 224 // multicast and reserved
}

const isPrivateV6 = (ip: string): boolean => {
  const lower = ip.toLowerCase()
  if (lower === "::" || lower === "::1") return true
  const mapped = lower.match(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/)
  if (mapped) return isPrivateV4(mapped[1]!)
  return lower.startsWith("fc") || lower.startsWith("fd") || // unique local
    lower.startsWith("fe8") || lower.startsWith("fe9") || lower.startsWith("fea") || lower.startsWith("feb") || // link-local
    lower.startsWith("ff") || // multicast
    lower.startsWith("fd00:ec2::254") // AWS metadata over IPv6
}

/** True when the literal IP address must not be reached from the service. */
export const isPrivateAddress = (ip: string): boolean => {
  const kind = isIP(ip)
  if (kind === 4) return isPrivateV4(ip)
  if (kind === 6) return isPrivateV6(ip)
  return true
}

const metadataHosts = new Set(["metadata.google.internal", "metadata", "localhost"])

/**
 * Resolves the URL's host and fails with PrivateAddressRefused if any address it resolves to
 * is private. Non-http(s) schemes are refused as well. With `allowPrivate` nothing is checked.
 */
export const checkPublicUrl = Effect.fn("checkPublicUrl")(function*(url: string, allowPrivate: boolean) {
  if (allowPrivate) return
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return yield* new PrivateAddressRefused({ url, address: "", message: `not a valid URL: ${url}` })
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return yield* new PrivateAddressRefused({ url, address: "", message: `scheme ${parsed.protocol} is not allowed` })
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, "").toLowerCase()
  if (metadataHosts.has(host) || host.endsWith(".localhost") || host.endsWith(".internal")) {
    return yield* new PrivateAddressRefused({ url, address: host, message: `host ${host} is a private address` })
  }
  const addresses = isIP(host) !== 0
    ? [host]
    : yield* Effect.tryPromise({
      try: () => lookup(host, { all: true, verbatim: true }).then((rows) => rows.map((row) => row.address)),
      catch: () => new PrivateAddressRefused({ url, address: host, message: `host ${host} does not resolve` })
    })
  const refused = addresses.find(isPrivateAddress)
  if (refused !== undefined) {
    return yield* new PrivateAddressRefused({
      url,
      address: refused,
      message: `${host} resolves to ${refused}, a private, loopback, link-local or metadata address`
    })
  }
})
