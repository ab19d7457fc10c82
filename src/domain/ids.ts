/**
 * Resource ids: a prefix (`proj_`, `sess_`, `run_`, ...) then 26 characters that sort by creation
 * time (48-bit millisecond time, then 80 random bits, Crockford base32), so ordering by id is
 * ordering by creation and cursor pagination stays stable under concurrent inserts.
 */
import { randomBytes } from "node:crypto"

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

const encodeTime = (ms: number): string => {
  let out = ""
  for (let i = 0; i < 10; i++) {
    out = alphabet[ms % 32] + out
    ms = Math.floor(ms / 32)
  }
  return out
}

const encodeRandom = (): string => {
  const bytes = randomBytes(16)
  let out = ""
  for (let i = 0; i < 16; i++) out += alphabet[bytes[i]! % 32]
  return out
}

export type IdPrefix = "proj" | "key" | "sess" | "run" | "prof" | "ir" | "ws" | "evt" | "dlv" | "mon" | "art" | "tick" | "snap" | "wh" | "ntf" | "ctl" | "sched" | "usr" | "aid" | "uss" | "ten" | "inv" | "bug" | "wak" | "dgr" | "aud" | "sec" | "eml" | "cs" | "sk"

export const makeId = (prefix: IdPrefix, now: number = Date.now()): string => `${prefix}_${encodeTime(now)}${encodeRandom()}`
