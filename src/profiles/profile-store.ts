/**
 * Profiles in PostgreSQL: the rows, their encrypted saved state, the lease, and interactive logins.
 *
 * The lease: a profile is held by the open session (status <> 'closed') that names it. `lease`
 * locks the profile's row (FOR UPDATE) and looks for such a session; called in the transaction
 * that inserts the new session, it makes two concurrent creates on one profile, on any nodes,
 * serialise on the row: the second sees the first's session and is refused. Nothing has to be
 * released: closing the session (by the API, at the end of a keep_alive=false run, after idling,
 * or by start-up recovery) frees the profile.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { ProfileInUse, ProfileNotFound } from "../domain/errors.ts"
import { makeId } from "../domain/ids.ts"
import { decodeProfile, MAX_STATE_BYTES, type Profile, type ProfileId, type ProfileLogin, type ProfileState } from "../domain/profile.ts"
import { ProjectId, SessionId } from "../domain/run.ts"
import { ProfileId as ProfileIdSchema } from "../domain/id-schemas.ts"
import { decodeRows } from "../domain/rows.ts"
import { StateCipher, type StateUnreadable } from "../security/state-cipher.ts"
import { withMethodSpans } from "../observability/spans.ts"

const holderRows = decodeRows(Schema.Struct({ id: SessionId }))
const totalRows = decodeRows(Schema.Struct({ total: Schema.Number }))
/** The sealed browser state of a profile (bytea) and the key it was sealed with. */
const stateRows = decodeRows(Schema.Struct({ storage_state: Schema.NullOr(Schema.Uint8Array), storage_key_id: Schema.NullOr(Schema.String) }))
const projectRows = decodeRows(Schema.Struct({ project_id: ProjectId }))
/** A profile_logins row: ProfileLogin (src/domain/profile.ts), decoded. */
const loginRows = decodeRows(Schema.Struct({
  profile_id: ProfileIdSchema,
  site_id: Schema.String,
  start_url: Schema.String,
  display_label: Schema.NullOr(Schema.String),
  session_id: Schema.NullOr(SessionId),
  logged_in_selector: Schema.NullOr(Schema.String),
  logged_out_selector: Schema.NullOr(Schema.String),
  probe_result: Schema.NullOr(Schema.String),
  probed_at: Schema.NullOr(Schema.Date)
}))

export interface ProfileFields {
  readonly name?: string | null | undefined
  readonly customer_user_id?: string | null | undefined
  readonly proxy_country_code?: string | null | undefined
}

export interface ProbeOutcome {
  readonly state: ProfileState
  readonly alive: boolean
  readonly failureReason: string | null
}

const columns = (sql: SqlClient.SqlClient) => sql`
  p.id, p.project_id, p.name, p.customer_user_id, p.state, p.last_used_at, p.last_alive_at, p.last_failure_reason,
  p.proxy_country_code, (p.storage_state IS NOT NULL) AS has_saved_state, p.storage_saved_at AS state_saved_at,
  (SELECT s.id FROM sessions s WHERE s.profile_id = p.id AND s.status <> 'closed' ORDER BY s.id LIMIT 1) AS leased_by_session_id,
  p.created_at, p.updated_at`

