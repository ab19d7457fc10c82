/**
 * Tenants, their members, invitations and projects, with the role rules of README "Accounts":
 *
 * - any active member: read the tenant, list members and projects, use the tenant's projects
 *   (products, bug reports) like a `run` API key;
 * - admin: also invite (and list and revoke invitations), change roles, disable and re-enable
 *   members, create projects, and manage the projects' API keys (like an `admin` API key).
 *
 * A user who is not a member of a tenant gets 404 for it (its existence is not confirmed); a
 * disabled member gets 403. A tenant keeps at least one active admin: demoting or disabling the
 * last one is refused (409 `last_admin`), checked under a lock of the tenant row so two admins
 * demoting each other at once cannot both succeed. Caps (pending invitations per tenant, tenants a
 * user creates) are checked in the transaction that would pass them, under the same kind of lock.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { makeId } from "../domain/ids.ts"
import { earlierCreate, recordCreate } from "../store/keyed-create.ts"
import {
  AccountConflict,
  AccountInvalidField,
  AccountLimitReached,
  AccountResourceNotFound,
  RoleForbidden
} from "./errors.ts"
import { hashPassword } from "./passwords.ts"
import { generateInvitationToken, hashToken } from "./session-tokens.ts"
import { normalizeEmail } from "./users.ts"

export type Role = "admin" | "member"
export type MemberStatus = "active" | "disabled"
export type InvitationStatus = "pending" | "accepted" | "revoked" | "expired"

export interface TenantRow {
  readonly id: string
  readonly name: string
  readonly created_at: Date
}

export interface MembershipRow extends TenantRow {
  readonly role: Role
  readonly status: MemberStatus
}

export interface MemberRow {
  readonly user_id: string
  readonly auth_identity_id: string | null
  readonly role: Role
  readonly status: MemberStatus
  readonly display_name: string | null
  readonly email: string
  readonly invited_by_user_id: string | null
  readonly created_at: Date
}

export interface InvitationRow {
  readonly id: string
  readonly tenant_id: string
  readonly email: string
  readonly role: Role
  readonly status: InvitationStatus
  readonly invited_by: string | null
  readonly expires_at: Date
  readonly accepted_at: Date | null
  readonly revoked_at: Date | null
  readonly created_at: Date
}

export interface TenantProjectRow {
  readonly id: string
  readonly name: string
  readonly tenant_id: string
  readonly created_at: Date
}

type AcceptAs =
  | { readonly _tag: "SignedIn"; readonly userId: string; readonly email: string }
  | { readonly _tag: "NewAccount"; readonly password: string | null; readonly displayName: string | null }

const invitationColumns = `id, tenant_id, email, role,
  CASE WHEN status = 'pending' AND expires_at <= now() THEN 'expired' ELSE status END AS status,
  invited_by, expires_at, accepted_at, revoked_at, created_at`

export class Tenants extends Context.Service<Tenants, {
  readonly create: (userId: string, name: string) => Effect.Effect<TenantRow, AccountLimitReached>
  /** The user's tenants by id; with `page`, at most `limit` of them after the id `after`. */
  readonly listForUser: (userId: string, page?: { readonly limit: number; readonly after: string | undefined }) => Effect.Effect<ReadonlyArray<MembershipRow>>
  /** The caller's membership, failing unless it is active and has at least `role`. */
  readonly require: (tenantId: string, userId: string, role: Role) => Effect.Effect<MembershipRow, AccountResourceNotFound | RoleForbidden>
  readonly members: (tenantId: string, userId: string, limit: number, afterUserId: string | undefined) => Effect.Effect<ReadonlyArray<MemberRow>, AccountResourceNotFound | RoleForbidden>
  readonly updateMember: (tenantId: string, actorId: string, targetUserId: string, change: { readonly role?: Role | undefined; readonly status?: MemberStatus | undefined }) => Effect.Effect<MemberRow, AccountResourceNotFound | RoleForbidden | AccountConflict>
  readonly invite: (tenantId: string, actorId: string, email: string, role: Role) => Effect.Effect<{ readonly invitation: InvitationRow; readonly token: string }, AccountResourceNotFound | RoleForbidden | AccountConflict | AccountLimitReached>
  readonly invitations: (tenantId: string, actorId: string, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<InvitationRow>, AccountResourceNotFound | RoleForbidden>
  readonly revokeInvitation: (tenantId: string, actorId: string, invitationId: string) => Effect.Effect<InvitationRow, AccountResourceNotFound | RoleForbidden | AccountConflict>
  readonly accept: (token: string, as: AcceptAs) => Effect.Effect<{ readonly tenantId: string; readonly userId: string; readonly role: Role }, AccountResourceNotFound | RoleForbidden | AccountConflict | AccountInvalidField>
  readonly projects: (tenantId: string, userId: string, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<TenantProjectRow>, AccountResourceNotFound | RoleForbidden>
  readonly createProject: (tenantId: string, userId: string, name: string) => Effect.Effect<TenantProjectRow, AccountResourceNotFound | RoleForbidden>
  readonly exists: (tenantId: string) => Effect.Effect<boolean>
  /** Adds a user to a tenant (the CLI's `users create --tenant`). */
  readonly addMember: (tenantId: string, userId: string, role: Role, identityId: string | null) => Effect.Effect<void, AccountResourceNotFound | AccountConflict>
}>()("wa/accounts/Tenants") {
  static readonly layer = Layer.effect(
    Tenants,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const invitationSelect = sql.literal(invitationColumns)

      const membership = (tenantId: string, userId: string) =>
        sql<MembershipRow>`
          SELECT t.id, t.name, t.created_at, m.role, m.status
          FROM tenants t JOIN tenant_members m ON m.tenant_id = t.id
          WHERE t.id = ${tenantId} AND m.user_id = ${userId}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie)

      const require = (tenantId: string, userId: string, role: Role) =>
        Effect.gen(function*() {
          const row = yield* membership(tenantId, userId)
          if (row === undefined) return yield* new AccountResourceNotFound({ what: "tenant", id: tenantId })
          if (row.status !== "active") {
            return yield* new RoleForbidden({ detail: "your membership of this tenant is disabled; ask one of its admins" })
          }
          if (role === "admin" && row.role !== "admin") {
            return yield* new RoleForbidden({ detail: "this operation needs the admin role in the tenant; you are a member", requiredRole: "admin" })
          }
          return row
        })

      const create = Effect.fn("Tenants.create")(function*(userId: string, name: string) {
        // The retry of a keyed create whose first attempt committed before its process died gets that tenant.
        const earlier = yield* earlierCreate((id) =>
          sql<TenantRow>`SELECT id, name, created_at FROM tenants WHERE id = ${id} AND created_by_user_id = ${userId}`.pipe(Effect.orDie, Effect.map((rows) => rows[0])))
        if (earlier !== undefined) return earlier
        return yield* sql.withTransaction(Effect.gen(function*() {
          // The user's row is the lock: concurrent creations by one user count one after another.
          yield* sql`SELECT id FROM users WHERE id = ${userId} FOR UPDATE`
          const [{ n }] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM tenants WHERE created_by_user_id = ${userId}`
          if (n >= config.maxTenantsPerUser) return yield* new AccountLimitReached({ what: "tenants created by one user", limit: config.maxTenantsPerUser })
          const rows = yield* sql<TenantRow>`
            INSERT INTO tenants (id, name, created_by_user_id) VALUES (${makeId("ten")}, ${name}, ${userId})
            RETURNING id, name, created_at`
          const identity = yield* sql<{ id: string }>`SELECT id FROM auth_identities WHERE user_id = ${userId} ORDER BY id LIMIT 1`
          yield* sql`
            INSERT INTO tenant_members (tenant_id, user_id, auth_identity_id, role)
            VALUES (${rows[0]!.id}, ${userId}, ${identity[0]?.id ?? null}, 'admin')`
          // Under an Idempotency-Key the claim records the tenant in this transaction (src/store/keyed-create.ts).
          yield* recordCreate(sql, rows[0]!.id)
          return rows[0]!
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      })

      const listForUser = (userId: string, page?: { readonly limit: number; readonly after: string | undefined }) =>
        sql<MembershipRow>`
          SELECT t.id, t.name, t.created_at, m.role, m.status
          FROM tenant_members m JOIN tenants t ON t.id = m.tenant_id
          WHERE m.user_id = ${userId} ${page?.after === undefined ? sql`` : sql`AND t.id > ${page.after}`}
          ORDER BY t.id ${page === undefined ? sql`` : sql`LIMIT ${page.limit}`}`.pipe(Effect.orDie)

      const memberSelect = (tenantId: string) => sql`
        SELECT m.user_id, m.auth_identity_id, m.role, m.status, u.display_name, u.email, m.invited_by_user_id, m.created_at
        FROM tenant_members m JOIN users u ON u.id = m.user_id
        WHERE m.tenant_id = ${tenantId}`

      const members = (tenantId: string, userId: string, limit: number, afterUserId: string | undefined) =>
        Effect.gen(function*() {
          yield* require(tenantId, userId, "member")
          return yield* sql<MemberRow>`
            ${memberSelect(tenantId)} ${afterUserId === undefined ? sql`` : sql`AND m.user_id > ${afterUserId}`}
            ORDER BY m.user_id LIMIT ${limit}`.pipe(Effect.orDie)
        })

      const updateMember = Effect.fn("Tenants.updateMember")(function*(
        tenantId: string,
        actorId: string,
        targetUserId: string,
        change: { readonly role?: Role | undefined; readonly status?: MemberStatus | undefined }
      ) {
        yield* require(tenantId, actorId, "admin")
        return yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT id FROM tenants WHERE id = ${tenantId} FOR UPDATE`
          // The actor's role is read again under the lock: an admin demoted a moment ago cannot act.
          const actor = yield* sql<{ role: Role; status: MemberStatus }>`
            SELECT role, status FROM tenant_members WHERE tenant_id = ${tenantId} AND user_id = ${actorId}`
          if (actor[0]?.role !== "admin" || actor[0]?.status !== "active") {
            return yield* new RoleForbidden({ detail: "this operation needs the admin role in the tenant", requiredRole: "admin" })
          }
          const target = yield* sql<MemberRow>`${memberSelect(tenantId)} AND m.user_id = ${targetUserId}`
          if (target[0] === undefined) return yield* new AccountResourceNotFound({ what: "member", id: targetUserId })
          const role = change.role ?? target[0].role
          const status = change.status ?? target[0].status
          const losesAdmin = target[0].role === "admin" && target[0].status === "active" && (role !== "admin" || status !== "active")
          if (losesAdmin) {
            const [{ n }] = yield* sql<{ n: number }>`
              SELECT count(*)::int AS n FROM tenant_members
              WHERE tenant_id = ${tenantId} AND role = 'admin' AND status = 'active' AND user_id <> ${targetUserId}`
            if (n === 0) {
              return yield* new AccountConflict({ code: "last_admin", detail: "a tenant keeps at least one active admin; make another member admin first" })
            }
          }
          yield* sql`UPDATE tenant_members SET role = ${role}, status = ${status} WHERE tenant_id = ${tenantId} AND user_id = ${targetUserId}`
          return { ...target[0], role, status }
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      })

      const invite = Effect.fn("Tenants.invite")(function*(tenantId: string, actorId: string, email: string, role: Role) {
        yield* require(tenantId, actorId, "admin")
        const token = generateInvitationToken()
        const address = email.trim()
        // The retry of a keyed invite whose first attempt committed before its process died gets that
        // invitation, with a new token: the first answer was never kept, so never sent, and only the
        // token's hash is stored, so nobody holds the old one.
        const earlier = yield* earlierCreate((id) =>
          sql<InvitationRow>`
            UPDATE invitations SET token_hash = ${hashToken(token)}
            WHERE id = ${id} AND tenant_id = ${tenantId} AND status = 'pending'
            RETURNING ${invitationSelect}`.pipe(Effect.orDie, Effect.map((rows) => rows[0])))
        if (earlier !== undefined) return { invitation: earlier, token }
        const invitation = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT id FROM tenants WHERE id = ${tenantId} FOR UPDATE`
          const member = yield* sql`
            SELECT 1 FROM tenant_members m JOIN users u ON u.id = m.user_id
            WHERE m.tenant_id = ${tenantId} AND lower(u.email) = ${normalizeEmail(address)}`
          if (member.length > 0) {
            return yield* new AccountConflict({ code: "already_member", detail: "this email is already a member of the tenant (a disabled member is re-enabled with PATCH on the member)" })
          }
          const pending = yield* sql<{ email: string }>`
            SELECT email FROM invitations WHERE tenant_id = ${tenantId} AND status = 'pending' AND expires_at > now()`
          if (pending.some((row) => normalizeEmail(row.email) === normalizeEmail(address))) {
            return yield* new AccountConflict({ code: "invitation_pending", detail: "a pending invitation for this email exists; revoke it to send a new one" })
          }
          if (pending.length >= config.maxPendingInvitations) {
            return yield* new AccountLimitReached({ what: "pending invitations per tenant", limit: config.maxPendingInvitations })
          }
          const rows = yield* sql<InvitationRow>`
            INSERT INTO invitations (id, tenant_id, email, role, token_hash, invited_by, expires_at)
            VALUES (${makeId("inv")}, ${tenantId}, ${address}, ${role}, ${hashToken(token)}, ${actorId},
              now() + ${`${config.invitationTtlHours} hours`}::interval)
            RETURNING ${invitationSelect}`
          // Under an Idempotency-Key the claim records the invitation in this transaction (src/store/keyed-create.ts).
          yield* recordCreate(sql, rows[0]!.id)
          return rows[0]!
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        return { invitation, token }
      })

      const invitations = (tenantId: string, actorId: string, limit: number, beforeId: string | undefined) =>
        Effect.gen(function*() {
          yield* require(tenantId, actorId, "admin")
          return yield* sql<InvitationRow>`
            SELECT ${invitationSelect} FROM invitations
            WHERE tenant_id = ${tenantId} ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`.pipe(Effect.orDie)
        })

      const revokeInvitation = Effect.fn("Tenants.revokeInvitation")(function*(tenantId: string, actorId: string, invitationId: string) {
        yield* require(tenantId, actorId, "admin")
        const rows = yield* sql<InvitationRow>`
          UPDATE invitations SET status = 'revoked', revoked_at = now()
          WHERE tenant_id = ${tenantId} AND id = ${invitationId} AND status = 'pending' AND expires_at > now()
          RETURNING ${invitationSelect}`.pipe(Effect.orDie)
        if (rows[0] !== undefined) return rows[0]
        const current = yield* sql<InvitationRow>`
          SELECT ${invitationSelect} FROM invitations WHERE tenant_id = ${tenantId} AND id = ${invitationId}`.pipe(Effect.orDie)
        if (current[0] === undefined) return yield* new AccountResourceNotFound({ what: "invitation", id: invitationId })
        return yield* new AccountConflict({ code: "invitation_not_pending", detail: `the invitation is ${current[0].status}; only a pending invitation can be revoked` })
      })

      const notPending = (invitation: InvitationRow | undefined) =>
        invitation === undefined
          ? new AccountResourceNotFound({ what: "invitation", id: "(token)" })
          : invitation.status !== "pending"
          ? new AccountConflict({ code: `invitation_${invitation.status}`, detail: `the invitation is ${invitation.status}` })
          : undefined

      const accept = Effect.fn("Tenants.accept")(function*(token: string, as: AcceptAs) {
        // A cheap look first: the costly password hash is only computed for a live invitation,
        // so random tokens cannot make this unauthenticated endpoint burn scrypt time.
        const found = yield* sql<InvitationRow>`SELECT ${invitationSelect} FROM invitations WHERE token_hash = ${hashToken(token)}`.pipe(Effect.orDie)
        const refused = notPending(found[0])
        if (refused !== undefined) return yield* refused
        const newHash = as._tag === "NewAccount" && as.password !== null ? yield* hashPassword(as.password) : null
        return yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<InvitationRow & { token_hash: string }>`
            SELECT ${invitationSelect}, token_hash FROM invitations WHERE token_hash = ${hashToken(token)} FOR UPDATE`
          const invitation = rows[0]
          const gone = notPending(invitation)
          if (gone !== undefined || invitation === undefined) return yield* (gone ?? new AccountResourceNotFound({ what: "invitation", id: "(token)" }))
          let userId: string
          let identityId: string | null
          if (as._tag === "SignedIn") {
            if (normalizeEmail(as.email) !== normalizeEmail(invitation.email)) {
              return yield* new RoleForbidden({ detail: "this invitation is for another email address; sign in with that account" })
            }
            userId = as.userId
            const identity = yield* sql<{ id: string }>`SELECT id FROM auth_identities WHERE user_id = ${userId} ORDER BY id LIMIT 1`
            identityId = identity[0]?.id ?? null
          } else {
            if (newHash === null) {
              return yield* new AccountInvalidField({ field: "password", detail: "sign in to accept with your account, or give a password (8 to 200 characters) to create one" })
            }
            userId = makeId("usr")
            identityId = makeId("aid")
            const inserted = yield* sql`
              INSERT INTO users (id, email, display_name, password_hash) VALUES (${userId}, ${invitation.email}, ${as.displayName}, ${newHash})
              ON CONFLICT DO NOTHING RETURNING id`
            if (inserted.length === 0) {
              return yield* new AccountConflict({ code: "email_taken", detail: "an account with this email exists; sign in and accept the invitation again" })
            }
            yield* sql`INSERT INTO auth_identities (id, user_id, provider, subject) VALUES (${identityId}, ${userId}, 'password', ${normalizeEmail(invitation.email)})`
          }
          const added = yield* sql`
            INSERT INTO tenant_members (tenant_id, user_id, auth_identity_id, role, invited_by_user_id)
            VALUES (${invitation.tenant_id}, ${userId}, ${identityId}, ${invitation.role}, ${invitation.invited_by})
            ON CONFLICT DO NOTHING RETURNING user_id`
          if (added.length === 0) return yield* new AccountConflict({ code: "already_member", detail: "you are already a member of this tenant" })
          yield* sql`
            UPDATE invitations SET status = 'accepted', accepted_at = now(), accepted_by_user_id = ${userId} WHERE id = ${invitation.id}`
          return { tenantId: invitation.tenant_id, userId, role: invitation.role }
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      })

      const projects = (tenantId: string, userId: string, limit: number, beforeId: string | undefined) =>
        Effect.gen(function*() {
          yield* require(tenantId, userId, "member")
          return yield* sql<TenantProjectRow>`
            SELECT id, name, tenant_id, created_at FROM projects
            WHERE tenant_id = ${tenantId} ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`.pipe(Effect.orDie)
        })

      const createProject = (tenantId: string, userId: string, name: string) =>
        Effect.gen(function*() {
          yield* require(tenantId, userId, "admin")
          // The retry of a keyed create whose first attempt committed before its process died gets that project.
          const earlier = yield* earlierCreate((id) =>
            sql<TenantProjectRow>`SELECT id, name, tenant_id, created_at FROM projects WHERE id = ${id} AND tenant_id = ${tenantId}`.pipe(
              Effect.orDie,
              Effect.map((rows) => rows[0])
            ))
          if (earlier !== undefined) return earlier
          return yield* sql.withTransaction(Effect.gen(function*() {
            const rows = yield* sql<TenantProjectRow>`
              INSERT INTO projects (id, name, tenant_id) VALUES (${makeId("proj")}, ${name}, ${tenantId})
              RETURNING id, name, tenant_id, created_at`
            // Under an Idempotency-Key the claim records the project in this transaction (src/store/keyed-create.ts).
            yield* recordCreate(sql, rows[0]!.id)
            return rows[0]!
          })).pipe(Effect.catchTag("SqlError", Effect.die))
        })

      const addMember = (tenantId: string, userId: string, role: Role, identityId: string | null) =>
        Effect.gen(function*() {
          const tenant = yield* sql`SELECT id FROM tenants WHERE id = ${tenantId}`
          if (tenant.length === 0) return yield* new AccountResourceNotFound({ what: "tenant", id: tenantId })
          const added = yield* sql`
            INSERT INTO tenant_members (tenant_id, user_id, auth_identity_id, role) VALUES (${tenantId}, ${userId}, ${identityId}, ${role})
            ON CONFLICT DO NOTHING RETURNING user_id`
          if (added.length === 0) return yield* new AccountConflict({ code: "already_member", detail: "the user is already a member of this tenant" })
        }).pipe(Effect.catchTag("SqlError", Effect.die))

      const exists = (tenantId: string) =>
        sql`SELECT 1 FROM tenants WHERE id = ${tenantId}`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

      return Tenants.of({
        exists,
        create, listForUser, require, members, updateMember, invite, invitations, revokeInvitation, accept, projects,
        createProject, addMember
      })
    })
  )
}
