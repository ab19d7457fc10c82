/**
 * Tenants in PostgreSQL: the tenants, their members, invitations (found by the SHA-256 of their
 * token; the token itself is never stored) and projects. Rows are decoded through Schema; the role
 * rules and caps are the service's (src/accounts/tenants.ts), which runs the statements that must
 * commit together in one `transaction`.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { makeId } from "../domain/ids.ts"
import { recordCreate } from "../store/keyed-create.ts"
import { hashToken } from "./session-tokens.ts"
import { normalizeEmail } from "./user-store.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { ProjectId } from "../domain/run.ts"
import { decodeRows } from "../domain/rows.ts"
import { AuthIdentityId, InvitationId, TenantId, UserId } from "../domain/id-schemas.ts"


export const Role = Schema.Literals(["admin", "member"])
export type Role = typeof Role.Type
export const MemberStatus = Schema.Literals(["active", "disabled"])
export type MemberStatus = typeof MemberStatus.Type
export const InvitationStatus = Schema.Literals(["pending", "accepted", "revoked", "expired"])
export type InvitationStatus = typeof InvitationStatus.Type

export const TenantRow = Schema.Struct({ id: TenantId, name: Schema.String, created_at: Schema.Date })
export type TenantRow = typeof TenantRow.Type

export const MembershipRow = Schema.Struct({ ...TenantRow.fields, role: Role, status: MemberStatus })
export type MembershipRow = typeof MembershipRow.Type

export const MemberRow = Schema.Struct({
  user_id: UserId,
  auth_identity_id: Schema.NullOr(AuthIdentityId),
  role: Role,
  status: MemberStatus,
  display_name: Schema.NullOr(Schema.String),
  email: Schema.String,
  invited_by_user_id: Schema.NullOr(UserId),
  created_at: Schema.Date
})
export type MemberRow = typeof MemberRow.Type

export const InvitationRow = Schema.Struct({
  id: InvitationId,
  tenant_id: TenantId,
  email: Schema.String,
  role: Role,
  status: InvitationStatus,
  invited_by: Schema.NullOr(UserId),
  expires_at: Schema.Date,
  accepted_at: Schema.NullOr(Schema.Date),
  revoked_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date
})
export type InvitationRow = typeof InvitationRow.Type

export const TenantProjectRow = Schema.Struct({ id: Schema.String, name: Schema.String, tenant_id: Schema.String, created_at: Schema.Date })
export type TenantProjectRow = typeof TenantProjectRow.Type

const tenantRows = decodeRows(TenantRow)
const membershipRows = decodeRows(MembershipRow)
const memberRows = decodeRows(MemberRow)
const invitationRows = decodeRows(InvitationRow)
const projectRows = decodeRows(TenantProjectRow)
const CountRow = Schema.Struct({ n: Schema.Number })
const RoleRow = Schema.Struct({ role: Role, status: MemberStatus })
const EmailRow = Schema.Struct({ email: Schema.String })

/** An invitation's status as the API shows it: a pending one past its expiry is `expired`. */
const invitationColumns = `id, tenant_id, email, role,
  CASE WHEN status = 'pending' AND expires_at <= now() THEN 'expired' ELSE status END AS status,
  invited_by, expires_at, accepted_at, revoked_at, created_at`

