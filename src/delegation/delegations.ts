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
import { AccessKeyId, type AuditId, type DelegationGrantId, type TenantId, type UserId } from "../domain/id-schemas.ts"
import { Context, Effect, Layer } from "effect"
import { AccountResourceNotFound, RoleForbidden } from "../accounts/errors.ts"
import { hashToken } from "../accounts/session-tokens.ts"
import { Tenants } from "../accounts/tenants.ts"
import { makeId } from "../domain/ids.ts"
import { earlierCreate } from "../store/keyed-create.ts"
import { StateCipher } from "../security/state-cipher.ts"
import { type AccessKeyRow, DelegationStore, type GrantRow } from "./delegation-store.ts"
import { DelegationConflict, DelegationForbidden, DelegationInvalid, DelegationNotFound, SignatureRejected } from "./errors.ts"
import { withMethodSpans } from "../observability/spans.ts"
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

export type { AccessKeyRow, GrantRow, GrantStatus } from "./delegation-store.ts"

export interface DelegationRequest {
  readonly agent: string
  readonly scopes: ReadonlyArray<string>
  readonly redirectUri: string
  readonly state: string
  readonly userId: string
  readonly expiresIn: number
  readonly projectId: ProjectId | undefined
}

export type { SignedCaller } from "../domain/delegation.ts"

/** What a delegation token acts as on a request. */
export interface DelegatedIdentity {
  readonly grantId: DelegationGrantId
  readonly auditId: AuditId
  readonly userId: UserId
  readonly projectId: ProjectId
  readonly scopes: ReadonlyArray<string>
}

export type TokenFailure = "malformed" | "unknown" | "expired" | "revoked" | "membership"

