/**
 * Refuses outbound targets on private, loopback, link-local, metadata and other non-public
 * addresses (server-side request forgery guard). The one classifier every outbound path uses:
 * callbacks, the reader's HTTP fetch, the browser's navigation guard and its egress proxy.
 *
 * The decision is taken on the address BYTES, never on its spelling: an address is parsed to 4
 * or 16 bytes, an IPv4 address embedded in an IPv6 one is taken out and judged as IPv4
 * (IPv4-mapped ::ffff:0:0/96, SIIT ::ffff:0:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo
 * 2001::/32), and the result is checked against the IPv4 and IPv6 special-purpose ranges. So
 * `[::ffff:127.0.0.1]`, `[::ffff:7f00:1]`, `[0:0:0:0:0:ffff:7f00:1]`, `[::127.0.0.1]`,
 * `[64:ff9b::7f00:1]` and `[2002:7f00:1::]` are all loopback here. An IPv6 address outside
 * global unicast (2000::/3) is refused as reserved.
 *
 * Host names are resolved and EVERY address they resolve to must be public; callers check again
 * on every redirect, and `publicLookup` lets a socket connect only to addresses it checked.
 */
import { Effect, Schema } from "effect"
import { lookup } from "node:dns"
import { lookup as lookupAsync } from "node:dns/promises"
import { isIP, type LookupFunction } from "node:net"

export class PrivateAddressRefused extends Schema.TaggedError<PrivateAddressRefused>()("PrivateAddressRefused", {
  url: Schema.String,
  address: Schema.String,
  message: Schema.String
}) {}

// ---------------------------------------------------------------------------------------------
// Parsing

const parseV4 = (text: string): Uint8Array | undefined => {
  const parts = text.split(".")
  if (parts.length !== 4) return undefined
  const bytes = new Uint8Array(4)
  for (let i = 0; i < 4; i++) {
    const part = parts[i]!
    if (!/^\d{1,3}$/.test(part)) return undefined
    const n = Number(part)
    if (n > 255) return undefined
    bytes[i] = n
  }
  return bytes
}

const parseV6 = (input: string): Uint8Array | undefined => {
  let text = input
  const zone = text.indexOf("%")
  if (zone >= 0) text = text.slice(0, zone)
  const bytes = new Uint8Array(16)
  // A trailing dotted quad fills the last 32 bits.
  let tail: Uint8Array | undefined
  const lastColon = text.lastIndexOf(":")
  if (text.slice(lastColon + 1).includes(".")) {
    tail = parseV4(text.slice(lastColon + 1))
    if (tail === undefined) return undefined
    text = text.slice(0, lastColon + 1) + "0:0"
  }
  const halves = text.split("::")
  if (halves.length > 2) return undefined
  const groupsOf = (s: string) => s === "" ? [] : s.split(":")
  const head = groupsOf(halves[0]!)
  const rest = halves.length === 2 ? groupsOf(halves[1]!) : []
  const missing = 8 - head.length - rest.length
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...rest]
  for (let i = 0; i < 8; i++) {
    const group = groups[i]!
    if (!/^[0-9a-f]{1,4}$/i.test(group)) return undefined
    const n = parseInt(group, 16)
    bytes[i * 2] = n >> 8
    bytes[i * 2 + 1] = n & 0xff
  }
  if (tail !== undefined) bytes.set(tail, 12)
  return bytes
}

/**
 * The bytes of a literal IP address: 4 for IPv4 (dotted decimal), 16 for IPv6 (any spelling,
 * zone id ignored); undefined for anything else. Brackets around IPv6 are accepted.
 */
export const parseIpBytes = (address: string): Uint8Array | undefined => {
  const text = address.replace(/^\[(.*)\]$/, "$1")
  const kind = isIP(text)
  if (kind === 4) return parseV4(text)
  if (kind === 6) return parseV6(text)
  return undefined
}

const v4Text = (b: Uint8Array) => `${b[0]}.${b[1]}.${b[2]}.${b[3]}`

// ---------------------------------------------------------------------------------------------
// Ranges

interface Range {
  readonly prefix: ReadonlyArray<number>
  readonly bits: number
  readonly label: string
}

const within = (bytes: Uint8Array, prefix: ReadonlyArray<number>, bits: number): boolean => {
  for (let bit = 0; bit < bits; bit += 8) {
    const remaining = Math.min(8, bits - bit)
    const mask = (0xff << (8 - remaining)) & 0xff
    if ((bytes[bit / 8]! & mask) !== ((prefix[bit / 8] ?? 0) & mask)) return false
  }
  return true
}

