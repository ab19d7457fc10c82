/**
 * Console users: accounts with an email and a password (hashed with scrypt, src/accounts/passwords.ts),
 * their sign-in identities (`password` today; SSO providers add rows of their own provider id),
 * and console sessions.
 *
 * Sessions are server-side rows found by the SHA-256 of their token, so signing out, changing the
 * password and disabling take effect on the next request on every node. A session is `cookie`
 * (the browser console: HttpOnly cookie + CSRF header on writes) or `bearer` (programs: the token
 * in Authorization). Changing the password ends every other session of the user.
 */
import type { ConsoleSession, SessionKind } from "../domain/console-session.ts"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { makeId } from "../domain/ids.ts"
import { AccountConflict, InvalidCredentials, type LoginThrottled } from "./errors.ts"
import { LoginThrottle } from "./login-throttle.ts"
import { hashPassword, needsRehash, verifyPassword } from "./passwords.ts"
import { generateSessionToken, hashToken, isWellFormedSessionToken } from "./session-tokens.ts"

export type { ConsoleSession, SessionKind } from "../domain/console-session.ts"

export interface UserRow {
  readonly id: string
  readonly email: string
  readonly display_name: string | null
  /** Whether the account's owner proved the address (a mailed link, SSO, or the operator made it). */
  readonly email_verified: boolean
  readonly created_at: Date
}


export interface SignedIn {
  readonly user: UserRow
  readonly token: string
  readonly session: ConsoleSession
}

export type SessionFailure = "malformed" | "unknown" | "ended"

/** What a user may do on a project: the role in the project's tenant, or why not. */
export type ProjectAccess = { readonly role: "admin" | "member" } | "none" | "disabled"

export const normalizeEmail = (email: string) => email.trim().toLowerCase()

interface SessionRow {
  readonly id: string
  readonly user_id: string
  readonly email: string
  readonly kind: SessionKind
  readonly expires_at: Date
  readonly ended: boolean
}

