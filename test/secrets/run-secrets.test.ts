/**
 * The rules of a run's secrets without a service: origin patterns, TOTP values and codes, what
 * `reveal` gives or refuses, and what `redact` hides (src/secrets/).
 */
import { Secret, TOTP } from "otpauth"
import { describe, expect, it } from "vitest"
import { substituteSecrets } from "../../src/agent/tools.ts"
import { formatOrigin, originAllowed, parseOrigin } from "../../src/secrets/origins.ts"
import type { OpenedSecret } from "../../src/secrets/secret-store.ts"
import { makeRunSecrets } from "../../src/secrets/service.ts"
import { parseTotp, totpCode } from "../../src/secrets/totp.ts"

const patterns = (...entries: Array<string>) => entries.map((entry) => {
  const parsed = parseOrigin(entry)
  if (typeof parsed === "string") throw new Error(parsed)
  return parsed
})

const opened = (overrides: Partial<OpenedSecret> & Pick<OpenedSecret, "name" | "kind" | "value" | "origins">): OpenedSecret => ({
  id: `sec_${overrides.name}` as OpenedSecret["id"],
  project_id: "proj_x" as OpenedSecret["project_id"],
  description: null,
  totp_digits: null,
  totp_period: null,
  totp_algorithm: null,
  created_at: new Date(),
  updated_at: new Date(),
  value_updated_at: new Date(),
  last_used_at: null,
  ...overrides
})

describe("origins", () => {
  it("normalises entries and refuses what is not an origin", () => {
    expect(formatOrigin(patterns("HTTPS://Example.COM:443/")[0]!)).toBe("https://example.com")
    expect(formatOrigin(patterns("http://127.0.0.1:8080")[0]!)).toBe("http://127.0.0.1:8080")
    expect(formatOrigin(patterns("https://*.example.com")[0]!)).toBe("https://*.example.com")
    for (const bad of ["example.com", "https://example.com/login", "https://u:p@example.com", "ftp://example.com", "https://example.com?x=1", "https://*.com", "https://*.10.0.0.1", ""]) {
      expect(typeof parseOrigin(bad), bad).toBe("string")
    }
  })

  it("matches scheme, host and port exactly; a wildcard matches subdomains only", () => {
    const exact = patterns("https://example.com")
    expect(originAllowed("https://example.com", exact)).toBe(true)
    expect(originAllowed("http://example.com", exact)).toBe(false)
    expect(originAllowed("https://example.com:8443", exact)).toBe(false)
    expect(originAllowed("https://app.example.com", exact)).toBe(false)
    expect(originAllowed("https://example.com.evil.test", exact)).toBe(false)
    expect(originAllowed("null", exact)).toBe(false)
    const wildcard = patterns("https://*.example.com")
    expect(originAllowed("https://app.example.com", wildcard)).toBe(true)
    expect(originAllowed("https://a.b.example.com", wildcard)).toBe(true)
    expect(originAllowed("https://example.com", wildcard)).toBe(false)
    expect(originAllowed("https://badexample.com", wildcard)).toBe(false)
  })
})

describe("TOTP values", () => {
  const seed = new Secret({ size: 20 }).base32

  it("takes a base32 seed (spaced, lower case) or an otpauth URI, and yields the site's code", () => {
    const fromSeed = parseTotp(seed.toLowerCase().replace(/(.{4})/g, "$1 "))
    if (typeof fromSeed === "string") throw new Error(fromSeed)
    expect(fromSeed).toMatchObject({ digits: 6, period: 30, algorithm: "SHA1" })
    const site = new TOTP({ secret: Secret.fromBase32(seed) })
    const at = Date.UTC(2030, 0, 1, 12, 0, 0)
    expect(totpCode(fromSeed.uri, at)).toBe(site.generate({ timestamp: at }))
    const fromUri = parseTotp(`otpauth://totp/Site:alice?secret=${seed}&digits=8&period=60&algorithm=SHA256&issuer=Site`)
    if (typeof fromUri === "string") throw new Error(fromUri)
    expect(fromUri).toMatchObject({ digits: 8, period: 60, algorithm: "SHA256" })
    expect(totpCode(fromUri.uri, at)).toHaveLength(8)
  })

  it("refuses HOTP, short seeds and other text without repeating them", () => {
    for (const bad of [`otpauth://hotp/x?secret=${seed}&counter=1`, "ABCDEFGH", "not base32 at all!", "otpauth://totp/x"]) {
      const problem = parseTotp(bad)
      expect(typeof problem, bad).toBe("string")
      expect(problem).not.toContain(bad)
    }
  })
})

describe("a run's secrets", () => {
  const seed = new Secret({ size: 20 }).base32
  const totp = parseTotp(seed) as { uri: string }
  const now = Date.UTC(2030, 0, 1, 12, 0, 0)
  const secrets = makeRunSecrets([
    opened({ name: "pw", kind: "secret", value: "hunter2 & more", origins: ["https://example.com", "https://*.example.com"] }),
    opened({ name: "otp", kind: "totp", value: totp.uri, origins: ["https://example.com"] }),
    opened({ name: "pin", kind: "secret", value: "123", origins: ["https://example.com"] })
  ], () => now)

  it("reveals a value only on its origins, for the right kind of placeholder", () => {
    expect(secrets.reveal("secret", "pw", "https://example.com")).toEqual({ value: "hunter2 & more" })
    expect(secrets.reveal("secret", "pw", "https://login.example.com")).toEqual({ value: "hunter2 & more" })
    const elsewhere = secrets.reveal("secret", "pw", "https://evil.test")
    expect("refused" in elsewhere && elsewhere.refused).toContain("may be typed only on https://example.com, https://*.example.com; this field is on https://evil.test")
    expect(JSON.stringify(elsewhere)).not.toContain("hunter2")
    expect("refused" in secrets.reveal("totp", "pw", "https://example.com")).toBe(true)
    expect("refused" in secrets.reveal("secret", "otp", "https://example.com")).toBe(true)
    expect("refused" in secrets.reveal("secret", "nope", "https://example.com")).toBe(true)
    expect(secrets.reveal("totp", "otp", "https://example.com")).toEqual({ value: totpCode(totp.uri, now) })
  })

  it("substitutes placeholders inside text; the first refusal wins and nothing is given", () => {
    expect(substituteSecrets(secrets, "user:{{secret:pw}} / {{ totp : otp }}", "https://example.com")).toEqual({
      text: `user:hunter2 & more / ${totpCode(totp.uri, now)}`
    })
    const refused = substituteSecrets(secrets, "{{secret:pw}}{{secret:nope}}", "https://example.com")
    expect("refused" in refused).toBe(true)
    expect(JSON.stringify(refused)).not.toContain("hunter2")
  })

  it("redacts every value, its encoded forms and the codes handed out; short values are left", () => {
    const code = totpCode(totp.uri, now)
    secrets.reveal("totp", "otp", "https://example.com")
    expect(secrets.redact(`pw=hunter2 & more; q=${encodeURIComponent("hunter2 & more")}; f=hunter2+%26+more; code ${code}; seed ${seed}; pin 123`)).toBe(
      "pw={{secret:pw}}; q={{secret:pw}}; f={{secret:pw}}; code {{totp:otp}}; seed {{totp:otp}}; pin 123"
    )
  })
})
