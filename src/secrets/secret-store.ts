/**
 * Project secrets in PostgreSQL (table project_secrets, migration 0027). The value is sealed with
 * the service's secret key (src/security/state-cipher.ts: AES-256-GCM, `WA_SECRET_KEY` or the data
 * dir's key file) with the secret's id as additional data, and opened only for a run that names
 * the secret (`openForRun`); every other read returns the metadata. A project holds at most
 * `MAX_SECRETS` secrets, names unique.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { makeId } from "../domain/ids.ts"
import type { WireBody } from "../domain/errors.ts"
import { StateCipher } from "../security/state-cipher.ts"
import { earlierCreate, recordCreate } from "../store/keyed-create.ts"

import { MAX_SECRETS } from "./limits.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { ProjectId } from "../domain/run.ts"
import { SecretId } from "../domain/id-schemas.ts"
import { decodeRows } from "../domain/rows.ts"

export const SecretKinds = ["secret", "totp"] as const
export type SecretKind = typeof SecretKinds[number]

/** A secret's metadata as stored (its value is never part of it). */
export const SecretRow = Schema.Struct({
  id: SecretId,
  project_id: ProjectId,
  name: Schema.String,
  kind: Schema.Literals(SecretKinds),
  origins: Schema.Array(Schema.String),
  description: Schema.NullOr(Schema.String),
  totp_digits: Schema.NullOr(Schema.Number),
  totp_period: Schema.NullOr(Schema.Number),
  totp_algorithm: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  value_updated_at: Schema.Date,
  last_used_at: Schema.NullOr(Schema.Date)
})
export type SecretRow = typeof SecretRow.Type
const secretRows = decodeRows(SecretRow)
/** With the sealed value, for a run that opens it. */
const sealedRows = decodeRows(Schema.Struct({ ...SecretRow.fields, value_sealed: Schema.Uint8Array, value_key_id: Schema.String }))
/** A create's check: how many secrets the project holds, and whether the name is one of them. */
const countRows = decodeRows(Schema.Struct({ n: Schema.Number, taken: Schema.Boolean }))
const nameRows = decodeRows(Schema.Struct({ name: Schema.String }))

/** A secret with its value opened, for a run. */
export interface OpenedSecret extends SecretRow {
  readonly value: string
}

/** What a create writes: the value already checked and normalised for its kind. */
export interface NewSecret {
  readonly name: string
  readonly kind: SecretKind
  readonly value: string
  readonly origins: ReadonlyArray<string>
  readonly description: string | null
  readonly totp: { readonly digits: number; readonly period: number; readonly algorithm: string } | null
}

export interface SecretChanges {
  readonly value?: { readonly value: string; readonly totp: NewSecret["totp"] }
  readonly origins?: ReadonlyArray<string>
  /** null clears it. */
  readonly description?: string | null
}

export class SecretNameTaken extends Schema.TaggedError<SecretNameTaken>()("SecretNameTaken", { name: Schema.String }) {
  get httpStatus() { return 409 as const }
  get code() { return "secret_name_taken" }
  wire(): WireBody {
    return { detail: `this project already has a secret named ${this.name}; update it (PATCH) or delete it first`, extra: { name: this.name } }
  }
}
export class SecretLimitReached extends Schema.TaggedError<SecretLimitReached>()("SecretLimitReached", { limit: Schema.Int }) {
  get httpStatus() { return 409 as const }
  get code() { return "secret_limit_reached" }
  wire(): WireBody {
    return { detail: `this project already has ${this.limit} secrets; delete one first`, extra: { limit: this.limit } }
  }
}
/** A sealed value does not open: written with another key (set the same WA_SECRET_KEY everywhere), or altered. */
export class SecretUnreadable extends Schema.TaggedError<SecretUnreadable>()("SecretUnreadable", { name: Schema.String, reason: Schema.String }) {}

const columns = "id, project_id, name, kind, origins, description, totp_digits, totp_period, totp_algorithm, created_at, updated_at, value_updated_at, last_used_at"