export class Users extends Context.Service<Users, {
  /** A new user with a password identity (CLI, invitation acceptance). 409 when the email has an account. */
  readonly create: (input: { readonly email: string; readonly password: string; readonly displayName: string | null }) => Effect.Effect<UserRow & { readonly identity_id: string }, AccountConflict>
  readonly findByEmail: (email: string) => Effect.Effect<UserRow | undefined>
  readonly login: (input: {
    readonly email: string
    readonly password: string
    readonly address: string
    readonly kind: SessionKind
  }) => Effect.Effect<SignedIn, InvalidCredentials | LoginThrottled>
  readonly authenticate: (token: string) => Effect.Effect<ConsoleSession | SessionFailure>
  /**
   * authenticate and, in the same statement, the user's access to a project (the role in the
   * project's tenant): one round trip for a console session on a project endpoint.
   */
  readonly authenticateOnProject: (token: string, projectId: string) => Effect.Effect<(ConsoleSession & { readonly access: ProjectAccess }) | SessionFailure>
  readonly logout: (sessionId: string) => Effect.Effect<void>
  /** Throttled like a sign-in (the account and `address`): a wrong current password is a guess. */
  readonly changePassword: (session: ConsoleSession, current: string, next: string, address: string) => Effect.Effect<void, InvalidCredentials | LoginThrottled>
  /**
   * Sets a new password for someone who proved the address some other way (a mailed reset link,
   * the operator's `wa users reset-password`): the address counts as verified, and every session
   * of the user ends. Runs inside the caller's transaction when there is one.
   */
  readonly setPasswordAfterProof: (userId: string, passwordHash: string) => Effect.Effect<void>
  readonly get: (userId: string) => Effect.Effect<UserRow | undefined>
  /** A new session for a user who proved who they are some other way (SSO). */
  readonly startSession: (user: UserRow, kind: SessionKind) => Effect.Effect<SignedIn>
  /**
   * The user of an SSO identity: the one linked to (provider, subject); else the account with the
   * provider's verified email, which gets the identity linked; else a new account (no password).
   * Never an account whose address nobody proved while it has a password: someone who is not the
   * address's owner may have set it (an invitation accepted by its inviter). That is refused with
   * 409 `email_unverified` until the owner proves the address (password reset by mail, or a
   * signed-in verification).
   */
  readonly resolveSsoIdentity: (providerId: string, subject: string, email: string) => Effect.Effect<UserRow, AccountConflict>
  readonly passwordIdentityId: (userId: string) => Effect.Effect<string | null>
}>()("wa/accounts/Users") {
  static readonly layer = Layer.effect(
    Users,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const throttle = yield* LoginThrottle
      const sessionMs = config.consoleSessionHours * 3600 * 1000
      const userColumns = sql.literal("id, email, display_name, email_verified, created_at")

      const create = Effect.fn("Users.create")(function*(input: { readonly email: string; readonly password: string; readonly displayName: string | null }) {
        const hash = yield* hashPassword(input.password)
        const id = makeId("usr")
        const identityId = makeId("aid")
        const email = input.email.trim()
        return yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<UserRow>`
            INSERT INTO users (id, email, display_name, password_hash, email_verified) VALUES (${id}, ${email}, ${input.displayName}, ${hash}, true)
            ON CONFLICT DO NOTHING RETURNING ${userColumns}`
          if (rows.length === 0) {
            return yield* new AccountConflict({ code: "email_taken", detail: "an account with this email already exists; sign in instead" })
          }
          yield* sql`INSERT INTO auth_identities (id, user_id, provider, subject) VALUES (${identityId}, ${id}, 'password', ${normalizeEmail(email)})`
          return { ...rows[0]!, identity_id: identityId }
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      })

      const findByEmail = (email: string) =>
        sql<UserRow>`SELECT ${userColumns} FROM users WHERE lower(email) = ${normalizeEmail(email)}`.pipe(
          Effect.map((rows) => rows[0]),
          Effect.orDie
        )

      const get = (userId: string) =>
        sql<UserRow>`SELECT ${userColumns} FROM users WHERE id = ${userId}`.pipe(
          Effect.map((rows) => rows[0]),
          Effect.orDie
        )

      const passwordIdentityId = (userId: string) =>
        sql<{ id: string }>`SELECT id FROM auth_identities WHERE user_id = ${userId} AND provider = 'password'`.pipe(
          Effect.map((rows) => rows[0]?.id ?? null),
          Effect.orDie
        )

      const startSession = (userId: string, email: string, kind: SessionKind) =>
        Effect.gen(function*() {
          const token = generateSessionToken()
          const sessionId = makeId("uss")
          // The user's sessions that ended more than a day ago go as a new one starts (rows stay
          // a day so a replayed token still meets "ended" rather than "unknown" in the logs).
          yield* sql`
            DELETE FROM console_sessions
            WHERE user_id = ${userId} AND (expires_at < now() - interval '1 day' OR revoked_at < now() - interval '1 day')`
          const rows = yield* sql<{ expires_at: Date }>`
            INSERT INTO console_sessions (id, user_id, token_hash, kind, expires_at)
            VALUES (${sessionId}, ${userId}, ${hashToken(token)}, ${kind}, now() + ${`${sessionMs} milliseconds`}::interval)
            RETURNING expires_at`
          return { token, session: { sessionId, userId, email, kind, expiresAt: rows[0]!.expires_at } }
        })

      const wrong = new InvalidCredentials({ detail: "the email or the password is wrong" })

      const login = Effect.fn("Users.login")(function*(input: { readonly email: string; readonly password: string; readonly address: string; readonly kind: SessionKind }) {
        const keys = { account: normalizeEmail(input.email), address: input.address }
        yield* throttle.attempt(keys)
        const rows = yield* sql<UserRow & { password_hash: string | null }>`
          SELECT ${userColumns}, password_hash FROM users WHERE lower(email) = ${keys.account}`.pipe(Effect.orDie)
        const row = rows[0]
        // An unknown email costs the same derivation as a known one (verifyPassword's dummy hash).
        const ok = yield* verifyPassword(input.password, row?.password_hash)
        if (row === undefined || !ok) return yield* wrong
        yield* throttle.succeeded(keys)
        if (row.password_hash !== null && needsRehash(row.password_hash)) {
          const hash = yield* hashPassword(input.password)
          yield* sql`UPDATE users SET password_hash = ${hash} WHERE id = ${row.id}`.pipe(Effect.orDie)
        }
        const { password_hash: _, ...user } = row
        const started = yield* startSession(user.id, user.email, input.kind).pipe(Effect.orDie)
        return { user, ...started }
      })

      /** The session a row of console_sessions (joined with its user) stands for, or why none. */
      const sessionOf = (row: SessionRow | undefined): ConsoleSession | "unknown" | "ended" =>
        row === undefined ? "unknown" : row.ended ? "ended" : { sessionId: row.id, userId: row.user_id, email: row.email, kind: row.kind, expiresAt: row.expires_at }

      const authenticate = (token: string): Effect.Effect<ConsoleSession | SessionFailure> => {
        if (!isWellFormedSessionToken(token)) return Effect.succeed("malformed" as const)
        return sql<SessionRow>`
          SELECT s.id, s.user_id, u.email, s.kind, s.expires_at, (s.revoked_at IS NOT NULL OR s.expires_at <= now()) AS ended
          FROM console_sessions s JOIN users u ON u.id = s.user_id
          WHERE s.token_hash = ${hashToken(token)}`.pipe(Effect.map((rows) => sessionOf(rows[0])), Effect.orDie)
      }

      const onProjectStatement = `
        SELECT s.id, s.user_id, u.email, s.kind, s.expires_at, (s.revoked_at IS NOT NULL OR s.expires_at <= now()) AS ended,
          m.role, m.status
        FROM console_sessions s JOIN users u ON u.id = s.user_id
        LEFT JOIN projects p ON p.id = $2
        LEFT JOIN tenant_members m ON m.tenant_id = p.tenant_id AND m.user_id = s.user_id
        WHERE s.token_hash = $1`
      const authenticateOnProject = (token: string, projectId: string) => {
        if (!isWellFormedSessionToken(token)) return Effect.succeed("malformed" as const)
        return sql.unsafe<SessionRow & { role: "admin" | "member" | null; status: "active" | "disabled" | null }>(
          onProjectStatement,
          [hashToken(token), projectId]
        ).pipe(
          Effect.map((rows) => {
            const session = sessionOf(rows[0])
            if (typeof session === "string") return session
            const { role, status } = rows[0]! // a session comes only from a row
            const access: ProjectAccess = role === null ? "none" : status !== "active" ? "disabled" : { role }
            return { ...session, access }
          }),
          Effect.orDie
        )
      }

      const logout = (sessionId: string) =>
        sql`UPDATE console_sessions SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${sessionId}`.pipe(Effect.asVoid, Effect.orDie)

      const changePassword = Effect.fn("Users.changePassword")(function*(session: ConsoleSession, current: string, next: string, address: string) {
        // The current password is a guess like a sign-in's: counted by the same limiter, for the
        // account and the address, before the hash is checked.
        const keys = { account: normalizeEmail(session.email), address }
        yield* throttle.attempt(keys)
        const rows = yield* sql<{ password_hash: string | null }>`SELECT password_hash FROM users WHERE id = ${session.userId}`.pipe(Effect.orDie)
        const ok = yield* verifyPassword(current, rows[0]?.password_hash)
        if (!ok) return yield* new InvalidCredentials({ detail: "the current password is wrong" })
        yield* throttle.succeeded(keys)
        const hash = yield* hashPassword(next)
        // The new hash and the end of every other session in one transaction: a stolen session
        // (or one signed in elsewhere) does not outlive the change.
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`UPDATE users SET password_hash = ${hash}, password_changed_at = now() WHERE id = ${session.userId}`
          yield* sql`
            UPDATE console_sessions SET revoked_at = now()
            WHERE user_id = ${session.userId} AND id <> ${session.sessionId} AND revoked_at IS NULL`
        })).pipe(Effect.orDie)
      })

      const startSessionFor = (user: UserRow, kind: SessionKind) =>
        startSession(user.id, user.email, kind).pipe(Effect.map((started) => ({ user, ...started })), Effect.orDie)

      const unproven = new AccountConflict({
        code: "email_unverified",
        detail: "an account with this email exists, has a password and its address was never verified, so SSO does not sign into it " +
          "(whoever set that password may not own the address). Reset its password by email (POST /v1/auth/password/forgot), which " +
          "proves the address and ends every session of the account, or sign in with its password and verify the address; then sign in with SSO again"
      })

      const resolveSsoIdentity = (providerId: string, subject: string, email: string) =>
        sql.withTransaction(Effect.gen(function*() {
          type Candidate = UserRow & { readonly has_password: boolean }
          const provider = `oidc:${providerId}`
          const linked = yield* sql<Candidate>`
            SELECT u.id, u.email, u.display_name, u.email_verified, u.created_at, u.password_hash IS NOT NULL AS has_password
            FROM auth_identities i JOIN users u ON u.id = i.user_id
            WHERE i.provider = ${provider} AND i.subject = ${subject}
            FOR UPDATE OF u`
          const inserted = linked[0] !== undefined ? [] : yield* sql<UserRow>`
            INSERT INTO users (id, email, email_verified) VALUES (${makeId("usr")}, ${email.trim()}, true)
            ON CONFLICT DO NOTHING RETURNING ${userColumns}`
          if (inserted[0] !== undefined) {
            yield* sql`INSERT INTO auth_identities (id, user_id, provider, subject) VALUES (${makeId("aid")}, ${inserted[0].id}, ${provider}, ${subject})`
            return inserted[0]
          }
          const candidate = linked[0] ?? (yield* sql<Candidate>`
            SELECT id, email, display_name, email_verified, created_at, password_hash IS NOT NULL AS has_password
            FROM users WHERE lower(email) = ${normalizeEmail(email)} FOR UPDATE`)[0]!
          const { has_password, ...user } = candidate
          if (!user.email_verified) {
            if (has_password) return yield* unproven
            // No password on it: nobody else holds a way in, and the provider vouches for the address.
            if (normalizeEmail(user.email) === normalizeEmail(email)) {
              yield* sql`UPDATE users SET email_verified = true WHERE id = ${user.id}`
            }
          }
          if (linked[0] === undefined) {
            yield* sql`
              INSERT INTO auth_identities (id, user_id, provider, subject) VALUES (${makeId("aid")}, ${user.id}, ${provider}, ${subject})
              ON CONFLICT DO NOTHING`
          }
          return { ...user, email_verified: user.email_verified || normalizeEmail(user.email) === normalizeEmail(email) }
        })).pipe(Effect.catchTag("SqlError", Effect.die))

      const setPasswordAfterProof = (userId: string, passwordHash: string) =>
        sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<{ email: string }>`
            UPDATE users SET password_hash = ${passwordHash}, password_changed_at = now(), email_verified = true
            WHERE id = ${userId} RETURNING email`
          if (rows[0] === undefined) return
          // An account made by SSO had no password identity yet.
          yield* sql`
            INSERT INTO auth_identities (id, user_id, provider, subject) VALUES (${makeId("aid")}, ${userId}, 'password', ${normalizeEmail(rows[0].email)})
            ON CONFLICT DO NOTHING`
          yield* sql`UPDATE console_sessions SET revoked_at = now() WHERE user_id = ${userId} AND revoked_at IS NULL`
          // Whoever asked for a reset before is answered by this one: no other reset link works now.
          yield* sql`UPDATE account_tokens SET used_at = now() WHERE user_id = ${userId} AND purpose = 'reset_password' AND used_at IS NULL`
        })).pipe(Effect.orDie)

      return Users.of({
        create, findByEmail, login, authenticate, authenticateOnProject, logout, changePassword, get, passwordIdentityId,
        startSession: startSessionFor, resolveSsoIdentity, setPasswordAfterProof
      })
    })
  )
}
