/**
 * Delegation in PostgreSQL: tenant access keys (the secret sealed by the service's key), the
 * nonces of signed requests, and delegation grants (code and token found by their SHA-256; neither
 * is stored). Rows are decoded through Schema; the rules (who may decide, what a reused code does,
 * the caps) are the service's (src/delegation/delegations.ts), which runs the statements that must
 * commit together in one `transaction`.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { hashToken } from "../accounts/session-tokens.ts"
import { makeId } from "../domain/ids.ts"
import { ProjectId } from "../domain/run.ts"
import { AccessKeyId, AuditId, DelegationGrantId, TenantId, UserId } from "../domain/id-schemas.ts"
import { recordCreate } from "../store/keyed-create.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { decodeRows } from "../domain/rows.ts"


const Strings = Schema.Array(Schema.String)

export const AccessKeyRow = Schema.Struct({
  id: AccessKeyId,
  tenant_id: TenantId,
  name: Schema.NullOr(Schema.String),
  redirect_uris: Strings,
  created_by_user_id: Schema.NullOr(UserId),
  created_at: Schema.Date,
  revoked_at: Schema.NullOr(Schema.Date),
  last_used_at: Schema.NullOr(Schema.Date)
})
export type AccessKeyRow = typeof AccessKeyRow.Type

/** An access key's secret as stored: sealed (AES-256-GCM) under the service key `secret_key_id`. */
const SealedSecret = { secret_sealed: Schema.Uint8Array, secret_key_id: Schema.String }
const AccessKeyWithSecret = Schema.Struct({ ...AccessKeyRow.fields, ...SealedSecret })
const SigningKeyRow = Schema.Struct({ tenant_id: TenantId, redirect_uris: Strings, ...SealedSecret })
export type SigningKeyRow = typeof SigningKeyRow.Type

export const GrantStatus = Schema.Literals(["pending", "approved", "denied", "active", "revoked"])
export type GrantStatus = typeof GrantStatus.Type

export const GrantRow = Schema.Struct({
  id: DelegationGrantId,
  access_key_id: AccessKeyId,
  tenant_id: TenantId,
  agent: Schema.String,
  scopes: Strings,
  redirect_uri: Schema.String,
  state: Schema.String,
  external_user_id: Schema.String,
  expires_in: Schema.Number,
  requested_project_id: Schema.NullOr(ProjectId),
  project_id: Schema.NullOr(ProjectId),
  user_id: Schema.NullOr(UserId),
  status: GrantStatus,
  audit_id: AuditId,
  consent_expires_at: Schema.Date,
  token_expires_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  decided_at: Schema.NullOr(Schema.Date),
  completed_at: Schema.NullOr(Schema.Date),
  revoked_at: Schema.NullOr(Schema.Date)
})
export type GrantRow = typeof GrantRow.Type
const GrantWithCode = Schema.Struct({ ...GrantRow.fields, code_hash: Schema.NullOr(Schema.String), code_expired: Schema.NullOr(Schema.Boolean) })
export type GrantWithCode = typeof GrantWithCode.Type

/** A delegation token's grant as a request authenticates with it. */
const TokenGrantRow = Schema.Struct({
  id: DelegationGrantId,
  audit_id: AuditId,
  user_id: UserId,
  project_id: ProjectId,
  scopes: Strings,
  status: GrantStatus,
  expired: Schema.Boolean,
  member: Schema.Boolean
})
export type TokenGrantRow = typeof TokenGrantRow.Type

const accessKeyRows = decodeRows(AccessKeyRow)
const grantRows = decodeRows(GrantRow)
const CountRow = Schema.Struct({ n: Schema.Number })
const NameRow = Schema.Struct({ name: Schema.String })
const ProjectRow = Schema.Struct({ id: ProjectId, name: Schema.String })

const grantColumns = `id, access_key_id, tenant_id, agent, scopes, redirect_uri, state, external_user_id, expires_in,
  requested_project_id, project_id, user_id, status, audit_id, consent_expires_at, token_expires_at, created_at,
  decided_at, completed_at, revoked_at`

const accessKeyColumns = "id, tenant_id, name, redirect_uris, created_by_user_id, created_at, revoked_at, last_used_at"

export interface NewGrant {
  readonly accessKeyId: AccessKeyId
  readonly tenantId: TenantId
  readonly agent: string
  readonly scopes: ReadonlyArray<string>
  readonly redirectUri: string
  readonly state: string
  readonly externalUserId: string
  readonly expiresIn: number
  readonly requestedProjectId: ProjectId | null
  readonly consentTtlSeconds: number
}

