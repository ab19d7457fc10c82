/**
 * Account logic in-process on a database of this file, with the real services:
 *
 * - passwords: scrypt hashes verify, the wrong password and a tampered hash do not, an unknown
 *   account (no hash) is refused, old parameters are flagged for re-hashing;
 * - sign-in throttling: concurrent wrong guesses for one account are each counted, so exactly
 *   `limit` of them are checked and the rest are refused with a Retry-After inside the window;
 *   the right password is refused too once the account is throttled; a success clears the
 *   account's count; the address limit holds across accounts; the window before weighs in, so
 *   guesses on both sides of a window's edge do not get twice the limit;
 * - tenants: two admins demoting each other at once leave one admin (last_admin refused), and
 *   concurrent invitations and tenant creations stop at their caps;
 * - mailed proofs: one reset token used by concurrent requests sets one password; SSO refuses an
 *   unverified account with a password and links it once the reset verified it.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, References } from "effect"
import { SqlClient } from "effect/sql"
import { AccountMail } from "../../src/accounts/account-mail.ts"
import { AccountsLive } from "../../src/accounts/accounts-live.ts"
import { hashToken } from "../../src/accounts/session-tokens.ts"
import { LoginThrottle } from "../../src/accounts/login-throttle.ts"
import { hashPassword, needsRehash, verifyPassword } from "../../src/accounts/passwords.ts"
import { Tenants } from "../../src/accounts/tenants.ts"
import { Users } from "../../src/accounts/users.ts"
import { AppConfig } from "../../src/config/config.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"

const ConfigLive = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabase("accounts")
  const dataDir = yield* freshDataDir("wa-accounts")
  return AppConfig.layerFrom({
    DATABASE_URL: url,
    WA_DATA_DIR: dataDir,
    WA_LOG_LEVEL: "Warn",
    WA_LOGIN_ATTEMPTS_PER_ACCOUNT: "5",
    WA_LOGIN_ATTEMPTS_PER_ADDRESS: "12",
    WA_MAX_PENDING_INVITATIONS: "4",
    WA_MAX_TENANTS_PER_USER: "3"
  })
}))

const TestLayer = AccountsLive.pipe(
  Layer.provideMerge(databaseLayer("own")),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
  Layer.provideMerge(ConfigLive)
)

const login = (email: string, password: string, address: string) =>
  Users.use((users) => users.login({ email, password, address, kind: "bearer" })).pipe(
    Effect.map(() => "ok" as const),
    Effect.catchTags({
      InvalidCredentials: () => Effect.succeed("wrong" as const),
      LoginThrottled: (e) => Effect.succeed({ throttled: e.scope, retryAfter: e.retryAfterSeconds })
    })
  )

layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })("accounts", (it) => {
  it.effect("passwords: verify, refuse wrong and tampered, flag old parameters", () =>
    Effect.gen(function*() {
      const stored = yield* hashPassword("correct horse battery")
      expect(stored).toMatch(/^scrypt\$32768\$8\$1\$/)
      expect(yield* verifyPassword("correct horse battery", stored)).toBe(true)
      expect(yield* verifyPassword("correct horse batterz", stored)).toBe(false)
      const parts = stored.split("$")
      const tampered = [...parts.slice(0, 5), Buffer.alloc(32, 1).toString("base64url")].join("$")
      expect(yield* verifyPassword("correct horse battery", tampered)).toBe(false)
      expect(yield* verifyPassword("anything", null)).toBe(false)
      expect(yield* verifyPassword("anything", "not-a-hash")).toBe(false)
      expect(needsRehash(stored)).toBe(false)
      const weaker = yield* hashPassword("pw123456", { N: 1024, r: 8, p: 1 })
      expect(yield* verifyPassword("pw123456", weaker)).toBe(true)
      expect(needsRehash(weaker)).toBe(true)
    }))

  it.effect("throttling per account: 20 concurrent guesses, exactly 5 checked; the right password waits too", () =>
    Effect.gen(function*() {
      const users = yield* Users
      yield* users.create({ email: "victim@example.com", password: "the-right-one", displayName: null })
      const outcomes = yield* Effect.forEach(
        Array.from({ length: 20 }, (_, i) => i),
        (i) => login("Victim@Example.com", `guess-${i}`, `10.0.0.${i}`),
        { concurrency: "unbounded" }
      )
      expect(outcomes.filter((o) => o === "wrong")).toHaveLength(5)
      const throttled = outcomes.filter((o) => typeof o === "object")
      expect(throttled).toHaveLength(15)
      for (const t of throttled) {
        expect(t).toMatchObject({ throttled: "account" })
        expect((t as { retryAfter: number }).retryAfter).toBeGreaterThanOrEqual(1)
        // A window, and the share of the next one that the checked attempts still weigh in.
        expect((t as { retryAfter: number }).retryAfter).toBeLessThanOrEqual(900 + 900 / 5)
      }
      expect(yield* login("victim@example.com", "the-right-one", "10.0.1.1")).toMatchObject({ throttled: "account" })
    }))

  it.effect("a success clears the account's count; the address limit holds across accounts", () =>
    Effect.gen(function*() {
      const users = yield* Users
      const throttle = yield* LoginThrottle
      yield* users.create({ email: "carol@example.com", password: "carol-password", displayName: null })
      for (let i = 0; i < 4; i++) expect(yield* login("carol@example.com", "nope", "10.1.0.1")).toBe("wrong")
      expect(yield* login("carol@example.com", "carol-password", "10.1.0.1")).toBe("ok")
      // The count started afresh: four more wrong ones are still checked.
      for (let i = 0; i < 4; i++) expect(yield* login("carol@example.com", "nope", "10.1.0.2")).toBe("wrong")
      // One address guessing over many accounts: 12 attempts per window in all.
      const outcomes = yield* Effect.forEach(
        Array.from({ length: 16 }, (_, i) => i),
        (i) => login(`nobody-${i}@example.com`, "x", "10.2.0.1"),
        { concurrency: "unbounded" }
      )
      expect(outcomes.filter((o) => o === "wrong")).toHaveLength(12)
      expect(outcomes.filter((o) => typeof o === "object" && o.throttled === "address")).toHaveLength(4)
      // Another address is not affected.
      expect(yield* login("carol@example.com", "carol-password", "10.2.0.2")).toBe("ok")
      yield* throttle.succeeded({ account: "x", address: "10.2.0.1" })
    }))

  it.effect("the window before weighs in: the limit's worth there and one short of it here refuses the right password", () =>
    Effect.gen(function*() {
      const users = yield* Users
      const sql = yield* SqlClient.SqlClient
      yield* users.create({ email: "edge@example.com", password: "edge-password", displayName: null })
      // The limit (5) in the window that ended, 4 in this one: a fixed window would check a fifth
      // here; the sliding one still counts part of the window before, wherever in this one we are.
      yield* sql`
        INSERT INTO login_attempts (scope_key, window_start, attempts)
        SELECT 'account:edge@example.com', start, attempts
        FROM (VALUES (0, 4), (1, 5)) AS w(back, attempts),
          LATERAL (SELECT to_timestamp(floor(extract(epoch FROM now()) / 900) * 900 - back * 900) AS start) s`
      const refused = yield* login("edge@example.com", "edge-password", "10.3.0.1")
      expect(refused).toMatchObject({ throttled: "account" })
      const wait = (refused as { retryAfter: number }).retryAfter
      expect(wait).toBeGreaterThanOrEqual(1)
      expect(wait).toBeLessThanOrEqual(900 + 900 / 5)
    }))

  it.effect("two admins demoting each other at once: one succeeds, the other gets last_admin", () =>
    Effect.gen(function*() {
      const users = yield* Users
      const tenants = yield* Tenants
      const a = yield* users.create({ email: "a@example.com", password: "password-a", displayName: null })
      const b = yield* users.create({ email: "b@example.com", password: "password-b", displayName: null })
      const tenant = yield* tenants.create(a.id, "pair")
      yield* tenants.addMember(tenant.id, b.id, "admin", b.identity_id)
      const results = yield* Effect.all([
        Effect.result(tenants.updateMember(tenant.id, a.id, b.id, { role: "member" })),
        Effect.result(tenants.updateMember(tenant.id, b.id, a.id, { role: "member" }))
      ], { concurrency: "unbounded" })
      const ok = results.filter((r) => r._tag === "Success")
      const failed = results.filter((r) => r._tag === "Failure")
      expect(ok).toHaveLength(1)
      expect(failed).toHaveLength(1)
      // The loser was demoted by the winner (403) or would leave no admin (409); either way one admin stays.
      expect(["RoleForbidden", "AccountConflict"]).toContain((failed[0] as { failure: { _tag: string } }).failure._tag)
      const members = yield* tenants.members(tenant.id, a.id, 10, undefined)
      expect(members.filter((m) => m.role === "admin" && m.status === "active")).toHaveLength(1)
    }))

  it.effect("concurrent invitations stop at the pending cap", () =>
    Effect.gen(function*() {
      const users = yield* Users
      const tenants = yield* Tenants
      const admin = yield* users.create({ email: "inviter@example.com", password: "password-i", displayName: null })
      const tenant = yield* tenants.create(admin.id, "capped")
      const results = yield* Effect.forEach(
        Array.from({ length: 10 }, (_, i) => i),
        (i) => Effect.result(tenants.invite(tenant.id, admin.id, `p${i}@example.com`, "member")),
        { concurrency: "unbounded" }
      )
      expect(results.filter((r) => r._tag === "Success")).toHaveLength(4)
      const failures = results.filter((r) => r._tag === "Failure")
      expect(failures).toHaveLength(6)
      for (const f of failures) expect((f as { failure: { _tag: string } }).failure._tag).toBe("AccountLimitReached")
      expect(yield* tenants.invitations(tenant.id, admin.id, 100, undefined)).toHaveLength(4)
    }))

  it.effect("concurrent tenant creations by one user stop at the per-user cap", () =>
    Effect.gen(function*() {
      const users = yield* Users
      const tenants = yield* Tenants
      const founder = yield* users.create({ email: "founder@example.com", password: "password-f", displayName: null })
      const results = yield* Effect.forEach(
        Array.from({ length: 8 }, (_, i) => i),
        (i) => Effect.result(tenants.create(founder.id, `t${i}`)),
        { concurrency: "unbounded" }
      )
      expect(results.filter((r) => r._tag === "Success")).toHaveLength(3)
      expect(results.filter((r) => r._tag === "Failure" && r.failure._tag === "AccountLimitReached")).toHaveLength(5)
      const mine = yield* tenants.listForUser(founder.id)
      expect(mine).toHaveLength(3)
      expect(mine.every((m) => m.role === "admin")).toBe(true)
    }))

  it.effect("one reset token presented by 8 requests at once sets the password once; SSO links the now verified account", () =>
    Effect.gen(function*() {
      const users = yield* Users
      const mail = yield* AccountMail
      const sql = yield* SqlClient.SqlClient
      const user = yield* users.create({ email: "racer@example.com", password: "racer-password-0", displayName: null })
      // Made unverified, as an account accepted from an invitation is.
      yield* sql`UPDATE users SET email_verified = false WHERE id = ${user.id}`
      expect(yield* Effect.flip(users.resolveSsoIdentity("corp", "sub-racer", "racer@example.com"))).toMatchObject({ code: "email_unverified" })
      const token = "reset-token-of-the-race-0123456789"
      yield* sql`
        INSERT INTO account_tokens (token_hash, user_id, purpose, email, expires_at)
        VALUES (${hashToken(token)}, ${user.id}, 'reset_password', ${user.email}, now() + interval '30 minutes')`
      const results = yield* Effect.forEach(
        Array.from({ length: 8 }, (_, i) => i),
        (i) => Effect.result(mail.resetPassword(token, `racer-password-${i + 1}`)),
        { concurrency: "unbounded" }
      )
      const won = results.flatMap((r, i) => r._tag === "Success" ? [i + 1] : [])
      expect(won).toHaveLength(1)
      for (const r of results) if (r._tag === "Failure") expect(r.failure).toMatchObject({ code: "token_used" })
      expect(yield* login("racer@example.com", `racer-password-${won[0]}`, "10.3.0.1")).toBe("ok")
      expect((yield* users.get(user.id))?.email_verified).toBe(true)
      expect((yield* users.resolveSsoIdentity("corp", "sub-racer", "racer@example.com")).id).toBe(user.id)
    }))
})
