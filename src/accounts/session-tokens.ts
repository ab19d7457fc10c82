/**
 * Console session tokens: `was_` + 43 base64url characters (256 random bits). Only the SHA-256 of
 * a token is stored. The CSRF token of a cookie session is derived from the session token with
 * HMAC, so it needs no storage and cannot be computed without the (HttpOnly) session cookie.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto"

export const SESSION_TOKEN_PREFIX = "was_"
const tokenPattern = /^was_[A-Za-z0-9_-]{43}$/

export const generateSessionToken = (): string => `${SESSION_TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`

export const isWellFormedSessionToken = (token: string): boolean => tokenPattern.test(token)

export const hashToken = (token: string): string => createHash("sha256").update(token).digest("hex")

export const csrfTokenFor = (sessionToken: string): string =>
  createHmac("sha256", sessionToken).update("wa console csrf v1").digest("base64url")

/** Constant-time comparison of two strings (false when their lengths differ). */
export const safeEqual = (a: string, b: string): boolean => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/** Invitation tokens: 256 random bits, base64url (43 characters); only their SHA-256 is stored. */
export const generateInvitationToken = (): string => randomBytes(32).toString("base64url")