/** IPv4 special-purpose ranges that are not publicly reachable (IANA registry, RFC 6890 and later). */
const v4Ranges: ReadonlyArray<Range> = [
  { prefix: [0], bits: 8, label: "unspecified (\"this network\", 0.0.0.0/8)" },
  { prefix: [10], bits: 8, label: "private (10.0.0.0/8)" },
  { prefix: [100, 64], bits: 10, label: "carrier-grade NAT (100.64.0.0/10)" },
  { prefix: [127], bits: 8, label: "loopback (127.0.0.0/8)" },
  { prefix: [169, 254], bits: 16, label: "link-local / cloud metadata (169.254.0.0/16)" },
  { prefix: [172, 16], bits: 12, label: "private (172.16.0.0/12)" },
  { prefix: [192, 0, 0], bits: 24, label: "IETF protocol assignments (192.0.0.0/24)" },
  { prefix: [192, 0, 2], bits: 24, label: "documentation (192.0.2.0/24)" },
  { prefix: [192, 88, 99], bits: 24, label: "6to4 relay anycast (192.88.99.0/24)" },
  { prefix: [192, 168], bits: 16, label: "private (192.168.0.0/16)" },
  { prefix: [198, 18], bits: 15, label: "benchmarking (198.18.0.0/15)" },
  { prefix: [198, 51, 100], bits: 24, label: "documentation (198.51.100.0/24)" },
  { prefix: [203, 0, 113], bits: 24, label: "documentation (203.0.113.0/24)" },
  { prefix: [224], bits: 4, label: "multicast (224.0.0.0/4)" },
  { prefix: [240], bits: 4, label: "reserved / broadcast (240.0.0.0/4)" }
]

/** IPv6 ranges refused outright (those embedding IPv4 are handled before these). */
const v6Ranges: ReadonlyArray<Range> = [
  { prefix: [0x01, 0x00, 0, 0, 0, 0, 0, 0], bits: 64, label: "discard-only (100::/64)" },
  { prefix: [0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], bits: 48, label: "local-use NAT64 (64:ff9b:1::/48)" },
  { prefix: [0x20, 0x01, 0x0d, 0xb8], bits: 32, label: "documentation (2001:db8::/32)" },
  { prefix: [0x3f, 0xff], bits: 20, label: "documentation (3fff::/20)" },
  { prefix: [0x20, 0x01, 0x00], bits: 23, label: "IETF protocol assignments (2001::/23)" },
  { prefix: [0x5f, 0x00], bits: 16, label: "SRv6 SIDs (5f00::/16)" },
  { prefix: [0xfc], bits: 7, label: "unique local (fc00::/7)" },
  { prefix: [0xfe, 0x80], bits: 10, label: "link-local (fe80::/10)" },
  { prefix: [0xfe, 0xc0], bits: 10, label: "site-local (fec0::/10)" },
  { prefix: [0xff], bits: 8, label: "multicast (ff00::/8)" }
]

const classifyV4 = (b: Uint8Array): string | undefined => v4Ranges.find((r) => within(b, r.prefix, r.bits))?.label

const embedded = (what: string, v4: Uint8Array): string | undefined => {
  const verdict = classifyV4(v4)
  return verdict === undefined ? undefined : `${what} embedding ${v4Text(v4)}, ${verdict}`
}

const classifyV6 = (b: Uint8Array): string | undefined => {
  const zeroUpTo = (n: number) => b.subarray(0, n).every((x) => x === 0)
  // ::/96: the unspecified address, loopback and the deprecated IPv4-compatible form.
  if (zeroUpTo(12)) {
    if (b[12] === 0 && b[13] === 0 && b[14] === 0 && b[15] === 0) return "unspecified (::)"
    if (b[12] === 0 && b[13] === 0 && b[14] === 0 && b[15] === 1) return "loopback (::1)"
    const v4 = b.subarray(12, 16)
    return embedded("IPv4-compatible address (::/96)", v4) ?? `IPv4-compatible address (::/96, deprecated) embedding ${v4Text(v4)}`
  }
  // ::ffff:0:0/96 (IPv4-mapped) and ::ffff:0:0:0/96 (SIIT): the embedded IPv4 decides.
  if (zeroUpTo(10) && b[10] === 0xff && b[11] === 0xff) return embedded("IPv4-mapped address (::ffff:0:0/96)", b.subarray(12, 16))
  if (zeroUpTo(8) && b[8] === 0xff && b[9] === 0xff && b[10] === 0 && b[11] === 0) {
    return embedded("IPv4-translated address (::ffff:0:0:0/96)", b.subarray(12, 16))
  }
  // NAT64 well-known prefix 64:ff9b::/96: a public IPv4 behind it is public.
  if (within(b, [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], 96)) return embedded("NAT64 address (64:ff9b::/96)", b.subarray(12, 16))
  // 6to4 2002::/16: the relay delivers to the IPv4 address in bits 16..47.
  if (within(b, [0x20, 0x02], 16)) return embedded("6to4 address (2002::/16)", b.subarray(2, 6))
  // Teredo 2001::/32: server IPv4 in bits 32..63, client IPv4 (inverted) in the last 32 bits.
  if (within(b, [0x20, 0x01, 0x00, 0x00], 32)) {
    const client = b.subarray(12, 16).map((x) => x ^ 0xff)
    return embedded("Teredo address (2001::/32), server", b.subarray(4, 8)) ?? embedded("Teredo address (2001::/32), client", client)
  }
  const range = v6Ranges.find((r) => within(b, r.prefix, r.bits))
  if (range !== undefined) return range.label
  if (!within(b, [0x20], 3)) return "reserved (outside global unicast 2000::/3)"
  return undefined
}