export class TenantStore extends Context.Service<TenantStore, {
  /** Runs `effect` in one transaction (the statements of other stores in it join it). */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Records `id` on the request's Idempotency-Key claim, inside the transaction that creates it (src/store/keyed-create.ts). */
  readonly recordCreate: (id: string) => Effect.Effect<void>
  readonly exists: (tenantId: TenantId) => Effect.Effect<boolean>
  /** Locks the tenant's row (to the end of the transaction): the checks of its members and caps run one at a time. */
  readonly lockTenant: (tenantId: TenantId) => Effect.Effect<void>
  /** Locks the user's row: the tenants one user creates are counted one at a time. */
  readonly lockCreator: (userId: UserId) => Effect.Effect<void>
  readonly countCreatedBy: (userId: UserId) => Effect.Effect<number>
  /** A new tenant. */
  readonly insert: (name: string, createdByUserId: UserId) => Effect.Effect<TenantRow>
  readonly createdBy: (tenantId: TenantId, userId: UserId) => Effect.Effect<TenantRow | undefined>
  readonly membership: (tenantId: TenantId, userId: UserId) => Effect.Effect<MembershipRow | undefined>
  /** The user's tenants by id; with `page`, at most `limit` of them after the id `after`. */
  readonly listForUser: (userId: UserId, page?: { readonly limit: number; readonly after: string | undefined }) => Effect.Effect<ReadonlyArray<MembershipRow>>
  readonly members: (tenantId: TenantId, limit: number, afterUserId: string | undefined) => Effect.Effect<ReadonlyArray<MemberRow>>
  readonly member: (tenantId: TenantId, userId: UserId) => Effect.Effect<MemberRow | undefined>
  readonly memberRole: (tenantId: TenantId, userId: UserId) => Effect.Effect<{ readonly role: Role; readonly status: MemberStatus } | undefined>
  /** The tenant's active admins but `exceptUserId`. */
  readonly countOtherActiveAdmins: (tenantId: TenantId, exceptUserId: UserId) => Effect.Effect<number>
  readonly setMember: (tenantId: TenantId, userId: UserId, role: Role, status: MemberStatus) => Effect.Effect<void>
  /** Adds a member; false when the user is a member already. */
  readonly insertMember: (member: { readonly tenantId: TenantId; readonly userId: UserId; readonly identityId: AuthIdentityId | null; readonly role: Role; readonly invitedBy?: string | null }) => Effect.Effect<boolean>
  /** Whether a member of the tenant has this email (compared lower-cased). */
  readonly hasMemberEmail: (tenantId: TenantId, email: string) => Effect.Effect<boolean>
  /** The emails of the tenant's live pending invitations. */
  readonly pendingInvitationEmails: (tenantId: TenantId) => Effect.Effect<ReadonlyArray<string>>
  readonly insertInvitation: (invitation: { readonly tenantId: TenantId; readonly email: string; readonly role: Role; readonly token: string; readonly invitedBy: UserId; readonly ttlHours: number }) => Effect.Effect<InvitationRow>
  /** Gives a pending invitation of the tenant a new token; undefined when it is not pending. */
  readonly retokenInvitation: (tenantId: TenantId, invitationId: InvitationId, token: string) => Effect.Effect<InvitationRow | undefined>
  readonly invitations: (tenantId: TenantId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<InvitationRow>>
  readonly invitation: (tenantId: TenantId, invitationId: InvitationId) => Effect.Effect<InvitationRow | undefined>
  /** Revokes a live pending invitation; undefined when it is not one. */
  readonly revokeInvitation: (tenantId: TenantId, invitationId: InvitationId) => Effect.Effect<InvitationRow | undefined>
  readonly invitationByToken: (token: string) => Effect.Effect<InvitationRow | undefined>
  /** invitationByToken with the row locked. */
  readonly lockInvitationByToken: (token: string) => Effect.Effect<InvitationRow | undefined>
  readonly markAccepted: (invitationId: InvitationId, userId: UserId) => Effect.Effect<void>
  readonly projects: (tenantId: TenantId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<TenantProjectRow>>
  readonly project: (tenantId: TenantId, projectId: ProjectId) => Effect.Effect<TenantProjectRow | undefined>
  readonly insertProject: (tenantId: TenantId, name: string) => Effect.Effect<TenantProjectRow>
}>()("wa/accounts/TenantStore") {
  static readonly layer = Layer.effect(
    TenantStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const invitationSelect = sql.literal(invitationColumns)
      const memberSelect = (tenantId: TenantId) => sql`
        SELECT m.user_id, m.auth_identity_id, m.role, m.status, u.display_name, u.email, m.invited_by_user_id, m.created_at
        FROM tenant_members m JOIN users u ON u.id = m.user_id
        WHERE m.tenant_id = ${tenantId}`
      const first = <A>(rows: ReadonlyArray<A>) => rows[0]

      return TenantStore.of(withMethodSpans("TenantStore", {
        transaction: (effect) => sql.withTransaction(effect).pipe(Effect.catchTag("SqlError", Effect.die)),
        recordCreate: (id) => recordCreate(sql, id),
        exists: (tenantId) => sql`SELECT 1 FROM tenants WHERE id = ${tenantId}`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
        lockTenant: (tenantId) => sql`SELECT id FROM tenants WHERE id = ${tenantId} FOR UPDATE`.pipe(Effect.asVoid, Effect.orDie),
        lockCreator: (userId) => sql`SELECT id FROM users WHERE id = ${userId} FOR UPDATE`.pipe(Effect.asVoid, Effect.orDie),
        countCreatedBy: (userId) =>
          decodeRows(CountRow)(sql`SELECT count(*)::int AS n FROM tenants WHERE created_by_user_id = ${userId}`).pipe(Effect.map((rows) => rows[0]!.n)),
        insert: (name, createdByUserId) =>
          tenantRows(sql`
            INSERT INTO tenants (id, name, created_by_user_id) VALUES (${makeId("ten")}, ${name}, ${createdByUserId})
            RETURNING id, name, created_at`).pipe(Effect.map((rows) => rows[0]!)),
        createdBy: (tenantId, userId) =>
          tenantRows(sql`SELECT id, name, created_at FROM tenants WHERE id = ${tenantId} AND created_by_user_id = ${userId}`).pipe(Effect.map(first)),
        membership: (tenantId, userId) =>
          membershipRows(sql`
            SELECT t.id, t.name, t.created_at, m.role, m.status
            FROM tenants t JOIN tenant_members m ON m.tenant_id = t.id
            WHERE t.id = ${tenantId} AND m.user_id = ${userId}`).pipe(Effect.map(first)),
        listForUser: (userId, page) =>
          membershipRows(sql`
            SELECT t.id, t.name, t.created_at, m.role, m.status
            FROM tenant_members m JOIN tenants t ON t.id = m.tenant_id
            WHERE m.user_id = ${userId} ${page?.after === undefined ? sql`` : sql`AND t.id > ${page.after}`}
            ORDER BY t.id ${page === undefined ? sql`` : sql`LIMIT ${page.limit}`}`),
        members: (tenantId, limit, afterUserId) =>
          memberRows(sql`
            ${memberSelect(tenantId)} ${afterUserId === undefined ? sql`` : sql`AND m.user_id > ${afterUserId}`}
            ORDER BY m.user_id LIMIT ${limit}`),
        member: (tenantId, userId) => memberRows(sql`${memberSelect(tenantId)} AND m.user_id = ${userId}`).pipe(Effect.map(first)),
        memberRole: (tenantId, userId) =>
          decodeRows(RoleRow)(sql`SELECT role, status FROM tenant_members WHERE tenant_id = ${tenantId} AND user_id = ${userId}`).pipe(Effect.map(first)),
        countOtherActiveAdmins: (tenantId, exceptUserId) =>
          decodeRows(CountRow)(sql`
            SELECT count(*)::int AS n FROM tenant_members
            WHERE tenant_id = ${tenantId} AND role = 'admin' AND status = 'active' AND user_id <> ${exceptUserId}`).pipe(Effect.map((rows) => rows[0]!.n)),
        setMember: (tenantId, userId, role, status) =>
          sql`UPDATE tenant_members SET role = ${role}, status = ${status} WHERE tenant_id = ${tenantId} AND user_id = ${userId}`.pipe(
            Effect.asVoid,
            Effect.orDie
          ),
        insertMember: (member) =>
          sql`
            INSERT INTO tenant_members (tenant_id, user_id, auth_identity_id, role, invited_by_user_id)
            VALUES (${member.tenantId}, ${member.userId}, ${member.identityId}, ${member.role}, ${member.invitedBy ?? null})
            ON CONFLICT DO NOTHING RETURNING user_id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
        hasMemberEmail: (tenantId, email) =>
          sql`
            SELECT 1 FROM tenant_members m JOIN users u ON u.id = m.user_id
            WHERE m.tenant_id = ${tenantId} AND lower(u.email) = ${normalizeEmail(email)}`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
        pendingInvitationEmails: (tenantId) =>
          decodeRows(EmailRow)(sql`
            SELECT email FROM invitations WHERE tenant_id = ${tenantId} AND status = 'pending' AND expires_at > now()`).pipe(
            Effect.map((rows) => rows.map((row) => row.email))
          ),
        insertInvitation: (invitation) =>
          invitationRows(sql`
            INSERT INTO invitations (id, tenant_id, email, role, token_hash, invited_by, expires_at)
            VALUES (${makeId("inv")}, ${invitation.tenantId}, ${invitation.email}, ${invitation.role}, ${hashToken(invitation.token)}, ${invitation.invitedBy},
              now() + ${`${invitation.ttlHours} hours`}::interval)
            RETURNING ${invitationSelect}`).pipe(Effect.map((rows) => rows[0]!)),
        retokenInvitation: (tenantId, invitationId, token) =>
          invitationRows(sql`
            UPDATE invitations SET token_hash = ${hashToken(token)}
            WHERE id = ${invitationId} AND tenant_id = ${tenantId} AND status = 'pending'
            RETURNING ${invitationSelect}`).pipe(Effect.map(first)),
        invitations: (tenantId, limit, beforeId) =>
          invitationRows(sql`
            SELECT ${invitationSelect} FROM invitations
            WHERE tenant_id = ${tenantId} ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`),
        invitation: (tenantId, invitationId) =>
          invitationRows(sql`SELECT ${invitationSelect} FROM invitations WHERE tenant_id = ${tenantId} AND id = ${invitationId}`).pipe(Effect.map(first)),
        revokeInvitation: (tenantId, invitationId) =>
          invitationRows(sql`
            UPDATE invitations SET status = 'revoked', revoked_at = now()
            WHERE tenant_id = ${tenantId} AND id = ${invitationId} AND status = 'pending' AND expires_at > now()
            RETURNING ${invitationSelect}`).pipe(Effect.map(first)),
        invitationByToken: (token) =>
          invitationRows(sql`SELECT ${invitationSelect} FROM invitations WHERE token_hash = ${hashToken(token)}`).pipe(Effect.map(first)),
        lockInvitationByToken: (token) =>
          invitationRows(sql`SELECT ${invitationSelect} FROM invitations WHERE token_hash = ${hashToken(token)} FOR UPDATE`).pipe(Effect.map(first)),
        markAccepted: (invitationId, userId) =>
          sql`UPDATE invitations SET status = 'accepted', accepted_at = now(), accepted_by_user_id = ${userId} WHERE id = ${invitationId}`.pipe(
            Effect.asVoid,
            Effect.orDie
          ),
        projects: (tenantId, limit, beforeId) =>
          projectRows(sql`
            SELECT id, name, tenant_id, created_at FROM projects
            WHERE tenant_id = ${tenantId} ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`),
        project: (tenantId, projectId) =>
          projectRows(sql`SELECT id, name, tenant_id, created_at FROM projects WHERE id = ${projectId} AND tenant_id = ${tenantId}`).pipe(Effect.map(first)),
        insertProject: (tenantId, name) =>
          projectRows(sql`
            INSERT INTO projects (id, name, tenant_id) VALUES (${makeId("proj")}, ${name}, ${tenantId})
            RETURNING id, name, tenant_id, created_at`).pipe(Effect.map((rows) => rows[0]!))
      }))
    })
  )
}
