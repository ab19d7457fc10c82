/**
 * The key that encrypts saved browser state (profiles) at rest. `WA_SECRET_KEY` is 32 random bytes
 * written as 64 hex characters or as base64 / base64url (`openssl rand -base64 32`). Without it
 * the key is generated once into `<WA_DATA_DIR>/secret.key` (base64, mode 0600) and read from there
 * on later starts. Several nodes on one DATABASE_URL must share the key: set the same
 * WA_SECRET_KEY on every node (each encrypted row names the key it was written with, so a node
 * holding another key refuses clearly instead of returning garbage).
 */
import { createHmac } from "node:crypto"
import { randomBytes } from "node:crypto"
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import * as path from "node:path"

export const SECRET_KEY_BYTES = 32
export const SECRET_KEY_FILE = "secret.key"

/** The 32 bytes of a key written as hex or base64(url); undefined when it is not one. */
export const parseSecretKey = (raw: string): Buffer | undefined => {
  const text = raw.trim()
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, "hex")
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) {
    const bytes = Buffer.from(text.replace(/-/g, "+").replace(/_/g, "/"), "base64")
    if (bytes.length === SECRET_KEY_BYTES) return bytes
  }
  return undefined
}

/** A short public name of a key (not reversible): which key encrypted a row. */
export const keyIdOf = (key: Buffer): string => createHmac("sha256", key).update("wa profile state key id").digest("hex").slice(0, 16)

export interface LoadedKey {
  readonly key: Buffer
  readonly source: "WA_SECRET_KEY" | "generated" | "data_dir"
  readonly file?: string
}

/**
 * The key from WA_SECRET_KEY, else the data dir's key file, created (exclusively, mode 0600) when
 * it is missing. Two processes starting on one empty data dir at once both end up with the file
 * the first one wrote.
 */
export const loadSecretKey = (configured: string | undefined, dataDir: string): LoadedKey => {
  if (configured !== undefined) {
    const key = parseSecretKey(configured)
    if (key === undefined) throw new Error("WA_SECRET_KEY must be 32 bytes, as 64 hex characters or base64")
    return { key, source: "WA_SECRET_KEY" }
  }
  const file = path.join(dataDir, SECRET_KEY_FILE)
  const read = (): Buffer => {
    const key = parseSecretKey(readFileSync(file, "utf8"))
    if (key === undefined) throw new Error(`${file} does not hold a 32-byte key (base64); restore it from a backup or set WA_SECRET_KEY`)
    // Readable by the owner only: tighten a copy restored with looser permissions.
    if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600)
    return key
  }
  try {
    return { key: read(), source: "data_dir", file }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error
  }
  mkdirSync(dataDir, { recursive: true })
  try {
    writeFileSync(file, randomBytes(SECRET_KEY_BYTES).toString("base64") + "\n", { mode: 0o600, flag: "wx" })
    return { key: read(), source: "generated", file }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return { key: read(), source: "data_dir", file }
    throw error
  }
}