export class SecretStore extends Context.Service<SecretStore, {
  readonly create: (projectId: ProjectId, input: NewSecret) => Effect.Effect<SecretRow, SecretNameTaken | SecretLimitReached>
  /** Newest first, `limit` rows before the id `beforeId` (exclusive). */
  readonly list: (projectId: ProjectId, limit: number, beforeId?: string) => Effect.Effect<ReadonlyArray<SecretRow>>
  /** The names of the project's secrets, in order (a create's check of the names it asks for). */
  readonly names: (projectId: ProjectId) => Effect.Effect<ReadonlyArray<string>>
  readonly find: (projectId: ProjectId, id: SecretId) => Effect.Effect<SecretRow | undefined>
  /** undefined when there is no such secret. */
  readonly update: (projectId: ProjectId, id: SecretId, changes: SecretChanges) => Effect.Effect<SecretRow | undefined>
  /** Whether there was one to delete. */
  readonly delete: (projectId: ProjectId, id: SecretId) => Effect.Effect<boolean>
  /** The named secrets with their values (those that exist), marked used now. */
  readonly openForRun: (projectId: ProjectId, names: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<OpenedSecret>, SecretUnreadable>
}>()("wa/secrets/SecretStore") {
  static readonly layer = Layer.effect(
    SecretStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const cipher = yield* StateCipher
      const cols = sql.literal(columns)

      const find = (projectId: ProjectId, id: SecretId) =>
        secretRows(sql`SELECT ${cols} FROM project_secrets WHERE project_id = ${projectId} AND id = ${id}`).pipe(
          Effect.map((rows) => rows[0])
        )

      const create = Effect.fn("SecretStore.create")(function*(projectId: ProjectId, input: NewSecret) {
        // The retry of a keyed create whose first attempt committed before its process died gets that secret.
        const earlier = yield* earlierCreate((id) => find(projectId, SecretId.make(id)))
        if (earlier !== undefined) return earlier
        const id = makeId("sec")
        const sealed = cipher.seal(Buffer.from(input.value, "utf8"), id)
        const outcome = yield* sql.withTransaction(Effect.gen(function*() {
          // The count, the name check and the insert under one per-project lock.
          yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`project_secrets:${projectId}`}, 0))`
          const [count] = yield* countRows(sql`
            SELECT count(*)::int AS n, coalesce(bool_or(name = ${input.name}), false) AS taken
            FROM project_secrets WHERE project_id = ${projectId}`)
          if (count?.taken === true) return "taken" as const
          if ((count?.n ?? 0) >= MAX_SECRETS) return "limit" as const
          const rows = yield* secretRows(sql`
            INSERT INTO project_secrets (id, project_id, name, kind, value_sealed, value_key_id, origins, description, totp_digits, totp_period, totp_algorithm)
            VALUES (${id}, ${projectId}, ${input.name}, ${input.kind}, ${sealed.bytes}, ${sealed.keyId}, ${JSON.stringify(input.origins)}::jsonb,
                    ${input.description}, ${input.totp?.digits ?? null}, ${input.totp?.period ?? null}, ${input.totp?.algorithm ?? null})
            RETURNING ${cols}`)
          // Under an Idempotency-Key the claim records the secret in this transaction (src/store/keyed-create.ts).
          yield* recordCreate(sql, id)
          return rows[0]!
        })).pipe(Effect.orDie)
        if (outcome === "taken") return yield* new SecretNameTaken({ name: input.name })
        if (outcome === "limit") return yield* new SecretLimitReached({ limit: MAX_SECRETS })
        return outcome
      })

      const update = Effect.fn("SecretStore.update")(function*(projectId: ProjectId, id: SecretId, changes: SecretChanges) {
        const sealed = changes.value === undefined ? undefined : cipher.seal(Buffer.from(changes.value.value, "utf8"), id)
        const totp = changes.value?.totp
        const rows = yield* secretRows(sql`
          UPDATE project_secrets SET
            updated_at = now()
            ${sealed === undefined ? sql`` : sql`, value_sealed = ${sealed.bytes}, value_key_id = ${sealed.keyId}, value_updated_at = now()`}
            ${totp === undefined || totp === null ? sql`` : sql`, totp_digits = ${totp.digits}, totp_period = ${totp.period}, totp_algorithm = ${totp.algorithm}`}
            ${changes.origins === undefined ? sql`` : sql`, origins = ${JSON.stringify(changes.origins)}::jsonb`}
            ${changes.description === undefined ? sql`` : sql`, description = ${changes.description}`}
          WHERE project_id = ${projectId} AND id = ${id}
          RETURNING ${cols}`)
        return rows[0]
      })

      const openForRun = Effect.fn("SecretStore.openForRun")(function*(projectId: ProjectId, names: ReadonlyArray<string>) {
        if (names.length === 0) return []
        const rows = yield* sealedRows(sql`
          UPDATE project_secrets SET last_used_at = now()
          WHERE project_id = ${projectId} AND name IN ${sql.in(names)}
          RETURNING ${cols}, value_sealed, value_key_id`)
        const opened: Array<OpenedSecret> = []
        for (const { value_sealed, value_key_id, ...row } of rows) {
          const bytes = yield* cipher.open({ bytes: Buffer.from(value_sealed), keyId: value_key_id }, row.id).pipe(
            Effect.mapError((e) => new SecretUnreadable({ name: row.name, reason: e.reason }))
          )
          opened.push({ ...row, value: bytes.toString("utf8") })
        }
        return opened
      })

      return SecretStore.of({
        ...withMethodSpans<Pick<SecretStore["Service"], "list" | "names" | "find" | "delete">>("SecretStore", {
          list: (projectId, limit, beforeId) =>
            secretRows(sql`
              SELECT ${cols} FROM project_secrets
              WHERE project_id = ${projectId} ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
              ORDER BY id DESC LIMIT ${limit}`),
          names: (projectId) =>
            nameRows(sql`SELECT name FROM project_secrets WHERE project_id = ${projectId} ORDER BY name`).pipe(
              Effect.map((rows) => rows.map((row) => row.name)),
              Effect.orDie
            ),
          find,
          delete: (projectId, id) =>
            sql`DELETE FROM project_secrets WHERE project_id = ${projectId} AND id = ${id} RETURNING 1`.pipe(
              Effect.map((rows) => rows.length > 0),
              Effect.orDie
            )
        }),
        create,
        update,
        openForRun
      })
    })
  ).pipe(Layer.provide(StateCipher.layer))
}
