/**
 * Delegation (AK/SK): tenant access keys, signed-request verification, and delegation grants from
 * the request through the consent of a console user to the exchange for a token, its use as a
 * bearer and its revocation. Everything is in PostgreSQL, so a revocation, a used code or a seen
 * nonce holds on every node at the next request.
 *
 * - Access keys belong to a tenant; its admins create, list and revoke them. The secret key is
 *   shown once and stored sealed (AES-256-GCM with the service's secret key, the access key id as
 *   additional data), because verifying an HMAC needs the secret itself.
 * - A grant is `pending` until a signed-in active member of the access key's tenant approves
 *   (`approved`, with a one-time code valid CODE_TTL) or denies (`denied`) it on the consent page;
 *   the exchange of the code turns it `active` with a token; the user or a tenant admin can make it
 *   `revoked`. A pending grant expires after CONSENT_TTL. Reusing a code revokes the grant's token.
 */
import type { SignedCaller } from "../domain/delegation.ts"
import type { ProjectId } from "../domain/run.ts"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AccountResourceNotFound, RoleForbidden } from "../accounts/errors.ts"
import { hashToken } from "../accounts/session-tokens.ts"
import { Tenants } from "../accounts/tenants.ts"
import { makeId } from "../domain/ids.ts"
import { earlierCreate, recordCreate } from "../store/keyed-create.ts"
import { StateCipher } from "../security/state-cipher.ts"
import { DelegationConflict, DelegationForbidden, DelegationInvalid, DelegationNotFound, SignatureRejected } from "./errors.ts"
import {
  generateAccessKeySecret,
  generateCode,
  generateDelegationToken,
  isFresh,
  isWellFormedDelegationToken,
  parseSignedHeader,
  SIGNATURE_WINDOW_SECONDS,
  canonicalString,
  signatureMatches
} from "./signing.ts"

export const MAX_ACCESS_KEYS_PER_TENANT = 10
export const CONSENT_TTL_SECONDS = 600
export const CODE_TTL_SECONDS = 600

export interface AccessKeyRow {
  readonly id: string
  readonly tenant_id: string
  readonly name: string | null
  readonly redirect_uris: ReadonlyArray<string>
  readonly created_by_user_id: string | null
  readonly created_at: Date
  readonly revoked_at: Date | null
  readonly last_used_at: Date | null
}

export type GrantStatus = "pending" | "approved" | "denied" | "active" | "revoked"

export interface GrantRow {
  readonly id: string
  readonly access_key_id: string
  readonly tenant_id: string
  readonly agent: string
  readonly scopes: ReadonlyArray<string>
  readonly redirect_uri: string
  readonly state: string
  readonly external_user_id: string
  readonly expires_in: number
  readonly requested_project_id: string | null
  readonly project_id: string | null
  readonly user_id: string | null
  readonly status: GrantStatus
  readonly audit_id: string
  readonly consent_expires_at: Date
  readonly token_expires_at: Date | null
  readonly created_at: Date
  readonly decided_at: Date | null
  readonly completed_at: Date | null
  readonly revoked_at: Date | null
}

export interface DelegationRequest {
  readonly agent: string
  readonly scopes: ReadonlyArray<string>
  readonly redirectUri: string
  readonly state: string
  readonly userId: string
  readonly expiresIn: number
  readonly projectId: string | undefined
}

export type { SignedCaller } from "../domain/delegation.ts"

/** What a delegation token acts as on a request. */
export interface DelegatedIdentity {
  readonly grantId: string
  readonly auditId: string
  readonly userId: string
  readonly projectId: ProjectId
  readonly scopes: ReadonlyArray<string>
}

export type TokenFailure = "malformed" | "unknown" | "expired" | "revoked" | "membership"

export interface ConsentView {
  readonly grant: GrantRow
  readonly tenantName: string
  readonly projects: ReadonlyArray<{ readonly id: string; readonly name: string }>
}

const grantColumns = `id, access_key_id, tenant_id, agent, scopes, redirect_uri, state, external_user_id, expires_in,
  requested_project_id, project_id, user_id, status, audit_id, consent_expires_at, token_expires_at, created_at,
  decided_at, completed_at, revoked_at`

const accessKeyColumns = "id, tenant_id, name, redirect_uris, created_by_user_id, created_at, revoked_at, last_used_at"

const loopbackHosts = new Set(["localhost", "127.0.0.1", "[::1]"])

