/**
 * Console users in PostgreSQL: the users, their sign-in identities (auth_identities) and console
 * sessions (found by the SHA-256 of their token; the token itself is never stored). Rows are
 * decoded through Schema; the rules (who may sign in, when SSO may take an account) are the
 * service's (src/accounts/users.ts).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SessionKind } from "../domain/console-session.ts"
import { makeId } from "../domain/ids.ts"
import { hashToken } from "./session-tokens.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { ProjectId } from "../domain/run.ts"
import { AuthIdentityId, UserId, UserSessionId } from "../domain/id-schemas.ts"
import { decodeRows } from "../domain/rows.ts"


/** Lower-cased and trimmed: how addresses are compared. */
export const normalizeEmail = (email: string) => email.trim().toLowerCase()

export const UserRow = Schema.Struct({
  id: UserId,
  email: Schema.String,
  display_name: Schema.NullOr(Schema.String),
  /** Whether the account's owner proved the address (a mailed link, SSO, or the operator made it). */
  email_verified: Schema.Boolean,
  created_at: Schema.Date
})
export type UserRow = typeof UserRow.Type
const userRows = decodeRows(UserRow)

const Credentials = Schema.Struct({ ...UserRow.fields, password_hash: Schema.NullOr(Schema.String) })
/** A user as an SSO sign-in finds it: whether it has a password decides whether SSO may take it. */
const SsoCandidate = Schema.Struct({ ...UserRow.fields, has_password: Schema.Boolean })
export type SsoCandidate = typeof SsoCandidate.Type

const SessionKindSchema = Schema.Literals(["cookie", "bearer"])
export const SessionRow = Schema.Struct({
  id: UserSessionId,
  user_id: UserId,
  email: Schema.String,
  kind: SessionKindSchema,
  expires_at: Schema.Date,
  ended: Schema.Boolean
})
export type SessionRow = typeof SessionRow.Type
const MemberRole = Schema.NullOr(Schema.Literals(["admin", "member"]))
const MemberStatus = Schema.NullOr(Schema.Literals(["active", "disabled"]))
const SessionOnProjectRow = Schema.Struct({ ...SessionRow.fields, role: MemberRole, status: MemberStatus })
export type SessionOnProjectRow = typeof SessionOnProjectRow.Type

const IdRow = Schema.Struct({ id: AuthIdentityId })
const ExpiresRow = Schema.Struct({ expires_at: Schema.Date })
const HashRow = Schema.Struct({ password_hash: Schema.NullOr(Schema.String) })
const EmailRow = Schema.Struct({ email: Schema.String })

