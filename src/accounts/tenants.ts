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
import { AppConfig } from "../config/config.ts"
import { earlierCreate } from "../store/keyed-create.ts"
import {
  AccountConflict,
  AccountInvalidField,
  AccountLimitReached,
  AccountResourceNotFound,
  RoleForbidden
} from "./errors.ts"
import { hashPassword } from "./passwords.ts"
import { generateInvitationToken } from "./session-tokens.ts"
import {
  type InvitationRow,
  type MemberRow,
  type MembershipRow,
  type MemberStatus,
  type Role,
  type TenantProjectRow,
  type TenantRow,
  TenantStore
} from "./tenant-store.ts"
import { normalizeEmail, UserStore } from "./user-store.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { ProjectId } from "../domain/run.ts"
import { type AuthIdentityId, InvitationId, TenantId, type UserId } from "../domain/id-schemas.ts"

export type {
  InvitationRow,
  InvitationStatus,
  MemberRow,
  MembershipRow,
  MemberStatus,
  Role,
  TenantProjectRow,
  TenantRow
} from "./tenant-store.ts"

type AcceptAs =
  | { readonly _tag: "SignedIn"; readonly userId: UserId; readonly email: string }
  | { readonly _tag: "NewAccount"; readonly password: string | null; readonly displayName: string | null }