/**
 * Why the literal IP address must not be reached from the service ("loopback (127.0.0.0/8)",
 * ...), or undefined when it is a public address. Anything that is not an IP address is refused.
 */
export const addressRefusal = (address: string): string | undefined => {
  const bytes = parseIpBytes(address)
  if (bytes === undefined) return "not an IP address"
  return bytes.length === 4 ? classifyV4(bytes) : classifyV6(bytes)
}

/** True when the literal IP address must not be reached from the service. */
export const isPrivateAddress = (address: string): boolean => addressRefusal(address) !== undefined

// ---------------------------------------------------------------------------------------------
// Names and URLs

const refusedNames = new Set(["metadata.google.internal", "metadata", "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"])

/** The URL's host as used for the check: brackets and trailing dots removed, lower case. */
export const hostOf = (parsed: URL): string => parsed.hostname.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.+$/, "")

const refusedName = (host: string): boolean =>
  refusedNames.has(host) || host.endsWith(".localhost") || host.endsWith(".internal")

/**
 * Resolves the URL's host and returns every address it resolves to, all of them public (a literal
 * IP is classified directly). Fails with PrivateAddressRefused for a non-http(s) URL, a refused
 * name, a name that does not resolve, or any private address among the answers.
 */
export const resolvePublicAddresses = Effect.fn("resolvePublicAddresses")(function*(url: string) {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return yield* new PrivateAddressRefused({ url, address: "", message: `not a valid URL: ${url}` })
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return yield* new PrivateAddressRefused({ url, address: "", message: `scheme ${parsed.protocol} is not allowed` })
  }
  const host = hostOf(parsed)
  if (refusedName(host)) {
    return yield* new PrivateAddressRefused({ url, address: host, message: `host ${host} is a private address` })
  }
  const literal = parseIpBytes(host) !== undefined
  const addresses: ReadonlyArray<string> = literal
    ? [host]
    : yield* Effect.tryPromise({
      try: () => lookupAsync(host, { all: true, verbatim: true }).then((rows) => rows.map((row) => row.address)),
      catch: () => new PrivateAddressRefused({ url, address: host, message: `host ${host} does not resolve` })
    })
  if (addresses.length === 0) {
    return yield* new PrivateAddressRefused({ url, address: host, message: `host ${host} does not resolve` })
  }
  for (const address of addresses) {
    const reason = addressRefusal(address)
    if (reason !== undefined) {
      return yield* new PrivateAddressRefused({
        url,
        address,
        message: literal
          ? `${host} is a non-public address: ${reason}`
          : `${host} resolves to ${address}, a non-public address: ${reason}`
      })
    }
  }
  return addresses
})

/**
 * Fails with PrivateAddressRefused if the URL is not http(s) or its host is (or resolves to) a
 * non-public address. With `allowPrivate` nothing is checked.
 */
export const checkPublicUrl = (url: string, allowPrivate: boolean): Effect.Effect<void, PrivateAddressRefused> =>
  allowPrivate ? Effect.void : Effect.asVoid(resolvePublicAddresses(url))

/** The error a `publicLookup` socket fails with when a name resolves to a non-public address. */
export class PrivateLookupError extends Error {
  readonly code = "ERR_PRIVATE_ADDRESS"
  readonly hostname: string
  readonly address: string
  readonly reason: string
  constructor(hostname: string, address: string, reason: string) {
    super(`${hostname} resolves to ${address}, a non-public address: ${reason}`)
    this.hostname = hostname
    this.address = address
    this.reason = reason
  }
}

/**
 * A `lookup` for node:net / node:http sockets that refuses names resolving to any non-public
 * address, so a connection goes only to an address checked at connect time (no DNS rebinding
 * between a check and the connect). Literal IPs do not go through `lookup`: check them first.
 */
export const publicLookup: LookupFunction = (hostname, options, callback) => {
  const name = hostname.toLowerCase().replace(/\.+$/, "")
  if (refusedName(name)) {
    callback(new PrivateLookupError(hostname, name, "refused host name"), "", 4)
    return
  }
  lookup(hostname, { ...options, all: true, verbatim: true }, (error, addresses) => {
    if (error) return callback(error, "", 4)
    const refused = addresses.map((a) => ({ a, reason: addressRefusal(a.address) })).find((x) => x.reason !== undefined)
    if (refused !== undefined) return callback(new PrivateLookupError(hostname, refused.a.address, refused.reason!), "", 4)
    if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: "ENOTFOUND" }), "", 4)
    if (options.all) return (callback as unknown as (e: null, a: typeof addresses) => void)(null, addresses)
    callback(null, addresses[0]!.address, addresses[0]!.family)
  })
}