export class ProfileStore extends Context.Service<ProfileStore, {
  readonly create: (projectId: ProjectId, fields: ProfileFields) => Effect.Effect<Profile>
  readonly list: (projectId: ProjectId, options: { readonly limit: number; readonly beforeId?: string | undefined; readonly customerUserId?: string | undefined }) => Effect.Effect<{ readonly items: ReadonlyArray<Profile>; readonly total: number }>
  readonly get: (projectId: ProjectId, profileId: ProfileId) => Effect.Effect<Profile, ProfileNotFound>
  readonly update: (projectId: ProjectId, profileId: ProfileId, fields: ProfileFields) => Effect.Effect<Profile, ProfileNotFound>
  /** Deletes the profile and its saved state; refused while a session holds it. */
  readonly remove: (projectId: ProjectId, profileId: ProfileId) => Effect.Effect<void, ProfileNotFound | ProfileInUse>
  /**
   * Takes the profile for a new session: run it inside the transaction that inserts the session.
   * Marks `last_used_at`.
   */
  readonly lease: (projectId: ProjectId, profileId: ProfileId) => Effect.Effect<void, ProfileNotFound | ProfileInUse>
  /** The decrypted saved state (Playwright storageState), or undefined when none is saved. */
  readonly loadState: (profileId: ProfileId) => Effect.Effect<unknown | undefined, StateUnreadable>
  /**
   * Saves a state, encrypted. `bySessionId`: the session saving it; refused (false) when another
   * open session holds the profile now, so a late save never overwrites a newer holder's state.
   */
  readonly saveState: (profileId: ProfileId, state: unknown, bySessionId: SessionId | null) => Effect.Effect<boolean>
  readonly setState: (profileId: ProfileId, state: ProfileState) => Effect.Effect<void>
  readonly recordProbe: (profileId: ProfileId, siteId: string, result: "logged_in" | "logged_out" | "unknown", outcome: ProbeOutcome, displayLabel: string | null | undefined) => Effect.Effect<Profile>
  readonly startLogin: (login: Omit<ProfileLogin, "probe_result" | "probed_at">) => Effect.Effect<void>
  readonly findLogin: (profileId: ProfileId, siteId: string) => Effect.Effect<ProfileLogin | undefined>
  /** The interactive login whose login session this is, if any. */
  readonly loginOfSession: (sessionId: SessionId) => Effect.Effect<ProfileLogin | undefined>
  /** Whether the project has that profile (a monitor naming one). */
  readonly exists: (projectId: ProjectId, profileId: ProfileId) => Effect.Effect<boolean>
}>()("wa/profiles/ProfileStore") {
  static readonly layer = Layer.effect(
    ProfileStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const cipher = yield* StateCipher

      const read = (projectId: ProjectId, profileId: ProfileId) =>
        sql`SELECT ${columns(sql)} FROM profiles p WHERE p.id = ${profileId} AND p.project_id = ${projectId}`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) => rows[0] === undefined ? Effect.fail(new ProfileNotFound({ profileId })) : Effect.succeed(decodeProfile(rows[0])))
        )

      /** Locks the row; fails when it is not there, or when an open session holds it. */
      const lockFree = (projectId: ProjectId, profileId: ProfileId) =>
        Effect.gen(function*() {
          const rows = yield* sql`SELECT id FROM profiles WHERE id = ${profileId} AND project_id = ${projectId} FOR UPDATE`
          if (rows[0] === undefined) return yield* new ProfileNotFound({ profileId })
          const holders = yield* holderRows(sql`
            SELECT id FROM sessions WHERE profile_id = ${profileId} AND status <> 'closed' ORDER BY id LIMIT 1`)
          if (holders[0] !== undefined) return yield* new ProfileInUse({ profileId, sessionId: holders[0].id })
        })

      const set = (fields: ProfileFields, key: keyof ProfileFields) => key in fields && fields[key] !== undefined

      return ProfileStore.of(withMethodSpans("ProfileStore", {
        create: (projectId, fields) =>
          Effect.gen(function*() {
            const id = makeId("prof")
            yield* sql`
              INSERT INTO profiles (id, project_id, name, customer_user_id, proxy_country_code)
              VALUES (${id}, ${projectId}, ${fields.name ?? null}, ${fields.customer_user_id ?? null}, ${fields.proxy_country_code ?? null})`
            return yield* read(projectId, id)
          }).pipe(Effect.orDie),
        list: (projectId, options) =>
          Effect.gen(function*() {
            const customer = options.customerUserId === undefined ? sql`` : sql`AND p.customer_user_id = ${options.customerUserId}`
            const rows = yield* sql`
              SELECT ${columns(sql)} FROM profiles p
              WHERE p.project_id = ${projectId} ${customer}
                ${options.beforeId === undefined ? sql`` : sql`AND p.id < ${options.beforeId}`}
              ORDER BY p.id DESC LIMIT ${options.limit}`
            const counted = yield* totalRows(sql`
              SELECT count(*)::int AS total FROM profiles p WHERE p.project_id = ${projectId} ${customer}`)
            return { items: rows.map((row) => decodeProfile(row)), total: counted[0]?.total ?? 0 }
          }).pipe(Effect.orDie),
        get: read,
        update: (projectId, profileId, fields) =>
          Effect.gen(function*() {
            const rows = yield* sql`
              UPDATE profiles SET
                name = CASE WHEN ${set(fields, "name")} THEN ${fields.name ?? null} ELSE name END,
                customer_user_id = CASE WHEN ${set(fields, "customer_user_id")} THEN ${fields.customer_user_id ?? null} ELSE customer_user_id END,
                proxy_country_code = CASE WHEN ${set(fields, "proxy_country_code")} THEN ${fields.proxy_country_code ?? null} ELSE proxy_country_code END,
                updated_at = now()
              WHERE id = ${profileId} AND project_id = ${projectId}
              RETURNING id`.pipe(Effect.orDie)
            if (rows[0] === undefined) return yield* new ProfileNotFound({ profileId })
            return yield* read(projectId, profileId)
          }),
        remove: (projectId, profileId) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* lockFree(projectId, profileId)
            yield* sql`DELETE FROM profiles WHERE id = ${profileId}`
          })).pipe(Effect.catchTag("SqlError", Effect.die)),
        lease: (projectId, profileId) =>
          Effect.gen(function*() {
            yield* lockFree(projectId, profileId)
            yield* sql`UPDATE profiles SET last_used_at = now(), updated_at = now() WHERE id = ${profileId}`
          }).pipe(Effect.catchTag("SqlError", Effect.die)),
        loadState: (profileId) =>
          Effect.gen(function*() {
            const rows = yield* stateRows(sql`SELECT storage_state, storage_key_id FROM profiles WHERE id = ${profileId}`)
            const row = rows[0]
            if (row === undefined || row.storage_state === null || row.storage_key_id === null) return undefined
            const plain = yield* cipher.open({ bytes: Buffer.from(row.storage_state), keyId: row.storage_key_id }, profileId)
            return JSON.parse(plain.toString("utf8")) as unknown
          }),
        saveState: (profileId, state, bySessionId) =>
          Effect.gen(function*() {
            const json = Buffer.from(JSON.stringify(state))
            if (json.length > MAX_STATE_BYTES) {
              yield* sql`UPDATE profiles SET last_failure_reason = ${`state_too_large: ${json.length} bytes (limit ${MAX_STATE_BYTES}); not saved`}, updated_at = now() WHERE id = ${profileId}`
              return false
            }
            const sealed = cipher.seal(json, profileId)
            const rows = yield* sql`
              UPDATE profiles SET storage_state = ${sealed.bytes}, storage_key_id = ${sealed.keyId}, storage_saved_at = now(), updated_at = now()
              WHERE id = ${profileId}
                AND NOT EXISTS (
                  SELECT 1 FROM sessions WHERE profile_id = ${profileId} AND status <> 'closed'
                    AND id IS DISTINCT FROM ${bySessionId})
              RETURNING id`
            return rows.length > 0
          }).pipe(Effect.orDie),
        setState: (profileId, state) =>
          sql`UPDATE profiles SET state = ${state}, updated_at = now() WHERE id = ${profileId}`.pipe(Effect.asVoid, Effect.orDie),
        recordProbe: (profileId, siteId, result, outcome, displayLabel) =>
          sql.withTransaction(Effect.gen(function*() {
            const rows = yield* projectRows(sql`
              UPDATE profiles SET state = ${outcome.state},
                last_alive_at = CASE WHEN ${outcome.alive} THEN now() ELSE last_alive_at END,
                last_failure_reason = ${outcome.failureReason}, updated_at = now()
              WHERE id = ${profileId} RETURNING project_id`)
            yield* sql`
              UPDATE profile_logins SET probe_result = ${result}, probed_at = now(), updated_at = now(),
                display_label = CASE WHEN ${displayLabel !== undefined} THEN ${displayLabel ?? null} ELSE display_label END
              WHERE profile_id = ${profileId} AND site_id = ${siteId}`
            return yield* read(rows[0]!.project_id, profileId).pipe(Effect.orDie)
          })).pipe(Effect.orDie),
        startLogin: (login) =>
          sql`
            INSERT INTO profile_logins (profile_id, site_id, start_url, display_label, session_id, logged_in_selector, logged_out_selector)
            VALUES (${login.profile_id}, ${login.site_id}, ${login.start_url}, ${login.display_label}, ${login.session_id},
              ${login.logged_in_selector}, ${login.logged_out_selector})
            ON CONFLICT (profile_id, site_id) DO UPDATE SET start_url = excluded.start_url,
              display_label = coalesce(excluded.display_label, profile_logins.display_label), session_id = excluded.session_id,
              logged_in_selector = excluded.logged_in_selector, logged_out_selector = excluded.logged_out_selector, updated_at = now()`.pipe(
            Effect.asVoid,
            Effect.orDie
          ),
        findLogin: (profileId, siteId) =>
          loginRows(sql`
            SELECT profile_id, site_id, start_url, display_label, session_id, logged_in_selector, logged_out_selector, probe_result, probed_at
            FROM profile_logins WHERE profile_id = ${profileId} AND site_id = ${siteId}`).pipe(Effect.map((rows) => rows[0])),
        loginOfSession: (sessionId) =>
          loginRows(sql`
            SELECT profile_id, site_id, start_url, display_label, session_id, logged_in_selector, logged_out_selector, probe_result, probed_at
            FROM profile_logins WHERE session_id = ${sessionId} ORDER BY updated_at DESC LIMIT 1`).pipe(Effect.map((rows) => rows[0])),
        exists: (projectId, profileId) =>
          sql`SELECT 1 FROM profiles WHERE id = ${profileId} AND project_id = ${projectId}`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)
      }))
    })
  ).pipe(Layer.provide(StateCipher.layer))
}

export type { ProfileId }