export class Tenants extends Context.Service<Tenants, {
  readonly create: (userId: UserId, name: string) => Effect.Effect<TenantRow, AccountLimitReached>
  /** The user's tenants by id; with `page`, at most `limit` of them after the id `after`. */
  readonly listForUser: (userId: UserId, page?: { readonly limit: number; readonly after: string | undefined }) => Effect.Effect<ReadonlyArray<MembershipRow>>
  /** The caller's membership, failing unless it is active and has at least `role`. */
  readonly require: (tenantId: TenantId, userId: UserId, role: Role) => Effect.Effect<MembershipRow, AccountResourceNotFound | RoleForbidden>
  readonly members: (tenantId: TenantId, userId: UserId, limit: number, afterUserId: string | undefined) => Effect.Effect<ReadonlyArray<MemberRow>, AccountResourceNotFound | RoleForbidden>
  readonly updateMember: (tenantId: TenantId, actorId: UserId, targetUserId: UserId, change: { readonly role?: Role | undefined; readonly status?: MemberStatus | undefined }) => Effect.Effect<MemberRow, AccountResourceNotFound | RoleForbidden | AccountConflict>
  readonly invite: (tenantId: TenantId, actorId: UserId, email: string, role: Role) => Effect.Effect<{ readonly invitation: InvitationRow; readonly token: string }, AccountResourceNotFound | RoleForbidden | AccountConflict | AccountLimitReached>
  readonly invitations: (tenantId: TenantId, actorId: UserId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<InvitationRow>, AccountResourceNotFound | RoleForbidden>
  readonly revokeInvitation: (tenantId: TenantId, actorId: UserId, invitationId: InvitationId) => Effect.Effect<InvitationRow, AccountResourceNotFound | RoleForbidden | AccountConflict>
  readonly accept: (token: string, as: AcceptAs) => Effect.Effect<{ readonly tenantId: TenantId; readonly userId: UserId; readonly role: Role }, AccountResourceNotFound | RoleForbidden | AccountConflict | AccountInvalidField>
  readonly projects: (tenantId: TenantId, userId: UserId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<TenantProjectRow>, AccountResourceNotFound | RoleForbidden>
  readonly createProject: (tenantId: TenantId, userId: UserId, name: string) => Effect.Effect<TenantProjectRow, AccountResourceNotFound | RoleForbidden>
  readonly exists: (tenantId: TenantId) => Effect.Effect<boolean>
  /** Adds a user to a tenant (the CLI's `users create --tenant`). */
  readonly addMember: (tenantId: TenantId, userId: UserId, role: Role, identityId: AuthIdentityId | null) => Effect.Effect<void, AccountResourceNotFound | AccountConflict>
}>()("wa/accounts/Tenants") {
  static readonly layer = Layer.effect(
    Tenants,
    Effect.gen(function*() {
      const store = yield* TenantStore
      const users = yield* UserStore
      const config = yield* AppConfig

      const require = (tenantId: TenantId, userId: UserId, role: Role) =>
        Effect.gen(function*() {
          const row = yield* store.membership(tenantId, userId)
          if (row === undefined) return yield* new AccountResourceNotFound({ what: "tenant", id: tenantId })
          if (row.status !== "active") {
            return yield* new RoleForbidden({ detail: "your membership of this tenant is disabled; ask one of its admins" })
          }
          if (role === "admin" && row.role !== "admin") {
            return yield* new RoleForbidden({ detail: "this operation needs the admin role in the tenant; you are a member", requiredRole: "admin" })
          }
          return row
        })

      const create = Effect.fn("Tenants.create")(function*(userId: UserId, name: string) {
        // The retry of a keyed create whose first attempt committed before its process died gets that tenant.
        // The claim recorded the id of the tenant this create made (below).
        const earlier = yield* earlierCreate((id) => store.createdBy(TenantId.make(id), userId))
        if (earlier !== undefined) return earlier
        return yield* store.transaction(Effect.gen(function*() {
          // The user's row is the lock: concurrent creations by one user count one after another.
          yield* store.lockCreator(userId)
          const n = yield* store.countCreatedBy(userId)
          if (n >= config.maxTenantsPerUser) return yield* new AccountLimitReached({ what: "tenants created by one user", limit: config.maxTenantsPerUser })
          const tenant = yield* store.insert(name, userId)
          const identityId = yield* users.firstIdentityId(userId)
          yield* store.insertMember({ tenantId: tenant.id, userId, identityId, role: "admin" })
          // Under an Idempotency-Key the claim records the tenant in this transaction (src/store/keyed-create.ts).
          yield* store.recordCreate(tenant.id)
          return tenant
        }))
      })

      const listForUser = store.listForUser

      const members = (tenantId: TenantId, userId: UserId, limit: number, afterUserId: string | undefined) =>
        Effect.gen(function*() {
          yield* require(tenantId, userId, "member")
          return yield* store.members(tenantId, limit, afterUserId)
        })

      const updateMember = Effect.fn("Tenants.updateMember")(function*(
        tenantId: TenantId,
        actorId: UserId,
        targetUserId: UserId,
        change: { readonly role?: Role | undefined; readonly status?: MemberStatus | undefined }
      ) {
        yield* require(tenantId, actorId, "admin")
        return yield* store.transaction(Effect.gen(function*() {
          yield* store.lockTenant(tenantId)
          // The actor's role is read again under the lock: an admin demoted a moment ago cannot act.
          const actor = yield* store.memberRole(tenantId, actorId)
          if (actor?.role !== "admin" || actor?.status !== "active") {
            return yield* new RoleForbidden({ detail: "this operation needs the admin role in the tenant", requiredRole: "admin" })
          }
          const target = yield* store.member(tenantId, targetUserId)
          if (target === undefined) return yield* new AccountResourceNotFound({ what: "member", id: targetUserId })
          const role = change.role ?? target.role
          const status = change.status ?? target.status
          const losesAdmin = target.role === "admin" && target.status === "active" && (role !== "admin" || status !== "active")
          if (losesAdmin && (yield* store.countOtherActiveAdmins(tenantId, targetUserId)) === 0) {
            return yield* new AccountConflict({ code: "last_admin", detail: "a tenant keeps at least one active admin; make another member admin first" })
          }
          yield* store.setMember(tenantId, targetUserId, role, status)
          return { ...target, role, status }
        }))
      })

      const invite = Effect.fn("Tenants.invite")(function*(tenantId: TenantId, actorId: UserId, email: string, role: Role) {
        yield* require(tenantId, actorId, "admin")
        const token = generateInvitationToken()
        const address = email.trim()
        // The retry of a keyed invite whose first attempt committed before its process died gets that
        // invitation, with a new token: the first answer was never kept, so never sent, and only the
        // token's hash is stored, so nobody holds the old one.
        // The claim recorded the id of the invitation this create made (below).
        const earlier = yield* earlierCreate((id) => store.retokenInvitation(tenantId, InvitationId.make(id), token))
        if (earlier !== undefined) return { invitation: earlier, token }
        const invitation = yield* store.transaction(Effect.gen(function*() {
          yield* store.lockTenant(tenantId)
          if (yield* store.hasMemberEmail(tenantId, address)) {
            return yield* new AccountConflict({ code: "already_member", detail: "this email is already a member of the tenant (a disabled member is re-enabled with PATCH on the member)" })
          }
          const pending = yield* store.pendingInvitationEmails(tenantId)
          if (pending.some((pendingEmail) => normalizeEmail(pendingEmail) === normalizeEmail(address))) {
            return yield* new AccountConflict({ code: "invitation_pending", detail: "a pending invitation for this email exists; revoke it to send a new one" })
          }
          if (pending.length >= config.maxPendingInvitations) {
            return yield* new AccountLimitReached({ what: "pending invitations per tenant", limit: config.maxPendingInvitations })
          }
          const row = yield* store.insertInvitation({ tenantId, email: address, role, token, invitedBy: actorId, ttlHours: config.invitationTtlHours })
          // Under an Idempotency-Key the claim records the invitation in this transaction (src/store/keyed-create.ts).
          yield* store.recordCreate(row.id)
          return row
        }))
        return { invitation, token }
      })

      const invitations = (tenantId: TenantId, actorId: UserId, limit: number, beforeId: string | undefined) =>
        Effect.gen(function*() {
          yield* require(tenantId, actorId, "admin")
          return yield* store.invitations(tenantId, limit, beforeId)
        })

      const revokeInvitation = Effect.fn("Tenants.revokeInvitation")(function*(tenantId: TenantId, actorId: UserId, invitationId: InvitationId) {
        yield* require(tenantId, actorId, "admin")
        const revoked = yield* store.revokeInvitation(tenantId, invitationId)
        if (revoked !== undefined) return revoked
        const current = yield* store.invitation(tenantId, invitationId)
        if (current === undefined) return yield* new AccountResourceNotFound({ what: "invitation", id: invitationId })
        return yield* new AccountConflict({ code: "invitation_not_pending", detail: `the invitation is ${current.status}; only a pending invitation can be revoked` })
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
        const refused = notPending(yield* store.invitationByToken(token))
        if (refused !== undefined) return yield* refused
        const newHash = as._tag === "NewAccount" && as.password !== null ? yield* hashPassword(as.password) : null
        return yield* store.transaction(Effect.gen(function*() {
          const invitation = yield* store.lockInvitationByToken(token)
          const gone = notPending(invitation)
          if (gone !== undefined || invitation === undefined) return yield* (gone ?? new AccountResourceNotFound({ what: "invitation", id: "(token)" }))
          let userId: UserId
          let identityId: AuthIdentityId | null
          if (as._tag === "SignedIn") {
            if (normalizeEmail(as.email) !== normalizeEmail(invitation.email)) {
              return yield* new RoleForbidden({ detail: "this invitation is for another email address; sign in with that account" })
            }
            userId = as.userId
            identityId = yield* users.firstIdentityId(userId)
          } else {
            if (newHash === null) {
              return yield* new AccountInvalidField({ field: "password", detail: "sign in to accept with your account, or give a password (8 to 200 characters) to create one" })
            }
            const user = yield* users.insertWithPassword({ email: invitation.email, displayName: as.displayName, passwordHash: newHash, emailVerified: false })
            if (user === undefined) {
              return yield* new AccountConflict({ code: "email_taken", detail: "an account with this email exists; sign in and accept the invitation again" })
            }
            userId = user.id
            identityId = user.identity_id
          }
          const added = yield* store.insertMember({ tenantId: invitation.tenant_id, userId, identityId, role: invitation.role, invitedBy: invitation.invited_by })
          if (!added) return yield* new AccountConflict({ code: "already_member", detail: "you are already a member of this tenant" })
          yield* store.markAccepted(invitation.id, userId)
          return { tenantId: invitation.tenant_id, userId, role: invitation.role }
        }))
      })

      const projects = (tenantId: TenantId, userId: UserId, limit: number, beforeId: string | undefined) =>
        Effect.gen(function*() {
          yield* require(tenantId, userId, "member")
          return yield* store.projects(tenantId, limit, beforeId)
        })

      const createProject = (tenantId: TenantId, userId: UserId, name: string) =>
        Effect.gen(function*() {
          yield* require(tenantId, userId, "admin")
          // The retry of a keyed create whose first attempt committed before its process died gets that project.
          const earlier = yield* earlierCreate((id) => store.project(tenantId, ProjectId.make(id)))
          if (earlier !== undefined) return earlier
          return yield* store.transaction(Effect.gen(function*() {
            const project = yield* store.insertProject(tenantId, name)
            // Under an Idempotency-Key the claim records the project in this transaction (src/store/keyed-create.ts).
            yield* store.recordCreate(project.id)
            return project
          }))
        })

      const addMember = (tenantId: TenantId, userId: UserId, role: Role, identityId: AuthIdentityId | null) =>
        Effect.gen(function*() {
          if (!(yield* store.exists(tenantId))) return yield* new AccountResourceNotFound({ what: "tenant", id: tenantId })
          const added = yield* store.insertMember({ tenantId, userId, identityId, role })
          if (!added) return yield* new AccountConflict({ code: "already_member", detail: "the user is already a member of this tenant" })
        })

      const exists = store.exists

      return Tenants.of({
        ...withMethodSpans("Tenants", { exists, listForUser, require, members, invitations, projects, createProject, addMember }),
        create, updateMember, invite, revokeInvitation, accept
      })
    })
  ).pipe(Layer.provide(Layer.mergeAll(TenantStore.layer, UserStore.layer)))
}