export class UserStore extends Context.Service<UserStore, {
  /**
   * A new user with a password identity, in one transaction (the caller's when there is one);
   * undefined when the email has an account.
   */
  readonly insertWithPassword: (input: {
    readonly email: string
    readonly displayName: string | null
    readonly passwordHash: string
    /** Whether the address counts as proven (the operator made the account), or not yet (an invitation accepted). */
    readonly emailVerified: boolean
  }) => Effect.Effect<(UserRow & { readonly identity_id: AuthIdentityId }) | undefined>
  /** The user's first sign-in identity (by id), if any. */
  readonly firstIdentityId: (userId: UserId) => Effect.Effect<AuthIdentityId | null>
  readonly findByEmail: (email: string) => Effect.Effect<UserRow | undefined>
  readonly get: (userId: UserId) => Effect.Effect<UserRow | undefined>
  readonly passwordIdentityId: (userId: UserId) => Effect.Effect<AuthIdentityId | null>
  /** The user of the email with the password hash (null without a password). */
  readonly credentials: (email: string) => Effect.Effect<(UserRow & { readonly password_hash: string | null }) | undefined>
  readonly passwordHash: (userId: UserId) => Effect.Effect<string | null | undefined>
  /** Stores a new hash of the same password (a stronger derivation). */
  readonly rehash: (userId: UserId, passwordHash: string) => Effect.Effect<void>
  /**
   * A new session of the token for `sessionMs`; when it expires. The user's sessions that ended
   * more than a day ago go as it starts (rows stay a day so a replayed token still meets "ended"
   * rather than "unknown" in the logs).
   */
  readonly insertSession: (input: { readonly sessionId: UserSessionId; readonly userId: UserId; readonly token: string; readonly kind: SessionKind; readonly sessionMs: number }) => Effect.Effect<Date>
  readonly sessionByToken: (token: string) => Effect.Effect<SessionRow | undefined>
  /** sessionByToken and, in the same statement, the user's membership of the project's tenant. */
  readonly sessionOnProject: (token: string, projectId: ProjectId) => Effect.Effect<SessionOnProjectRow | undefined>
  readonly endSession: (sessionId: UserSessionId) => Effect.Effect<void>
  /** The new hash and the end of every other session of the user, in one transaction. */
  readonly changePassword: (userId: UserId, keepSessionId: UserSessionId, passwordHash: string) => Effect.Effect<void>
  /**
   * The new hash (the address counted verified), a password identity when the account had none,
   * the end of every session and of every unused reset link; in one transaction (the caller's
   * when there is one).
   */
  readonly setPasswordAfterProof: (userId: UserId, passwordHash: string) => Effect.Effect<void>
  /** Runs `effect` in one transaction (the statements of other stores in it join it). */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The user linked to the identity (provider, subject), its row locked. */
  readonly lockLinked: (provider: string, subject: string) => Effect.Effect<SsoCandidate | undefined>
  /** The user of the email, its row locked. */
  readonly lockByEmail: (email: string) => Effect.Effect<SsoCandidate | undefined>
  /** A new user without a password (address verified); undefined when the email has an account. */
  readonly insertWithoutPassword: (email: string) => Effect.Effect<UserRow | undefined>
  /** Adds an identity of the user (a new account's first). */
  readonly addIdentity: (userId: UserId, provider: string, subject: string) => Effect.Effect<void>
  /** Links an identity to the user; nothing when it is linked already. */
  readonly linkIdentity: (userId: UserId, provider: string, subject: string) => Effect.Effect<void>
  readonly markVerified: (userId: UserId) => Effect.Effect<void>
}>()("wa/accounts/UserStore") {
  static readonly layer = Layer.effect(
    UserStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const userColumns = sql.literal("id, email, display_name, email_verified, created_at")
      const candidateColumns = sql.literal("u.id, u.email, u.display_name, u.email_verified, u.created_at, u.password_hash IS NOT NULL AS has_password")
      const sessions = decodeRows(SessionRow)
      const onProject = decodeRows(SessionOnProjectRow)
      const onProjectStatement = `
        SELECT s.id, s.user_id, u.email, s.kind, s.expires_at, (s.revoked_at IS NOT NULL OR s.expires_at <= now()) AS ended,
          m.role, m.status
        FROM console_sessions s JOIN users u ON u.id = s.user_id
        LEFT JOIN projects p ON p.id = $2
        LEFT JOIN tenant_members m ON m.tenant_id = p.tenant_id AND m.user_id = s.user_id
        WHERE s.token_hash = $1`

      return UserStore.of(withMethodSpans("UserStore", {
        insertWithPassword: (input) =>
          sql.withTransaction(Effect.gen(function*() {
            const id = makeId("usr")
            const identityId = makeId("aid")
            const rows = yield* userRows(sql`
              INSERT INTO users (id, email, display_name, password_hash, email_verified)
              VALUES (${id}, ${input.email}, ${input.displayName}, ${input.passwordHash}, ${input.emailVerified})
              ON CONFLICT DO NOTHING RETURNING ${userColumns}`)
            if (rows[0] === undefined) return undefined
            yield* sql`INSERT INTO auth_identities (id, user_id, provider, subject) VALUES (${identityId}, ${id}, 'password', ${normalizeEmail(input.email)})`
            return { ...rows[0], identity_id: identityId }
          })).pipe(Effect.orDie),
        findByEmail: (email) => userRows(sql`SELECT ${userColumns} FROM users WHERE lower(email) = ${normalizeEmail(email)}`).pipe(Effect.map((rows) => rows[0])),
        get: (userId) => userRows(sql`SELECT ${userColumns} FROM users WHERE id = ${userId}`).pipe(Effect.map((rows) => rows[0])),
        firstIdentityId: (userId) =>
          decodeRows(IdRow)(sql`SELECT id FROM auth_identities WHERE user_id = ${userId} ORDER BY id LIMIT 1`).pipe(
            Effect.map((rows) => rows[0]?.id ?? null)
          ),
        passwordIdentityId: (userId) =>
          decodeRows(IdRow)(sql`SELECT id FROM auth_identities WHERE user_id = ${userId} AND provider = 'password'`).pipe(
            Effect.map((rows) => rows[0]?.id ?? null)
          ),
        credentials: (email) =>
          decodeRows(Credentials)(sql`SELECT ${userColumns}, password_hash FROM users WHERE lower(email) = ${normalizeEmail(email)}`).pipe(
            Effect.map((rows) => rows[0])
          ),
        passwordHash: (userId) =>
          decodeRows(HashRow)(sql`SELECT password_hash FROM users WHERE id = ${userId}`).pipe(Effect.map((rows) => rows[0]?.password_hash)),
        rehash: (userId, passwordHash) => sql`UPDATE users SET password_hash = ${passwordHash} WHERE id = ${userId}`.pipe(Effect.asVoid, Effect.orDie),
        insertSession: (input) =>
          Effect.gen(function*() {
            yield* sql`
              DELETE FROM console_sessions
              WHERE user_id = ${input.userId} AND (expires_at < now() - interval '1 day' OR revoked_at < now() - interval '1 day')`.pipe(Effect.orDie)
            const rows = yield* decodeRows(ExpiresRow)(sql`
              INSERT INTO console_sessions (id, user_id, token_hash, kind, expires_at)
              VALUES (${input.sessionId}, ${input.userId}, ${hashToken(input.token)}, ${input.kind}, now() + ${`${input.sessionMs} milliseconds`}::interval)
              RETURNING expires_at`)
            return rows[0]!.expires_at
          }),
        sessionByToken: (token) =>
          sessions(sql`
            SELECT s.id, s.user_id, u.email, s.kind, s.expires_at, (s.revoked_at IS NOT NULL OR s.expires_at <= now()) AS ended
            FROM console_sessions s JOIN users u ON u.id = s.user_id
            WHERE s.token_hash = ${hashToken(token)}`).pipe(Effect.map((rows) => rows[0])),
        sessionOnProject: (token, projectId) =>
          onProject(sql.unsafe(onProjectStatement, [hashToken(token), projectId])).pipe(Effect.map((rows) => rows[0])),
        endSession: (sessionId) =>
          sql`UPDATE console_sessions SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${sessionId}`.pipe(Effect.asVoid, Effect.orDie),
        changePassword: (userId, keepSessionId, passwordHash) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* sql`UPDATE users SET password_hash = ${passwordHash}, password_changed_at = now() WHERE id = ${userId}`
            yield* sql`
              UPDATE console_sessions SET revoked_at = now()
              WHERE user_id = ${userId} AND id <> ${keepSessionId} AND revoked_at IS NULL`
          })).pipe(Effect.orDie),
        setPasswordAfterProof: (userId, passwordHash) =>
          sql.withTransaction(Effect.gen(function*() {
            const rows = yield* decodeRows(EmailRow)(sql`
              UPDATE users SET password_hash = ${passwordHash}, password_changed_at = now(), email_verified = true
              WHERE id = ${userId} RETURNING email`)
            if (rows[0] === undefined) return
            // An account made by SSO had no password identity yet.
            yield* sql`
              INSERT INTO auth_identities (id, user_id, provider, subject) VALUES (${makeId("aid")}, ${userId}, 'password', ${normalizeEmail(rows[0].email)})
              ON CONFLICT DO NOTHING`
            yield* sql`UPDATE console_sessions SET revoked_at = now() WHERE user_id = ${userId} AND revoked_at IS NULL`
            // Whoever asked for a reset before is answered by this one: no other reset link works now.
            yield* sql`UPDATE account_tokens SET used_at = now() WHERE user_id = ${userId} AND purpose = 'reset_password' AND used_at IS NULL`
          })).pipe(Effect.orDie),
        transaction: (effect) => sql.withTransaction(effect).pipe(Effect.catchTag("SqlError", Effect.die)),
        lockLinked: (provider, subject) =>
          decodeRows(SsoCandidate)(sql`
            SELECT ${candidateColumns}
            FROM auth_identities i JOIN users u ON u.id = i.user_id
            WHERE i.provider = ${provider} AND i.subject = ${subject}
            FOR UPDATE OF u`).pipe(Effect.map((rows) => rows[0])),
        lockByEmail: (email) =>
          decodeRows(SsoCandidate)(sql`
            SELECT ${candidateColumns} FROM users u WHERE lower(u.email) = ${normalizeEmail(email)} FOR UPDATE`).pipe(Effect.map((rows) => rows[0])),
        insertWithoutPassword: (email) =>
          userRows(sql`
            INSERT INTO users (id, email, email_verified) VALUES (${makeId("usr")}, ${email.trim()}, true)
            ON CONFLICT DO NOTHING RETURNING ${userColumns}`).pipe(Effect.map((rows) => rows[0])),
        addIdentity: (userId, provider, subject) =>
          sql`INSERT INTO auth_identities (id, user_id, provider, subject) VALUES (${makeId("aid")}, ${userId}, ${provider}, ${subject})`.pipe(
            Effect.asVoid,
            Effect.orDie
          ),
        linkIdentity: (userId, provider, subject) =>
          sql`
            INSERT INTO auth_identities (id, user_id, provider, subject) VALUES (${makeId("aid")}, ${userId}, ${provider}, ${subject})
            ON CONFLICT DO NOTHING`.pipe(Effect.asVoid, Effect.orDie),
        markVerified: (userId) => sql`UPDATE users SET email_verified = true WHERE id = ${userId}`.pipe(Effect.asVoid, Effect.orDie)
      }))
    })
  )
}
