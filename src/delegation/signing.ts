/**
 * Signed requests of the delegation service (AK/SK). The caller sends
 *
 *   Authorization: WA-HMAC-SHA256 Credential=<access key id>, Timestamp=<unix seconds>, Nonce=<16..64 [A-Za-z0-9_-]>, Signature=<64 hex>
 *
 * where Signature is the hex HMAC-SHA256, keyed with the secret key (the whole `wask_...` string
 * as UTF-8), of the canonical string: the lines
 *
 *   WA-HMAC-SHA256
 *   <access key id>
 *   <timestamp>
 *   <nonce>
 *   <METHOD>
 *   <path and query exactly as sent, e.g. /api/v3/eak/delegations>
 *   <hex SHA-256 of the body bytes (of the empty string when there is none)>
 *
 * joined with "\n" (no trailing newline). The timestamp must be within ±5 minutes of the server's
 * clock and a nonce is accepted once per access key (remembered in PostgreSQL past the window).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { AccessKeyId } from "../domain/id-schemas.ts"

export const SIGNING_ALGORITHM = "WA-HMAC-SHA256"
export const SIGNATURE_WINDOW_SECONDS = 300
export const ACCESS_KEY_SECRET_PREFIX = "wask_"

export interface SignedHeader {
  /** The access key id the request names (well formed; whether it exists is the store's). */
  readonly credential: AccessKeyId
  readonly timestamp: number
  readonly nonce: string
  readonly signature: string
}

const headerPattern = /^WA-HMAC-SHA256\s+(.+)$/
const noncePattern = /^[A-Za-z0-9_-]{16,64}$/
const credentialPattern = /^wak_[0-9a-z]{26}$/

/** The parts of an Authorization header, or a reason it is malformed. */
export const parseSignedHeader = (header: string): SignedHeader | string => {
  const match = headerPattern.exec(header.trim())
  if (match === null) return `the Authorization header must be "${SIGNING_ALGORITHM} Credential=..., Timestamp=..., Nonce=..., Signature=..."`
  const fields: Record<string, string> = {}
  for (const part of match[1]!.split(",")) {
    const at = part.indexOf("=")
    if (at <= 0) return "each Authorization field is Name=value, separated by commas"
    fields[part.slice(0, at).trim()] = part.slice(at + 1).trim()
  }
  const credential = fields["Credential"] ?? ""
  const timestamp = fields["Timestamp"] ?? ""
  const nonce = fields["Nonce"] ?? ""
  const signature = fields["Signature"] ?? ""
  if (!credentialPattern.test(credential)) return "Credential must be an access key id (wak_...)"
  if (!/^\d{1,12}$/.test(timestamp)) return "Timestamp must be the Unix time in seconds"
  if (!noncePattern.test(nonce)) return "Nonce must be 16 to 64 characters of [A-Za-z0-9_-], new for every request"
  if (!/^[0-9a-f]{64}$/.test(signature)) return "Signature must be 64 lowercase hex characters (HMAC-SHA256)"
  return { credential: AccessKeyId.make(credential), timestamp: Number(timestamp), nonce, signature }
}

export const bodyHash = (body: Uint8Array | string): string => createHash("sha256").update(body).digest("hex")

/** What a signer and the verifier both compute; a client's access key id is its own text here (no brand). */
export const canonicalString = (input: {
  readonly accessKeyId: string
  readonly timestamp: number
  readonly nonce: string
  readonly method: string
  readonly pathWithQuery: string
  readonly bodySha256: string
}): string =>
  [SIGNING_ALGORITHM, input.accessKeyId, String(input.timestamp), input.nonce, input.method.toUpperCase(), input.pathWithQuery, input.bodySha256].join("\n")

export const signCanonical = (secret: string, canonical: string): string => createHmac("sha256", secret).update(canonical).digest("hex")

/** Whether the timestamp (seconds) is within the window of `nowMs`. */
export const isFresh = (timestamp: number, nowMs: number): boolean => Math.abs(nowMs / 1000 - timestamp) <= SIGNATURE_WINDOW_SECONDS

/** Constant-time check of a signature against the one the secret gives. */
export const signatureMatches = (secret: string, canonical: string, signature: string): boolean => {
  const expected = Buffer.from(signCanonical(secret, canonical), "hex")
  const sent = Buffer.from(signature, "hex")
  return expected.length === sent.length && timingSafeEqual(expected, sent)
}

/** The Authorization header of a request (what a client does; used by the tests, the bench and the README example). */
export const signRequest = (input: {
  readonly accessKeyId: string
  readonly secret: string
  readonly method: string
  readonly pathWithQuery: string
  readonly body: string
  readonly timestamp?: number
  readonly nonce?: string
}): string => {
  const timestamp = input.timestamp ?? Math.floor(Date.now() / 1000)
  const nonce = input.nonce ?? randomBytes(16).toString("base64url")
  const canonical = canonicalString({
    accessKeyId: input.accessKeyId,
    timestamp,
    nonce,
    method: input.method,
    pathWithQuery: input.pathWithQuery,
    bodySha256: bodyHash(input.body)
  })
  return `${SIGNING_ALGORITHM} Credential=${input.accessKeyId}, Timestamp=${timestamp}, Nonce=${nonce}, Signature=${signCanonical(input.secret, canonical)}`
}

export const generateAccessKeySecret = (): string => `${ACCESS_KEY_SECRET_PREFIX}${randomBytes(32).toString("base64url")}`

/** Delegation tokens: `wad_` + 43 base64url characters (256 random bits); only their SHA-256 is stored. */
export const DELEGATION_TOKEN_PREFIX = "wad_"
export const generateDelegationToken = (): string => `${DELEGATION_TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`
export const isWellFormedDelegationToken = (token: string): boolean => /^wad_[A-Za-z0-9_-]{43}$/.test(token)
export const generateCode = (): string => randomBytes(32).toString("base64url")