export interface ConsentView {
  readonly grant: GrantRow
  readonly tenantName: string
  readonly projects: ReadonlyArray<{ readonly id: ProjectId; readonly name: string }>
}

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
  readonly createAccessKey: (tenantId: TenantId, userId: UserId, name: string | null, redirectUris: ReadonlyArray<string>) => Effect.Effect<{ readonly row: AccessKeyRow; readonly secret: string }, AccountResourceNotFound | RoleForbidden | DelegationConflict | DelegationInvalid>
  readonly listAccessKeys: (tenantId: TenantId, userId: UserId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<AccessKeyRow>, AccountResourceNotFound | RoleForbidden>
  readonly revokeAccessKey: (tenantId: TenantId, userId: UserId, accessKeyId: AccessKeyId) => Effect.Effect<AccessKeyRow, AccountResourceNotFound | RoleForbidden | DelegationNotFound>
  /** Verifies a signed request; records its nonce. */
  readonly verifySigned: (input: { readonly authorization: string; readonly method: string; readonly pathWithQuery: string; readonly bodySha256: string }) => Effect.Effect<SignedCaller, SignatureRejected>
  readonly request: (caller: SignedCaller, input: DelegationRequest) => Effect.Effect<GrantRow, DelegationInvalid>
  /** The grant as the consent page shows it to a signed-in user (who must be an active member of its tenant). */
  readonly consentView: (grantId: DelegationGrantId, userId: UserId) => Effect.Effect<ConsentView, DelegationNotFound | DelegationConflict | DelegationForbidden>
  /** Approves or denies; the URL to send the browser to. */
  readonly decide: (grantId: DelegationGrantId, userId: UserId, decision: "approve" | "deny", projectId: ProjectId | undefined) => Effect.Effect<string, DelegationNotFound | DelegationConflict | DelegationForbidden | DelegationInvalid>
  readonly complete: (caller: SignedCaller, grantId: DelegationGrantId, code: string, state: string) => Effect.Effect<{ readonly grant: GrantRow; readonly token: string }, DelegationNotFound | DelegationConflict | DelegationInvalid>
  readonly authenticateToken: (token: string) => Effect.Effect<DelegatedIdentity | TokenFailure>
  readonly listGrants: (userId: UserId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<GrantRow>>
  readonly revokeGrant: (grantId: DelegationGrantId, userId: UserId) => Effect.Effect<GrantRow, DelegationNotFound | DelegationForbidden | DelegationConflict>
}>()("wa/delegation/Delegations") {
  static readonly layer = Layer.effect(
    Delegations,
    Effect.gen(function*() {
      const store = yield* DelegationStore
      const tenants = yield* Tenants
      const cipher = yield* StateCipher

      const createAccessKey = Effect.fn("Delegations.createAccessKey")(function*(tenantId: TenantId, userId: UserId, name: string | null, redirectUris: ReadonlyArray<string>) {
        yield* tenants.require(tenantId, userId, "admin")
        for (const [index, uri] of redirectUris.entries()) {
          const problem = redirectUriProblem(uri, [])
          if (problem !== undefined) return yield* new DelegationInvalid({ code: "validation_error", field: `redirect_uris.${index}`, detail: problem.replace("redirectUri", "each redirect_uris entry") })
        }
        // The retry of a keyed create whose first attempt committed before its process died gets that
        // access key, with its secret (kept sealed, so it can be shown once, now).
        const earlier = yield* earlierCreate((recorded) =>
          Effect.gen(function*() {
            // The claim recorded the id of the access key this create made (below).
            const earlierId = AccessKeyId.make(recorded)
            const row = yield* store.liveAccessKeyWithSecret(tenantId, earlierId)
            if (row === undefined) return undefined
            const { secret_sealed, secret_key_id, ...view } = row
            const opened = yield* cipher.open({ bytes: Buffer.from(secret_sealed), keyId: secret_key_id }, earlierId).pipe(
              Effect.catchTag("StateUnreadable", (e) => Effect.die(new Error(`access key ${earlierId}: ${e.reason}`)))
            )
            return { row: view, secret: opened.toString("utf8") }
          }))
        if (earlier !== undefined) return earlier
        const id = makeId("wak")
        const secret = generateAccessKeySecret()
        const sealed = cipher.seal(Buffer.from(secret, "utf8"), id)
        return yield* store.transaction(Effect.gen(function*() {
          // The tenant row is the lock: concurrent creations count one after another.
          yield* store.lockTenant(tenantId)
          const n = yield* store.countLiveAccessKeys(tenantId)
          if (n >= MAX_ACCESS_KEYS_PER_TENANT) {
            return yield* new DelegationConflict({ code: "limit_exceeded", detail: `a tenant holds at most ${MAX_ACCESS_KEYS_PER_TENANT} live access keys; revoke one first` })
          }
          const row = yield* store.insertAccessKey({ id, tenantId, name, sealed, redirectUris, createdByUserId: userId })
          // Under an Idempotency-Key the claim records the access key in this transaction (src/store/keyed-create.ts).
          yield* store.recordCreate(id)
          return { row, secret }
        }))
      })

      const listAccessKeys = (tenantId: TenantId, userId: UserId, limit: number, beforeId: string | undefined) =>
        Effect.gen(function*() {
          yield* tenants.require(tenantId, userId, "admin")
          return yield* store.accessKeys(tenantId, limit, beforeId)
        })

      const revokeAccessKey = (tenantId: TenantId, userId: UserId, accessKeyId: AccessKeyId) =>
        Effect.gen(function*() {
          yield* tenants.require(tenantId, userId, "admin")
          const row = yield* store.revokeAccessKey(tenantId, accessKeyId)
          if (row === undefined) return yield* new DelegationNotFound({ what: "access_key", id: accessKeyId })
          return row
        })

      const rejected = (code: SignatureRejected["code"], detail: string) => new SignatureRejected({ code, detail })

      const verifySigned = Effect.fn("Delegations.verifySigned")(function*(input: { readonly authorization: string; readonly method: string; readonly pathWithQuery: string; readonly bodySha256: string }) {
        const parsed = parseSignedHeader(input.authorization)
        if (typeof parsed === "string") return yield* rejected("signature_malformed", parsed)
        if (!isFresh(parsed.timestamp, Date.now())) {
          return yield* rejected("signature_expired", `Timestamp is more than ${SIGNATURE_WINDOW_SECONDS} s away from the server's clock (now ${Math.floor(Date.now() / 1000)}); sign with the current time`)
        }
        const row = yield* store.signingKey(parsed.credential)
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
        const fresh = yield* store.spendNonce(parsed.credential, parsed.nonce, parsed.timestamp + SIGNATURE_WINDOW_SECONDS + 60)
        if (!fresh) return yield* rejected("signature_replayed", "this Nonce was already used with this access key; sign every request with a new nonce")
        // Expired nonces go now and then (about one request in 50), in the background: this request
        // does not wait for the sweep.
        if (Math.random() < 0.02) yield* Effect.forkDetach(store.sweepNonces.pipe(Effect.ignore))
        return { accessKeyId: parsed.credential, tenantId: row.tenant_id, redirectUris: row.redirect_uris }
      })

      const request = Effect.fn("Delegations.request")(function*(caller: SignedCaller, input: DelegationRequest) {
        const problem = redirectUriProblem(input.redirectUri, caller.redirectUris)
        if (problem !== undefined) return yield* new DelegationInvalid({ code: "validation_error", field: "redirectUri", detail: problem })
        if (input.projectId !== undefined && !(yield* store.projectInTenant(input.projectId, caller.tenantId))) {
          return yield* new DelegationInvalid({ code: "validation_error", field: "projectId", detail: "projectId must be a project of the access key's tenant" })
        }
        return yield* store.insertGrant({
          accessKeyId: caller.accessKeyId,
          tenantId: caller.tenantId,
          agent: input.agent,
          scopes: [...new Set(input.scopes)],
          redirectUri: input.redirectUri,
          state: input.state,
          externalUserId: input.userId,
          expiresIn: input.expiresIn,
          requestedProjectId: input.projectId ?? null,
          consentTtlSeconds: CONSENT_TTL_SECONDS
        })
      })

      const pendingProblem = (grant: GrantRow) =>
        grant.status !== "pending"
          ? new DelegationConflict({ code: "grant_decided", detail: `this delegation request is already ${grant.status}` })
          : grant.consent_expires_at.getTime() <= Date.now()
          ? new DelegationConflict({ code: "grant_expired", detail: "this delegation request expired; the application must start a new one" })
          : undefined

      const consentView = Effect.fn("Delegations.consentView")(function*(grantId: DelegationGrantId, userId: UserId) {
        const grant = yield* store.grant(grantId)
        if (grant === undefined) return yield* new DelegationNotFound({ what: "grant", id: grantId })
        if (!(yield* store.isActiveMember(grant.tenant_id, userId))) {
          return yield* new DelegationForbidden({ detail: "this application belongs to a tenant you are not an active member of; sign in with another account" })
        }
        const problem = pendingProblem(grant)
        if (problem !== undefined) return yield* problem
        const tenantName = yield* store.tenantName(grant.tenant_id)
        const projects = yield* store.consentProjects(grant.tenant_id, grant.requested_project_id)
        return { grant, tenantName: tenantName ?? grant.tenant_id, projects }
      })

      const decide = Effect.fn("Delegations.decide")(function*(grantId: DelegationGrantId, userId: UserId, decision: "approve" | "deny", projectId: ProjectId | undefined) {
        return yield* store.transaction(Effect.gen(function*() {
          const grant = yield* store.lockGrant(grantId)
          if (grant === undefined) return yield* new DelegationNotFound({ what: "grant", id: grantId })
          if (!(yield* store.isActiveMember(grant.tenant_id, userId))) {
            return yield* new DelegationForbidden({ detail: "only an active member of the application's tenant can decide on this request" })
          }
          const problem = pendingProblem(grant)
          if (problem !== undefined) return yield* problem
          if (decision === "deny") {
            yield* store.deny(grantId, userId)
            return consentRedirect(grant.redirect_uri, { error: "access_denied", grantId, state: grant.state })
          }
          const project = grant.requested_project_id ?? projectId
          if (project === undefined) return yield* new DelegationInvalid({ code: "validation_error", field: "project_id", detail: "choose the project the application may act on" })
          if (!(yield* store.projectInTenant(project, grant.tenant_id))) {
            return yield* new DelegationInvalid({ code: "validation_error", field: "project_id", detail: "the project is not one of this tenant's" })
          }
          const code = generateCode()
          yield* store.approve(grantId, userId, project, code, CODE_TTL_SECONDS)
          return consentRedirect(grant.redirect_uri, { grantId, code, state: grant.state })
        }))
      })

      const complete = Effect.fn("Delegations.complete")(function*(caller: SignedCaller, grantId: DelegationGrantId, code: string, state: string) {
        return yield* store.transaction(Effect.gen(function*() {
          const grant = yield* store.lockGrantWithCode(grantId)
          // Another access key's grant is as unknown as a missing one (nothing about it is confirmed).
          if (grant === undefined || grant.access_key_id !== caller.accessKeyId) return yield* new DelegationNotFound({ what: "grant", id: grantId })
          if (grant.status === "pending") return yield* new DelegationConflict({ code: "consent_pending", detail: "the user has not approved this request yet" })
          if (grant.status === "denied") return yield* new DelegationConflict({ code: "access_denied", detail: "the user denied this request" })
          const codeMatches = grant.code_hash !== null && hashToken(code) === grant.code_hash
          if (grant.status === "active" || grant.status === "revoked") {
            if (codeMatches && grant.status === "active") {
              // A code presented twice may have been stolen: the token it gave is revoked too (committed,
              // so the refusal is returned after the transaction, not raised inside it).
              yield* store.revokeToken(grantId)
            }
            return "code_used" as const
          }
          if (grant.state !== state) return yield* new DelegationInvalid({ code: "state_mismatch", field: "state", detail: "state does not match the delegation request's" })
          if (!codeMatches) return yield* new DelegationInvalid({ code: "invalid_code", field: "code", detail: "the code is not this grant's" })
          if (grant.code_expired) return yield* new DelegationConflict({ code: "code_expired", detail: `the code is valid ${CODE_TTL_SECONDS / 60} minutes after consent; start a new delegation` })
          const token = generateDelegationToken()
          const updated = yield* store.activate(grantId, token, grant.expires_in)
          return { grant: updated, token }
        })).pipe(
          Effect.flatMap((result) =>
            result === "code_used"
              ? Effect.fail(new DelegationConflict({ code: "code_used", detail: "this code was already exchanged; the token it gave is revoked. Start a new delegation" }))
              : Effect.succeed(result)
          )
        )
      })

      const authenticateToken = (token: string): Effect.Effect<DelegatedIdentity | TokenFailure> => {
        if (!isWellFormedDelegationToken(token)) return Effect.succeed("malformed" as const)
        return store.grantOfToken(token).pipe(
          Effect.map((row): DelegatedIdentity | TokenFailure => {
            if (row === undefined) return "unknown"
            if (row.status === "revoked") return "revoked"
            if (row.expired) return "expired"
            if (!row.member) return "membership"
            return { grantId: row.id, auditId: row.audit_id, userId: row.user_id, projectId: row.project_id, scopes: row.scopes }
          })
        )
      }

      const listGrants = store.grantsOf

      const revokeGrant = Effect.fn("Delegations.revokeGrant")(function*(grantId: DelegationGrantId, userId: UserId) {
        const grant = yield* store.grant(grantId)
        if (grant === undefined) return yield* new DelegationNotFound({ what: "grant", id: grantId })
        const admin = yield* store.isActiveAdmin(grant.tenant_id, userId)
        if (grant.user_id !== userId && !admin) {
          // Someone else's grant outside the tenants one administers: not confirmed to exist.
          if (!(yield* store.isActiveMember(grant.tenant_id, userId))) return yield* new DelegationNotFound({ what: "grant", id: grantId })
          return yield* new DelegationForbidden({ detail: "only the user who approved a delegation or an admin of its tenant can revoke it" })
        }
        const revoked = yield* store.revokeGrant(grantId, userId)
        if (revoked === undefined) return yield* new DelegationConflict({ code: "grant_not_revocable", detail: `the delegation is ${grant.status}` })
        return revoked
      })

      return Delegations.of({
        ...withMethodSpans("Delegations", { listAccessKeys, revokeAccessKey, authenticateToken, listGrants }),
        createAccessKey, verifySigned, request, consentView, decide, complete, revokeGrant
      })
    })
  ).pipe(Layer.provide(Layer.mergeAll(StateCipher.layer, DelegationStore.layer)))
}
