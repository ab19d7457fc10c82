/**
 * TOTP secrets (RFC 6238) with `otpauth`: the value given is an `otpauth://totp/...` URI (what
 * a site's QR code holds) or a base32 seed (SHA-1, 6 digits, 30 s, the common defaults). It is
 * kept as the URI; a run types the current code.
 */
import { Secret, TOTP, URI } from "otpauth"

export interface TotpShape {
  readonly digits: number
  readonly period: number
  readonly algorithm: string
}

export interface ParsedTotp extends TotpShape {
  /** The canonical otpauth URI: what is sealed. */
  readonly uri: string
}

/** Shortest base32 seed accepted: 16 characters are 80 bits, what most sites issue. */
const MIN_SEED_CHARACTERS = 16

/** Parses the value of a TOTP secret; a string saying what is wrong otherwise (never echoing it). */
export const parseTotp = (value: string): ParsedTotp | string => {
  const trimmed = value.trim()
  let totp: TOTP
  if (/^otpauth:\/\//i.test(trimmed)) {
    let parsed: ReturnType<typeof URI.parse>
    try {
      parsed = URI.parse(trimmed)
    } catch {
      return "is not a valid otpauth:// URI (expected otpauth://totp/<label>?secret=<base32>&...)"
    }
    if (!(parsed instanceof TOTP)) return "is an otpauth://hotp URI; only time-based (otpauth://totp) codes are supported"
    totp = parsed
    if (totp.secret.bytes.length * 8 < MIN_SEED_CHARACTERS * 5) return `holds a seed shorter than ${MIN_SEED_CHARACTERS} base32 characters`
  } else {
    const seed = trimmed.replace(/[\s-]/g, "").replace(/=+$/, "").toUpperCase()
    if (!/^[A-Z2-7]+$/.test(seed)) return "must be an otpauth://totp/ URI or a base32 seed (letters A-Z and digits 2-7)"
    if (seed.length < MIN_SEED_CHARACTERS) return `must be a base32 seed of at least ${MIN_SEED_CHARACTERS} characters`
    totp = new TOTP({ secret: Secret.fromBase32(seed), algorithm: "SHA1", digits: 6, period: 30 })
  }
  if (totp.digits < 6 || totp.digits > 10) return "has digits outside 6 to 10"
  if (totp.period < 1 || totp.period > 300) return "has a period outside 1 to 300 seconds"
  return { uri: URI.stringify(totp), digits: totp.digits, period: totp.period, algorithm: totp.algorithm }
}

/** The code of a stored TOTP URI at `now` (ms). */
export const totpCode = (uri: string, now: number = Date.now()): string => {
  const totp = URI.parse(uri)
  if (!(totp instanceof TOTP)) throw new Error("not a TOTP secret")
  return totp.generate({ timestamp: now })
}