export class DelegationStore extends Context.Service<DelegationStore, {
  /** Runs `effect` in one transaction (the statements of other stores in it join it). */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Records `id` on the request's Idempotency-Key claim, inside the transaction that creates it (src/store/keyed-create.ts). */
  readonly recordCreate: (id: string) => Effect.Effect<void>
  /** Locks the tenant's row: its access key creates count one after another. */
  readonly lockTenant: (tenantId: TenantId) => Effect.Effect<void>
  readonly countLiveAccessKeys: (tenantId: TenantId) => Effect.Effect<number>
  readonly insertAccessKey: (key: {
    readonly id: AccessKeyId
    readonly tenantId: TenantId
    readonly name: string | null
    readonly sealed: { readonly bytes: Uint8Array; readonly keyId: string }
    readonly redirectUris: ReadonlyArray<string>
    readonly createdByUserId: UserId
  }) => Effect.Effect<AccessKeyRow>
  /** A live access key of the tenant with its sealed secret. */
  readonly liveAccessKeyWithSecret: (tenantId: TenantId, accessKeyId: AccessKeyId) => Effect.Effect<(AccessKeyRow & { readonly secret_sealed: Uint8Array; readonly secret_key_id: string }) | undefined>
  readonly accessKeys: (tenantId: TenantId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<AccessKeyRow>>
  /** Revokes (revoking twice keeps the first time); undefined when the tenant has no such key. */
  readonly revokeAccessKey: (tenantId: TenantId, accessKeyId: AccessKeyId) => Effect.Effect<AccessKeyRow | undefined>
  /** What verifying a signature with a live access key needs. */
  readonly signingKey: (accessKeyId: AccessKeyId) => Effect.Effect<SigningKeyRow | undefined>
  /**
   * Spends a signed request's nonce (kept until `expiresAtEpochSeconds`) and, in the same statement
   * and only when it was new, marks the key used (at most once a minute). False when it was spent.
   */
  readonly spendNonce: (accessKeyId: AccessKeyId, nonce: string, expiresAtEpochSeconds: number) => Effect.Effect<boolean>
  /** Deletes expired nonces. */
  readonly sweepNonces: Effect.Effect<void>
  readonly projectInTenant: (projectId: ProjectId, tenantId: TenantId) => Effect.Effect<boolean>
  readonly insertGrant: (grant: NewGrant) => Effect.Effect<GrantRow>
  readonly grant: (grantId: DelegationGrantId) => Effect.Effect<GrantRow | undefined>
  /** The grant with its row locked. */
  readonly lockGrant: (grantId: DelegationGrantId) => Effect.Effect<GrantRow | undefined>
  /** The grant with its row locked, its code's hash and whether the code expired. */
  readonly lockGrantWithCode: (grantId: DelegationGrantId) => Effect.Effect<GrantWithCode | undefined>
  readonly isActiveMember: (tenantId: TenantId, userId: UserId) => Effect.Effect<boolean>
  readonly isActiveAdmin: (tenantId: TenantId, userId: UserId) => Effect.Effect<boolean>
  readonly tenantName: (tenantId: TenantId) => Effect.Effect<string | undefined>
  /** The tenant's projects a consent may pick from (newest 100), or only `projectId` when one was requested. */
  readonly consentProjects: (tenantId: TenantId, projectId: ProjectId | null) => Effect.Effect<ReadonlyArray<{ readonly id: ProjectId; readonly name: string }>>
  readonly deny: (grantId: DelegationGrantId, userId: UserId) => Effect.Effect<void>
  /** Approves with a one-time code valid `codeTtlSeconds`. */
  readonly approve: (grantId: DelegationGrantId, userId: UserId, projectId: ProjectId, code: string, codeTtlSeconds: number) => Effect.Effect<void>
  /** Turns an approved grant active with the token, valid the grant's `expires_in`. */
  readonly activate: (grantId: DelegationGrantId, token: string, expiresIn: number) => Effect.Effect<GrantRow>
  /** Revokes the grant's token (a code presented twice). */
  readonly revokeToken: (grantId: DelegationGrantId) => Effect.Effect<void>
  readonly grantOfToken: (token: string) => Effect.Effect<TokenGrantRow | undefined>
  /** The grants the user approved or whose tenant the user administers, newest first. */
  readonly grantsOf: (userId: UserId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<GrantRow>>
  /** Revokes a grant that is pending, approved or active; undefined otherwise. */
  readonly revokeGrant: (grantId: DelegationGrantId, userId: UserId) => Effect.Effect<GrantRow | undefined>
}>()("wa/delegation/DelegationStore") {
  static readonly layer = Layer.effect(
    DelegationStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const grantSelect = sql.literal(grantColumns)
      const accessKeySelect = sql.literal(accessKeyColumns)
      const first = <A>(rows: ReadonlyArray<A>) => rows[0]

      return DelegationStore.of(withMethodSpans("DelegationStore", {
        transaction: (effect) => sql.withTransaction(effect).pipe(Effect.catchTag("SqlError", Effect.die)),
        recordCreate: (id) => recordCreate(sql, id),
        lockTenant: (tenantId) => sql`SELECT id FROM tenants WHERE id = ${tenantId} FOR UPDATE`.pipe(Effect.asVoid, Effect.orDie),
        countLiveAccessKeys: (tenantId) =>
          decodeRows(CountRow)(sql`SELECT count(*)::int AS n FROM access_keys WHERE tenant_id = ${tenantId} AND revoked_at IS NULL`).pipe(
            Effect.map((rows) => rows[0]!.n)
          ),
        insertAccessKey: (key) =>
          accessKeyRows(sql`
            INSERT INTO access_keys (id, tenant_id, name, secret_sealed, secret_key_id, redirect_uris, created_by_user_id)
            VALUES (${key.id}, ${key.tenantId}, ${key.name}, ${key.sealed.bytes}, ${key.sealed.keyId}, ${JSON.stringify(key.redirectUris)}::jsonb, ${key.createdByUserId})
            RETURNING ${accessKeySelect}`).pipe(Effect.map((rows) => rows[0]!)),
        liveAccessKeyWithSecret: (tenantId, accessKeyId) =>
          decodeRows(AccessKeyWithSecret)(sql`
            SELECT ${accessKeySelect}, secret_sealed, secret_key_id FROM access_keys
            WHERE id = ${accessKeyId} AND tenant_id = ${tenantId} AND revoked_at IS NULL`).pipe(Effect.map(first)),
        accessKeys: (tenantId, limit, beforeId) =>
          accessKeyRows(sql`
            SELECT ${accessKeySelect} FROM access_keys
            WHERE tenant_id = ${tenantId} ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`),
        revokeAccessKey: (tenantId, accessKeyId) =>
          accessKeyRows(sql`
            UPDATE access_keys SET revoked_at = coalesce(revoked_at, now())
            WHERE tenant_id = ${tenantId} AND id = ${accessKeyId}
            RETURNING ${accessKeySelect}`).pipe(Effect.map(first)),
        signingKey: (accessKeyId) =>
          decodeRows(SigningKeyRow)(sql`
            SELECT tenant_id, secret_sealed, secret_key_id, redirect_uris FROM access_keys WHERE id = ${accessKeyId} AND revoked_at IS NULL`).pipe(
            Effect.map(first)
          ),
        spendNonce: (accessKeyId, nonce, expiresAtEpochSeconds) =>
          sql`
            WITH spent AS (
              INSERT INTO signed_request_nonces (access_key_id, nonce, expires_at)
              VALUES (${accessKeyId}, ${nonce}, to_timestamp(${expiresAtEpochSeconds}))
              ON CONFLICT DO NOTHING RETURNING access_key_id
            ), used AS (
              UPDATE access_keys SET last_used_at = now()
              WHERE id IN (SELECT access_key_id FROM spent) AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
            )
            SELECT 1 FROM spent`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
        sweepNonces: sql`DELETE FROM signed_request_nonces WHERE expires_at < now()`.pipe(Effect.asVoid, Effect.orDie),
        projectInTenant: (projectId, tenantId) =>
          sql`SELECT 1 FROM projects WHERE id = ${projectId} AND tenant_id = ${tenantId}`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
        insertGrant: (grant) =>
          grantRows(sql`
            INSERT INTO delegation_grants (id, access_key_id, tenant_id, agent, scopes, redirect_uri, state, external_user_id, expires_in,
              requested_project_id, status, audit_id, consent_expires_at)
            VALUES (${makeId("dgr")}, ${grant.accessKeyId}, ${grant.tenantId}, ${grant.agent}, ${JSON.stringify(grant.scopes)}::jsonb,
              ${grant.redirectUri}, ${grant.state}, ${grant.externalUserId}, ${grant.expiresIn}, ${grant.requestedProjectId}, 'pending', ${makeId("aud")},
              now() + ${`${grant.consentTtlSeconds} seconds`}::interval)
            RETURNING ${grantSelect}`).pipe(Effect.map((rows) => rows[0]!)),
        grant: (grantId) => grantRows(sql`SELECT ${grantSelect} FROM delegation_grants WHERE id = ${grantId}`).pipe(Effect.map(first)),
        lockGrant: (grantId) => grantRows(sql`SELECT ${grantSelect} FROM delegation_grants WHERE id = ${grantId} FOR UPDATE`).pipe(Effect.map(first)),
        lockGrantWithCode: (grantId) =>
          decodeRows(GrantWithCode)(sql`
            SELECT ${grantSelect}, code_hash, (code_expires_at <= now()) AS code_expired
            FROM delegation_grants WHERE id = ${grantId} FOR UPDATE`).pipe(Effect.map(first)),
        isActiveMember: (tenantId, userId) =>
          sql`SELECT 1 FROM tenant_members WHERE tenant_id = ${tenantId} AND user_id = ${userId} AND status = 'active'`.pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          ),
        isActiveAdmin: (tenantId, userId) =>
          sql`
            SELECT 1 FROM tenant_members WHERE tenant_id = ${tenantId} AND user_id = ${userId} AND role = 'admin' AND status = 'active'`.pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          ),
        tenantName: (tenantId) => decodeRows(NameRow)(sql`SELECT name FROM tenants WHERE id = ${tenantId}`).pipe(Effect.map((rows) => rows[0]?.name)),
        consentProjects: (tenantId, projectId) =>
          decodeRows(ProjectRow)(sql`
            SELECT id, name FROM projects WHERE tenant_id = ${tenantId}
            ${projectId === null ? sql`` : sql`AND id = ${projectId}`}
            ORDER BY id DESC LIMIT 100`),
        deny: (grantId, userId) =>
          sql`UPDATE delegation_grants SET status = 'denied', user_id = ${userId}, decided_at = now() WHERE id = ${grantId}`.pipe(Effect.asVoid, Effect.orDie),
        approve: (grantId, userId, projectId, code, codeTtlSeconds) =>
          sql`
            UPDATE delegation_grants SET status = 'approved', user_id = ${userId}, project_id = ${projectId}, decided_at = now(),
              code_hash = ${hashToken(code)}, code_expires_at = now() + ${`${codeTtlSeconds} seconds`}::interval
            WHERE id = ${grantId}`.pipe(Effect.asVoid, Effect.orDie),
        activate: (grantId, token, expiresIn) =>
          grantRows(sql`
            UPDATE delegation_grants SET status = 'active', token_hash = ${hashToken(token)}, completed_at = now(),
              token_expires_at = now() + ${`${expiresIn} seconds`}::interval
            WHERE id = ${grantId} RETURNING ${grantSelect}`).pipe(Effect.map((rows) => rows[0]!)),
        revokeToken: (grantId) =>
          sql`UPDATE delegation_grants SET status = 'revoked', revoked_at = now() WHERE id = ${grantId}`.pipe(Effect.asVoid, Effect.orDie),
        grantOfToken: (token) =>
          decodeRows(TokenGrantRow)(sql`
            SELECT g.id, g.audit_id, g.user_id, g.project_id, g.scopes, g.status, (g.token_expires_at <= now()) AS expired,
              EXISTS (SELECT 1 FROM tenant_members m JOIN projects p ON p.tenant_id = m.tenant_id
                WHERE p.id = g.project_id AND m.user_id = g.user_id AND m.status = 'active') AS member
            FROM delegation_grants g WHERE g.token_hash = ${hashToken(token)}`).pipe(Effect.map(first)),
        grantsOf: (userId, limit, beforeId) =>
          grantRows(sql`
            SELECT ${grantSelect} FROM delegation_grants g
            WHERE (g.user_id = ${userId}
              OR g.tenant_id IN (SELECT tenant_id FROM tenant_members WHERE user_id = ${userId} AND role = 'admin' AND status = 'active'))
              ${beforeId === undefined ? sql`` : sql`AND g.id < ${beforeId}`}
            ORDER BY g.id DESC LIMIT ${limit}`),
        revokeGrant: (grantId, userId) =>
          grantRows(sql`
            UPDATE delegation_grants SET status = 'revoked', revoked_at = now(), revoked_by_user_id = ${userId}
            WHERE id = ${grantId} AND status IN ('pending', 'approved', 'active')
            RETURNING ${grantSelect}`).pipe(Effect.map(first))
      }))
    })
  )
}
