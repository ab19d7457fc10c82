/**
 * Password hashing with scrypt from node:crypto (memory-hard, no native addon). The stored form
 * names its parameters (`scrypt$N$r$p$salt$hash`, base64url), so the cost can be raised later and
 * old hashes still verify (and are re-hashed at the next sign-in, see `needsRehash`).
 *
 * Cost: N = 2^15, r = 8, p = 1 (32 MiB per hash). Measured on the development machine at about
 * 72 ms per hash (2^16 took about 150 ms, 2^17 about 300 ms); bench/login.ts prints the figure.
 * The hash runs on libuv's thread pool (the async scrypt), so the event loop keeps serving.
 */
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import { Effect } from "effect"

export interface ScryptParams {
  readonly N: number
  readonly r: number
  readonly p: number
}

export const DEFAULT_SCRYPT: ScryptParams = { N: 2 ** 15, r: 8, p: 1 }
const KEY_LENGTH = 32
const SALT_LENGTH = 16

const derive = (password: string, salt: Buffer, params: ScryptParams, keyLength: number) =>
  Effect.callback<Buffer>((resume) => {
    scrypt(password.normalize("NFC"), salt, keyLength, {
      N: params.N,
      r: params.r,
      p: params.p,
      maxmem: 256 * params.N * params.r + 1024 * 1024
    }, (error, key) => resume(error === null ? Effect.succeed(key) : Effect.die(error)))
  })

export const hashPassword = (password: string, params: ScryptParams = DEFAULT_SCRYPT) =>
  Effect.gen(function*() {
    const salt = randomBytes(SALT_LENGTH)
    const key = yield* derive(password, salt, params, KEY_LENGTH)
    return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString("base64url")}$${key.toString("base64url")}`
  })

interface Parsed {
  readonly params: ScryptParams
  readonly salt: Buffer
  readonly key: Buffer
}

const parse = (stored: string): Parsed | undefined => {
  const parts = stored.split("$")
  if (parts.length !== 6 || parts[0] !== "scrypt") return undefined
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])]
  if (![N, r, p].every((n) => Number.isSafeInteger(n) && n > 0) || N > 2 ** 20 || r > 32 || p > 16) return undefined
  return { params: { N, r, p }, salt: Buffer.from(parts[4]!, "base64url"), key: Buffer.from(parts[5]!, "base64url") }
}

/**
 * Whether the password matches the stored hash, compared in constant time. A missing or unreadable
 * hash (an unknown email, a user without a password) still costs one full derivation, so the
 * answer time does not tell whether the account exists.
 */
export const verifyPassword = (password: string, stored: string | null | undefined) =>
  Effect.gen(function*() {
    const parsed = stored === null || stored === undefined ? undefined : parse(stored)
    if (parsed === undefined) {
      yield* derive(password, dummySalt, DEFAULT_SCRYPT, KEY_LENGTH)
      return false
    }
    const key = yield* derive(password, parsed.salt, parsed.params, parsed.key.length)
    return key.length === parsed.key.length && timingSafeEqual(key, parsed.key)
  })

const dummySalt = randomBytes(SALT_LENGTH)

/** Whether a stored hash was made with other parameters than today's (re-hash it after a sign-in). */
export const needsRehash = (stored: string, params: ScryptParams = DEFAULT_SCRYPT): boolean => {
  const parsed = parse(stored)
  return parsed === undefined || parsed.params.N !== params.N || parsed.params.r !== params.r || parsed.params.p !== params.p
}