/**
 * Why a redirectUri is refused, or undefined: absolute https (http only for a loopback host), no
 * fragment, no credentials, and equal to one of the access key's registered URIs when it has any.
 */
export const redirectUriProblem = (uri: string, registered: ReadonlyArray<string>): string | undefined => {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return "redirectUri must be an absolute URL"
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopbackHosts.has(url.hostname))) {
    return "redirectUri must be https (http only for localhost, 127.0.0.1 or [::1])"
  }
  if (url.hash !== "" || uri.includes("#")) return "redirectUri must not have a fragment"
  if (url.username !== "" || url.password !== "") return "redirectUri must not carry credentials"
  if (registered.length > 0 && !registered.includes(uri)) return "redirectUri is not one of the access key's registered redirect_uris"
  return undefined
}

/** The redirect of a decided consent: redirectUri with the result appended to its query. */
export const consentRedirect = (redirectUri: string, params: Record<string, string>): string => {
  const url = new URL(redirectUri)
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
  return url.toString()
}

export class Delegations extends Context.Service<Delegations, {
  readonly createAccessKey: (tenantId: string, userId: string, name: string | null, redirectUris: ReadonlyArray<string>) => Effect.Effect<{ readonly row: AccessKeyRow; readonly secret: string }, AccountResourceNotFound | RoleForbidden | DelegationConflict | DelegationInvalid>
  readonly listAccessKeys: (tenantId: string, userId: string, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<AccessKeyRow>, AccountResourceNotFound | RoleForbidden>
  readonly revokeAccessKey: (tenantId: string, userId: string, accessKeyId: string) => Effect.Effect<AccessKeyRow, AccountResourceNotFound | RoleForbidden | DelegationNotFound>
  /** Verifies a signed request; records its nonce. */
  readonly verifySigned: (input: { readonly authorization: string; readonly method: string; readonly pathWithQuery: string; readonly bodySha256: string }) => Effect.Effect<SignedCaller, SignatureRejected>
  readonly request: (caller: SignedCaller, input: DelegationRequest) => Effect.Effect<GrantRow, DelegationInvalid>
  /** The grant as the consent page shows it to a signed-in user (who must be an active member of its tenant). */
  readonly consentView: (grantId: string, userId: string) => Effect.Effect<ConsentView, DelegationNotFound | DelegationConflict | DelegationForbidden>
  /** Approves or denies; the URL to send the browser to. */
  readonly decide: (grantId: string, userId: string, decision: "approve" | "deny", projectId: string | undefined) => Effect.Effect<string, DelegationNotFound | DelegationConflict | DelegationForbidden | DelegationInvalid>
  readonly complete: (caller: SignedCaller, grantId: string, code: string, state: string) => Effect.Effect<{ readonly grant: GrantRow; readonly token: string }, DelegationNotFound | DelegationConflict | DelegationInvalid>
  readonly authenticateToken: (token: string) => Effect.Effect<DelegatedIdentity | TokenFailure>
  readonly listGrants: (userId: string, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<GrantRow>>
  readonly revokeGrant: (grantId: string, userId: string) => Effect.Effect<GrantRow, DelegationNotFound | DelegationForbidden | DelegationConflict>
}>()("wa/delegation/Delegations") {
  static readonly layer = Layer.effect(
    Delegations,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const tenants = yield* Tenants
      const cipher = yield* StateCipher

      const createAccessKey = Effect.fn("Delegations.createAccessKey")(function*(tenantId: string, userId: string, name: string | null, redirectUris: ReadonlyArray<string>) {
        yield* tenants.require(tenantId, userId, "admin")
        for (const [index, uri] of redirectUris.entries()) {
          const problem = redirectUriProblem(uri, [])
          if (problem !== undefined) return yield* new DelegationInvalid({ code: "validation_error", field: `redirect_uris.${index}`, detail: problem.replace("redirectUri", "each redirect_uris entry") })
        }
        // The retry of a keyed create whose first attempt committed before its process died gets that
        // access key, with its secret (kept sealed, so it can be shown once, now).
        const earlier = yield* earlierCreate((earlierId) =>
          Effect.gen(function*() {
            const [row] = yield* sql<AccessKeyRow & { secret_sealed: Uint8Array; secret_key_id: string }>`
              SELECT ${sql.literal(accessKeyColumns)}, secret_sealed, secret_key_id FROM access_keys
              WHERE id = ${earlierId} AND tenant_id = ${tenantId} AND revoked_at IS NULL`.pipe(Effect.orDie)
            if (row === undefined) return undefined
            const { secret_sealed, secret_key_id, ...view } = row
            const opened = yield* cipher.open({ bytes: Buffer.from(secret_sealed), keyId: secret_key_id }, earlierId).pipe(
              Effect.catchTag("StateUnreadable", (e) => Effect.die(new Error(`access key ${earlierId}: ${e.reason}`)))
            )
            return { row: view as AccessKeyRow, secret: opened.toString("utf8") }
          }))
        if (earlier !== undefined) return earlier
        const id = makeId("wak")
        const secret = generateAccessKeySecret()
        const sealed = cipher.seal(Buffer.from(secret, "utf8"), id)
        return yield* sql.withTransaction(Effect.gen(function*() {
          // The tenant row is the lock: concurrent creations count one after another.
          yield* sql`SELECT id FROM tenants WHERE id = ${tenantId} FOR UPDATE`
          const [{ n }] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM access_keys WHERE tenant_id = ${tenantId} AND revoked_at IS NULL`
          if (n >= MAX_ACCESS_KEYS_PER_TENANT) {
            return yield* new DelegationConflict({ code: "limit_exceeded", detail: `a tenant holds at most ${MAX_ACCESS_KEYS_PER_TENANT} live access keys; revoke one first` })
          }
          const rows = yield* sql<AccessKeyRow>`
            INSERT INTO access_keys (id, tenant_id, name, secret_sealed, secret_key_id, redirect_uris, created_by_user_id)
            VALUES (${id}, ${tenantId}, ${name}, ${sealed.bytes}, ${sealed.keyId}, ${JSON.stringify(redirectUris)}::jsonb, ${userId})
            RETURNING ${sql.literal(accessKeyColumns)}`
          // Under an Idempotency-Key the claim records the access key in this transaction (src/store/keyed-create.ts).
          yield* recordCreate(sql, id)
          return { row: rows[0]!, secret }
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      })

      const listAccessKeys = (tenantId: string, userId: string, limit: number, beforeId: string | undefined) =>
        Effect.gen(function*() {
          yield* tenants.require(tenantId, userId, "admin")
          return yield* sql<AccessKeyRow>`
            SELECT ${sql.literal(accessKeyColumns)} FROM access_keys
            WHERE tenant_id = ${tenantId} ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`.pipe(Effect.orDie)
        })

      const revokeAccessKey = (tenantId: string, userId: string, accessKeyId: string) =>
        Effect.gen(function*() {
          yield* tenants.require(tenantId, userId, "admin")
          const rows = yield* sql<AccessKeyRow>`
            UPDATE access_keys SET revoked_at = coalesce(revoked_at, now())
            WHERE tenant_id = ${tenantId} AND id = ${accessKeyId}
            RETURNING ${sql.literal(accessKeyColumns)}`.pipe(Effect.orDie)
          if (rows[0] === undefined) return yield* new DelegationNotFound({ what: "access_key", id: accessKeyId })
          return rows[0]
        })

      const rejected = (code: SignatureRejected["code"], detail: string) => new SignatureRejected({ code, detail })

      const verifySigned = Effect.fn("Delegations.verifySigned")(function*(input: { readonly authorization: string; readonly method: string; readonly pathWithQuery: string; readonly bodySha256: string }) {
        const parsed = parseSignedHeader(input.authorization)
        if (typeof parsed === "string") return yield* rejected("signature_malformed", parsed)
        if (!isFresh(parsed.timestamp, Date.now())) {
          return yield* rejected("signature_expired", `Timestamp is more than ${SIGNATURE_WINDOW_SECONDS} s away from the server's clock (now ${Math.floor(Date.now() / 1000)}); sign with the current time`)
        }
        const rows = yield* sql<{ tenant_id: string; secret_sealed: Uint8Array; secret_key_id: string; redirect_uris: ReadonlyArray<string> }>`
          SELECT tenant_id, secret_sealed, secret_key_id, redirect_uris FROM access_keys WHERE id = ${parsed.credential} AND revoked_at IS NULL`.pipe(Effect.orDie)
        const row = rows[0]
        if (row === undefined) return yield* rejected("access_key_unknown", "the access key is not known or was revoked")
        const secret = yield* cipher.open({ bytes: Buffer.from(row.secret_sealed), keyId: row.secret_key_id }, parsed.credential).pipe(
          Effect.catchTag("StateUnreadable", (e) => Effect.die(new Error(`access key ${parsed.credential}: ${e.reason}`)))
        )
        const canonical = canonicalString({
          accessKeyId: parsed.credential,
          timestamp: parsed.timestamp,
          nonce: parsed.nonce,
          method: input.method,
          pathWithQuery: input.pathWithQuery,
          bodySha256: input.bodySha256
        })
        if (!signatureMatches(secret.toString("utf8"), canonical, parsed.signature)) {
          return yield* rejected("signature_invalid", "the signature does not match the request (check the canonical string: method, path with query, timestamp, nonce, body SHA-256) and the secret key")
        }
        // Only a correctly signed request spends its nonce; the row outlives the window on both sides.
        // The key's last use (at most once a minute) is written by the same statement, which
        // updates it only when the nonce was new.
        const inserted = yield* sql`
          WITH spent AS (
            INSERT INTO signed_request_nonces (access_key_id, nonce, expires_at)
            VALUES (${parsed.credential}, ${parsed.nonce}, to_timestamp(${parsed.timestamp + SIGNATURE_WINDOW_SECONDS + 60}))
            ON CONFLICT DO NOTHING RETURNING access_key_id
          ), used AS (
            UPDATE access_keys SET last_used_at = now()
            WHERE id IN (SELECT access_key_id FROM spent) AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
          )
          SELECT 1 FROM spent`.pipe(Effect.orDie)
        if (inserted.length === 0) return yield* rejected("signature_replayed", "this Nonce was already used with this access key; sign every request with a new nonce")
        // Expired nonces go now and then (about one request in 50), in the background: this request
        // does not wait for the sweep.
        if (Math.random() < 0.02) yield* Effect.forkDetach(sql`DELETE FROM signed_request_nonces WHERE expires_at < now()`.pipe(Effect.ignore))
        return { accessKeyId: parsed.credential, tenantId: row.tenant_id, redirectUris: row.redirect_uris }
      })

      const request = Effect.fn("Delegations.request")(function*(caller: SignedCaller, input: DelegationRequest) {
        const problem = redirectUriProblem(input.redirectUri, caller.redirectUris)
        if (problem !== undefined) return yield* new DelegationInvalid({ code: "validation_error", field: "redirectUri", detail: problem })
        if (input.projectId !== undefined) {
          const project = yield* sql`SELECT 1 FROM projects WHERE id = ${input.projectId} AND tenant_id = ${caller.tenantId}`.pipe(Effect.orDie)
          if (project.length === 0) return yield* new DelegationInvalid({ code: "validation_error", field: "projectId", detail: "projectId must be a project of the access key's tenant" })
        }
        const rows = yield* sql<GrantRow>`
          INSERT INTO delegation_grants (id, access_key_id, tenant_id, agent, scopes, redirect_uri, state, external_user_id, expires_in,
            requested_project_id, status, audit_id, consent_expires_at)
          VALUES (${makeId("dgr")}, ${caller.accessKeyId}, ${caller.tenantId}, ${input.agent}, ${JSON.stringify([...new Set(input.scopes)])}::jsonb,
            ${input.redirectUri}, ${input.state}, ${input.userId}, ${input.expiresIn}, ${input.projectId ?? null}, 'pending', ${makeId("aud")},
            now() + ${`${CONSENT_TTL_SECONDS} seconds`}::interval)
          RETURNING ${sql.literal(grantColumns)}`.pipe(Effect.orDie)
        return rows[0]!
      })

      const grantById = (grantId: string) =>
        sql<GrantRow>`SELECT ${sql.literal(grantColumns)} FROM delegation_grants WHERE id = ${grantId}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie)

      const activeMember = (tenantId: string, userId: string) =>
        sql`SELECT 1 FROM tenant_members WHERE tenant_id = ${tenantId} AND user_id = ${userId} AND status = 'active'`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )

      const pendingProblem = (grant: GrantRow) =>
        grant.status !== "pending"
          ? new DelegationConflict({ code: "grant_decided", detail: `this delegation request is already ${grant.status}` })
          : grant.consent_expires_at.getTime() <= Date.now()
          ? new DelegationConflict({ code: "grant_expired", detail: "this delegation request expired; the application must start a new one" })
          : undefined

      const consentView = Effect.fn("Delegations.consentView")(function*(grantId: string, userId: string) {
        const grant = yield* grantById(grantId)
        if (grant === undefined) return yield* new DelegationNotFound({ what: "grant", id: grantId })
        if (!(yield* activeMember(grant.tenant_id, userId))) {
          return yield* new DelegationForbidden({ detail: "this application belongs to a tenant you are not an active member of; sign in with another account" })
        }
        const problem = pendingProblem(grant)
        if (problem !== undefined) return yield* problem
        const tenant = yield* sql<{ name: string }>`SELECT name FROM tenants WHERE id = ${grant.tenant_id}`.pipe(Effect.orDie)
        const projects = yield* sql<{ id: string; name: string }>`
          SELECT id, name FROM projects WHERE tenant_id = ${grant.tenant_id}
          ${grant.requested_project_id === null ? sql`` : sql`AND id = ${grant.requested_project_id}`}
          ORDER BY id DESC LIMIT 100`.pipe(Effect.orDie)
        return { grant, tenantName: tenant[0]?.name ?? grant.tenant_id, projects }
      })

      const decide = Effect.fn("Delegations.decide")(function*(grantId: string, userId: string, decision: "approve" | "deny", projectId: string | undefined) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<GrantRow>`SELECT ${sql.literal(grantColumns)} FROM delegation_grants WHERE id = ${grantId} FOR UPDATE`
          const grant = rows[0]
          if (grant === undefined) return yield* new DelegationNotFound({ what: "grant", id: grantId })
          if (!(yield* activeMember(grant.tenant_id, userId))) {
            return yield* new DelegationForbidden({ detail: "only an active member of the application's tenant can decide on this request" })
          }
          const problem = pendingProblem(grant)
          if (problem !== undefined) return yield* problem
          if (decision === "deny") {
            yield* sql`UPDATE delegation_grants SET status = 'denied', user_id = ${userId}, decided_at = now() WHERE id = ${grantId}`
            return consentRedirect(grant.redirect_uri, { error: "access_denied", grantId, state: grant.state })
          }
          const project = grant.requested_project_id ?? projectId
          if (project === undefined) return yield* new DelegationInvalid({ code: "validation_error", field: "project_id", detail: "choose the project the application may act on" })
          const inTenant = yield* sql`SELECT 1 FROM projects WHERE id = ${project} AND tenant_id = ${grant.tenant_id}`
          if (inTenant.length === 0) return yield* new DelegationInvalid({ code: "validation_error", field: "project_id", detail: "the project is not one of this tenant's" })
          const code = generateCode()
          yield* sql`
            UPDATE delegation_grants SET status = 'approved', user_id = ${userId}, project_id = ${project}, decided_at = now(),
              code_hash = ${hashToken(code)}, code_expires_at = now() + ${`${CODE_TTL_SECONDS} seconds`}::interval
            WHERE id = ${grantId}`
          return consentRedirect(grant.redirect_uri, { grantId, code, state: grant.state })
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      })

      const complete = Effect.fn("Delegations.complete")(function*(caller: SignedCaller, grantId: string, code: string, state: string) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<GrantRow & { code_hash: string | null; code_expired: boolean }>`
            SELECT ${sql.literal(grantColumns)}, code_hash, (code_expires_at <= now()) AS code_expired
            FROM delegation_grants WHERE id = ${grantId} FOR UPDATE`
          const grant = rows[0]
          // Another access key's grant is as unknown as a missing one (nothing about it is confirmed).
          if (grant === undefined || grant.access_key_id !== caller.accessKeyId) return yield* new DelegationNotFound({ what: "grant", id: grantId })
          if (grant.status === "pending") return yield* new DelegationConflict({ code: "consent_pending", detail: "the user has not approved this request yet" })
          if (grant.status === "denied") return yield* new DelegationConflict({ code: "access_denied", detail: "the user denied this request" })
          const codeMatches = grant.code_hash !== null && hashToken(code) === grant.code_hash
          if (grant.status === "active" || grant.status === "revoked") {
            if (codeMatches && grant.status === "active") {
              // A code presented twice may have been stolen: the token it gave is revoked too (committed,
              // so the refusal is returned after the transaction, not raised inside it).
              yield* sql`UPDATE delegation_grants SET status = 'revoked', revoked_at = now() WHERE id = ${grantId}`
            }
            return "code_used" as const
          }
          if (grant.state !== state) return yield* new DelegationInvalid({ code: "state_mismatch", field: "state", detail: "state does not match the delegation request's" })
          if (!codeMatches) return yield* new DelegationInvalid({ code: "invalid_code", field: "code", detail: "the code is not this grant's" })
          if (grant.code_expired) return yield* new DelegationConflict({ code: "code_expired", detail: `the code is valid ${CODE_TTL_SECONDS / 60} minutes after consent; start a new delegation` })
          const token = generateDelegationToken()
          const updated = yield* sql<GrantRow>`
            UPDATE delegation_grants SET status = 'active', token_hash = ${hashToken(token)}, completed_at = now(),
              token_expires_at = now() + ${`${grant.expires_in} seconds`}::interval
            WHERE id = ${grantId} RETURNING ${sql.literal(grantColumns)}`
          return { grant: updated[0]!, token }
        })).pipe(
          Effect.catchTag("SqlError", Effect.die),
          Effect.flatMap((result) =>
            result === "code_used"
              ? Effect.fail(new DelegationConflict({ code: "code_used", detail: "this code was already exchanged; the token it gave is revoked. Start a new delegation" }))
              : Effect.succeed(result)
          )
        )
      })

      const authenticateToken = (token: string): Effect.Effect<DelegatedIdentity | TokenFailure> => {
        if (!isWellFormedDelegationToken(token)) return Effect.succeed("malformed" as const)
        return sql<{ id: string; audit_id: string; user_id: string; project_id: string; scopes: ReadonlyArray<string>; status: GrantStatus; expired: boolean; member: boolean }>`
          SELECT g.id, g.audit_id, g.user_id, g.project_id, g.scopes, g.status, (g.token_expires_at <= now()) AS expired,
            EXISTS (SELECT 1 FROM tenant_members m JOIN projects p ON p.tenant_id = m.tenant_id
              WHERE p.id = g.project_id AND m.user_id = g.user_id AND m.status = 'active') AS member
          FROM delegation_grants g WHERE g.token_hash = ${hashToken(token)}`.pipe(
          Effect.map((rows): DelegatedIdentity | TokenFailure => {
            const row = rows[0]
            if (row === undefined) return "unknown"
            if (row.status === "revoked") return "revoked"
            if (row.expired) return "expired"
            if (!row.member) return "membership"
            return { grantId: row.id, auditId: row.audit_id, userId: row.user_id, projectId: row.project_id as ProjectId, scopes: row.scopes }
          }),
          Effect.orDie
        )
      }

      const listGrants = (userId: string, limit: number, beforeId: string | undefined) =>
        sql<GrantRow>`
          SELECT ${sql.literal(grantColumns)} FROM delegation_grants g
          WHERE (g.user_id = ${userId}
            OR g.tenant_id IN (SELECT tenant_id FROM tenant_members WHERE user_id = ${userId} AND role = 'admin' AND status = 'active'))
            ${beforeId === undefined ? sql`` : sql`AND g.id < ${beforeId}`}
          ORDER BY g.id DESC LIMIT ${limit}`.pipe(Effect.orDie)

      const revokeGrant = Effect.fn("Delegations.revokeGrant")(function*(grantId: string, userId: string) {
        const grant = yield* grantById(grantId)
        if (grant === undefined) return yield* new DelegationNotFound({ what: "grant", id: grantId })
        const admin = yield* sql`
          SELECT 1 FROM tenant_members WHERE tenant_id = ${grant.tenant_id} AND user_id = ${userId} AND role = 'admin' AND status = 'active'`.pipe(Effect.orDie)
        if (grant.user_id !== userId && admin.length === 0) {
          // Someone else's grant outside the tenants one administers: not confirmed to exist.
          if (!(yield* activeMember(grant.tenant_id, userId))) return yield* new DelegationNotFound({ what: "grant", id: grantId })
          return yield* new DelegationForbidden({ detail: "only the user who approved a delegation or an admin of its tenant can revoke it" })
        }
        const rows = yield* sql<GrantRow>`
          UPDATE delegation_grants SET status = 'revoked', revoked_at = now(), revoked_by_user_id = ${userId}
          WHERE id = ${grantId} AND status IN ('pending', 'approved', 'active')
          RETURNING ${sql.literal(grantColumns)}`.pipe(Effect.orDie)
        if (rows[0] === undefined) return yield* new DelegationConflict({ code: "grant_not_revocable", detail: `the delegation is ${grant.status}` })
        return rows[0]
      })

      return Delegations.of({
        createAccessKey, listAccessKeys, revokeAccessKey, verifySigned, request, consentView, decide, complete, authenticateToken,
        listGrants, revokeGrant
      })
    })
  ).pipe(Layer.provide(StateCipher.layer))
}
