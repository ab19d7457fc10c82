/** The key of saved browser state and its AES-256-GCM envelope, in-process. */
import { Effect, Exit } from "effect"
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { loadAppConfig } from "../../src/config/config.ts"
import { keyIdOf, loadSecretKey, parseSecretKey } from "../../src/config/secret-key.ts"
import { makeCipher } from "../../src/security/state-cipher.ts"

const dirs: Array<string> = []
const tempDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), "wa-key-"))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const hexKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

describe("WA_SECRET_KEY", () => {
  it("is 32 bytes as hex or base64(url); anything else is refused", () => {
    expect(parseSecretKey(hexKey)?.toString("hex")).toBe(hexKey)
    const base64 = Buffer.from(hexKey, "hex").toString("base64")
    expect(parseSecretKey(base64)?.toString("hex")).toBe(hexKey)
    expect(parseSecretKey(Buffer.from(hexKey, "hex").toString("base64url"))?.toString("hex")).toBe(hexKey)
    for (const bad of ["", "short", hexKey.slice(2), Buffer.alloc(16).toString("base64"), `${hexKey}00`, "not base64 at all!"]) {
      expect(parseSecretKey(bad), bad).toBeUndefined()
    }
  })

  it("a bad value stops start-up with one line naming the variable", async () => {
    const exit = await Effect.runPromiseExit(loadAppConfig({ WA_SECRET_KEY: "too-short" }))
    expect(Exit.isFailure(exit)).toBe(true)
    expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain("WA_SECRET_KEY must be 32 bytes")
    const ok = await Effect.runPromise(loadAppConfig({ WA_SECRET_KEY: hexKey }))
    expect(ok.secretKey._tag).toBe("Some")
  })

  it("without it a key is generated once into the data dir, mode 0600, and reused", () => {
    const dir = tempDir()
    const first = loadSecretKey(undefined, dir)
    expect(first.source).toBe("generated")
    const file = path.join(dir, "secret.key")
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const second = loadSecretKey(undefined, dir)
    expect(second.source).toBe("data_dir")
    expect(second.key.equals(first.key)).toBe(true)
    expect(readFileSync(file, "utf8").trim()).toBe(first.key.toString("base64"))
    // A configured key wins over the file.
    expect(loadSecretKey(hexKey, dir).key.toString("hex")).toBe(hexKey)
  })

  it("a damaged key file is an error, not a silently new key", () => {
    const dir = tempDir()
    writeFileSync(path.join(dir, "secret.key"), "garbage\n", { mode: 0o600 })
    expect(() => loadSecretKey(undefined, dir)).toThrow(/does not hold a 32-byte key/)
  })
})

describe("the state envelope", () => {
  const cipher = makeCipher(Buffer.from(hexKey, "hex"))
  const plaintext = Buffer.from(JSON.stringify({ cookies: [{ name: "session", value: "s3cr3t-cookie" }], origins: [] }))

  it("round-trips, and the ciphertext holds nothing of the plaintext", async () => {
    const sealed = cipher.seal(plaintext, "prof_a")
    expect(sealed.keyId).toBe(keyIdOf(Buffer.from(hexKey, "hex")))
    expect(sealed.bytes.toString("latin1")).not.toContain("s3cr3t")
    // A fresh IV every time.
    expect(cipher.seal(plaintext, "prof_a").bytes.equals(sealed.bytes)).toBe(false)
    expect((await Effect.runPromise(cipher.open(sealed, "prof_a"))).equals(plaintext)).toBe(true)
  })

  it("refuses another profile's ciphertext, altered bytes and another key", async () => {
    const sealed = cipher.seal(plaintext, "prof_a")
    const moved = await Effect.runPromiseExit(cipher.open(sealed, "prof_b"))
    expect(Exit.isFailure(moved)).toBe(true)
    const altered = Buffer.from(sealed.bytes)
    altered[altered.length - 1]! ^= 1
    expect(Exit.isFailure(await Effect.runPromiseExit(cipher.open({ bytes: altered, keyId: sealed.keyId }, "prof_a")))).toBe(true)
    const other = makeCipher(Buffer.alloc(32, 7))
    const mismatch = await Effect.runPromise(Effect.flip(other.open(sealed, "prof_a")))
    expect(mismatch.reason).toContain("set the same WA_SECRET_KEY on every node")
  })
})
