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
import { AppConfig } from "../config/config.ts"
import { makeId } from "../domain/ids.ts"
import { AccountConflict, InvalidCredentials, type LoginThrottled } from "./errors.ts"
import { LoginThrottle } from "./login-throttle.ts"
import { hashPassword, needsRehash, verifyPassword } from "./passwords.ts"
import { generateSessionToken, isWellFormedSessionToken } from "./session-tokens.ts"
import { normalizeEmail, type SessionRow, UserStore, type UserRow } from "./user-store.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { ProjectId } from "../domain/run.ts"
import type { AuthIdentityId, UserId, UserSessionId } from "../domain/id-schemas.ts"

export type { ConsoleSession, SessionKind } from "../domain/console-session.ts"
export { normalizeEmail, type UserRow } from "./user-store.ts"

export interface SignedIn {
  readonly user: UserRow
  readonly token: string
  readonly session: ConsoleSession
}

export type SessionFailure = "malformed" | "unknown" | "ended"

/** What a user may do on a project: the role in the project's tenant, or why not. */
export type ProjectAccess = { readonly role: "admin" | "member" } | "none" | "disabled"

export class Users extends Context.Service<Users, {
  /** A new user with a password identity (CLI, invitation acceptance). 409 when the email has an account. */
  readonly create: (input: { readonly email: string; readonly password: string; readonly displayName: string | null }) => Effect.Effect<UserRow & { readonly identity_id: AuthIdentityId }, AccountConflict>
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
  readonly authenticateOnProject: (token: string, projectId: ProjectId) => Effect.Effect<(ConsoleSession & { readonly access: ProjectAccess }) | SessionFailure>
  readonly logout: (sessionId: UserSessionId) => Effect.Effect<void>
  /** Throttled like a sign-in (the account and `address`): a wrong current password is a guess. */
  readonly changePassword: (session: ConsoleSession, current: string, next: string, address: string) => Effect.Effect<void, InvalidCredentials | LoginThrottled>
  /**
   * Sets a new password for someone who proved the address some other way (a mailed reset link,
   * the operator's `wa users reset-password`): the address counts as verified, and every session
   * of the user ends. Runs inside the caller's transaction when there is one.
   */
  readonly setPasswordAfterProof: (userId: UserId, passwordHash: string) => Effect.Effect<void>
  readonly get: (userId: UserId) => Effect.Effect<UserRow | undefined>
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
  readonly passwordIdentityId: (userId: UserId) => Effect.Effect<AuthIdentityId | null>
}>()("wa/accounts/Users") {
  static readonly layer = Layer.effect(
    Users,
    Effect.gen(function*() {
      const store = yield* UserStore
      const config = yield* AppConfig
      const throttle = yield* LoginThrottle
      const sessionMs = config.consoleSessionHours * 3600 * 1000

      const create = Effect.fn("Users.create")(function*(input: { readonly email: string; readonly password: string; readonly displayName: string | null }) {
        const passwordHash = yield* hashPassword(input.password)
        const created = yield* store.insertWithPassword({ email: input.email.trim(), displayName: input.displayName, passwordHash, emailVerified: true })
        if (created === undefined) {
          return yield* new AccountConflict({ code: "email_taken", detail: "an account with this email already exists; sign in instead" })
        }
        return created
      })

      const startSession = (userId: UserId, email: string, kind: SessionKind) =>
        Effect.gen(function*() {
          const token = generateSessionToken()
          const sessionId = makeId("uss")
          const expiresAt = yield* store.insertSession({ sessionId, userId, token, kind, sessionMs })
          return { token, session: { sessionId, userId, email, kind, expiresAt } }
        })

      const wrong = new InvalidCredentials({ detail: "the email or the password is wrong" })

      const login = Effect.fn("Users.login")(function*(input: { readonly email: string; readonly password: string; readonly address: string; readonly kind: SessionKind }) {
        const keys = { account: normalizeEmail(input.email), address: input.address }
        yield* throttle.attempt(keys)
        const row = yield* store.credentials(keys.account)
        // An unknown email costs the same derivation as a known one (verifyPassword's dummy hash).
        const ok = yield* verifyPassword(input.password, row?.password_hash)
        if (row === undefined || !ok) return yield* wrong
        yield* throttle.succeeded(keys)
        if (row.password_hash !== null && needsRehash(row.password_hash)) {
          const hash = yield* hashPassword(input.password)
          yield* store.rehash(row.id, hash)
        }
        const { password_hash: _, ...user } = row
        const started = yield* startSession(user.id, user.email, input.kind)
        return { user, ...started }
      })

      /** The session a row of console_sessions (joined with its user) stands for, or why none. */
      const sessionOf = (row: SessionRow | undefined): ConsoleSession | "unknown" | "ended" =>
        row === undefined ? "unknown" : row.ended ? "ended" : { sessionId: row.id, userId: row.user_id, email: row.email, kind: row.kind, expiresAt: row.expires_at }

      const authenticate = (token: string): Effect.Effect<ConsoleSession | SessionFailure> => {
        if (!isWellFormedSessionToken(token)) return Effect.succeed("malformed" as const)
        return store.sessionByToken(token).pipe(Effect.map(sessionOf))
      }

      const authenticateOnProject = (token: string, projectId: ProjectId) => {
        if (!isWellFormedSessionToken(token)) return Effect.succeed("malformed" as const)
        return store.sessionOnProject(token, projectId).pipe(
          Effect.map((row) => {
            const session = sessionOf(row)
            if (typeof session === "string") return session
            const { role, status } = row! // a session comes only from a row
            const access: ProjectAccess = role === null ? "none" : status !== "active" ? "disabled" : { role }
            return { ...session, access }
          })
        )
      }

      const logout = store.endSession

      const changePassword = Effect.fn("Users.changePassword")(function*(session: ConsoleSession, current: string, next: string, address: string) {
        // The current password is a guess like a sign-in's: counted by the same limiter, for the
        // account and the address, before the hash is checked.
        const keys = { account: normalizeEmail(session.email), address }
        yield* throttle.attempt(keys)
        const stored = yield* store.passwordHash(session.userId)
        const ok = yield* verifyPassword(current, stored)
        if (!ok) return yield* new InvalidCredentials({ detail: "the current password is wrong" })
        yield* throttle.succeeded(keys)
        const hash = yield* hashPassword(next)
        // The new hash and the end of every other session in one transaction: a stolen session
        // (or one signed in elsewhere) does not outlive the change.
        yield* store.changePassword(session.userId, session.sessionId, hash)
      })

      const startSessionFor = (user: UserRow, kind: SessionKind) =>
        startSession(user.id, user.email, kind).pipe(Effect.map((started) => ({ user, ...started })))

      const unproven = new AccountConflict({
        code: "email_unverified",
        detail: "an account with this email exists, has a password and its address was never verified, so SSO does not sign into it " +
          "(whoever set that password may not own the address). Reset its password by email (POST /v1/auth/password/forgot), which " +
          "proves the address and ends every session of the account, or sign in with its password and verify the address; then sign in with SSO again"
      })

      const resolveSsoIdentity = (providerId: string, subject: string, email: string) =>
        store.transaction(Effect.gen(function*() {
          const provider = `oidc:${providerId}`
          const linked = yield* store.lockLinked(provider, subject)
          const inserted = linked !== undefined ? undefined : yield* store.insertWithoutPassword(email)
          if (inserted !== undefined) {
            yield* store.addIdentity(inserted.id, provider, subject)
            return inserted
          }
          const candidate = linked ?? (yield* store.lockByEmail(email))!
          const { has_password, ...user } = candidate
          if (!user.email_verified) {
            if (has_password) return yield* unproven
            // No password on it: nobody else holds a way in, and the provider vouches for the address.
            if (normalizeEmail(user.email) === normalizeEmail(email)) yield* store.markVerified(user.id)
          }
          if (linked === undefined) yield* store.linkIdentity(user.id, provider, subject)
          return { ...user, email_verified: user.email_verified || normalizeEmail(user.email) === normalizeEmail(email) }
        }))

      const setPasswordAfterProof = store.setPasswordAfterProof
      const findByEmail = store.findByEmail
      const get = store.get
      const passwordIdentityId = store.passwordIdentityId

      return Users.of({
        ...withMethodSpans("Users", {
          findByEmail,
          authenticate,
          authenticateOnProject,
          logout,
          get,
          passwordIdentityId,
          startSession: startSessionFor,
          resolveSsoIdentity,
          setPasswordAfterProof
        }),
        create, login, changePassword
      })
    })
  ).pipe(Layer.provide(UserStore.layer))
}
