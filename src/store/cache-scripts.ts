/**
 * Cached scripts in PostgreSQL (tables cache_scripts and cache_script_versions, migration 0030):
 * find the script of a task key, save a run's steps as a script or as its next version, count a
 * replay, and the resource's list, get and delete.
 */
import { createHash } from "node:crypto"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { CachedSteps, type CachedStep } from "../domain/cache-script.ts"
import { CacheScriptNotFound } from "../domain/errors.ts"
import { makeId } from "../domain/ids.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { ProjectId, RunId } from "../domain/run.ts"
import { CacheScriptId } from "../domain/id-schemas.ts"

/** Instructions as the key reads them: case, spacing and trailing punctuation do not make another task. */
export const normalizeInstructions = (instructions: string): string =>
  instructions.normalize("NFKC").toLowerCase().replace(/\s+/g, " ").trim().replace(/[.!?\s]+$/, "")

/** The key of a task: project-scoped by its row, from normalised instructions, start origin and output_schema. */
export const cacheKeyOf = (instructions: string, startOrigin: string | null, outputSchema: unknown): string =>
  createHash("sha256")
    .update(JSON.stringify([normalizeInstructions(instructions), startOrigin, outputSchema ?? null]))
    .digest("hex")

export interface CacheScriptVersion {
  readonly version: number
  readonly source_run_id: RunId | null
  readonly healed_steps: number
  readonly created_at: Date
}

export interface CacheScript {
  readonly id: CacheScriptId
  readonly project_id: ProjectId
  readonly instructions: string
  readonly start_origin: string | null
  readonly output_schema: unknown
  readonly version: number
  readonly hit_count: number
  readonly heal_count: number
  readonly last_used_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
  /** The steps of the current version. */
  readonly steps: ReadonlyArray<CachedStep>
}

export interface CacheScriptDetail extends CacheScript {
  readonly versions: ReadonlyArray<CacheScriptVersion>
}

const ScriptRow = Schema.Struct({
  id: CacheScriptId,
  project_id: ProjectId,
  instructions: Schema.String,
  start_origin: Schema.NullOr(Schema.String),
  output_schema: Schema.Unknown,
  version: Schema.Number,
  hit_count: Schema.Number,
  heal_count: Schema.Number,
  last_used_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  steps: CachedSteps
})
const decodeScript = Schema.decodeUnknownSync(ScriptRow)

const VersionRow = Schema.Struct({
  version: Schema.Number,
  source_run_id: Schema.NullOr(RunId),
  healed_steps: Schema.Number,
  created_at: Schema.Date
})
const decodeVersion = Schema.decodeUnknownSync(VersionRow)

const decodeSaved = Schema.decodeUnknownSync(Schema.Struct({ id: CacheScriptId, version: Schema.Number }))

const toScript = (row: unknown): CacheScript => {
  const decoded = decodeScript(row)
  return { ...decoded, output_schema: decoded.output_schema ?? null }
}

export interface SaveInput {
  readonly projectId: ProjectId
  readonly instructions: string
  readonly startOrigin: string | null
  readonly outputSchema: unknown
  readonly steps: ReadonlyArray<CachedStep>
  readonly sourceRunId: RunId
  /** Steps the model took again in the replay that made these steps (0: a first recording). */
  readonly healedSteps: number
}

export class CacheScriptStore extends Context.Service<CacheScriptStore, {
  /** The script of a task key, with its current steps. */
  readonly find: (projectId: ProjectId, cacheKey: string) => Effect.Effect<CacheScript | undefined>
  /** Saves steps as the key's script (a new script, or its next version); returns the script and version. */
  readonly save: (input: SaveInput) => Effect.Effect<{ readonly id: CacheScriptId; readonly version: number }>
  /** A replay used the script (healed: some of its steps were taken again by the model). */
  readonly recordUse: (scriptId: CacheScriptId, healed: boolean) => Effect.Effect<void>
  readonly list: (projectId: ProjectId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<CacheScript>>
  readonly get: (projectId: ProjectId, scriptId: CacheScriptId) => Effect.Effect<CacheScriptDetail, CacheScriptNotFound>
  readonly remove: (projectId: ProjectId, scriptId: CacheScriptId) => Effect.Effect<void, CacheScriptNotFound>
}>()("wa/store/CacheScriptStore") {
  static readonly layer = Layer.effect(
    CacheScriptStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const selectScript = sql`
        SELECT s.id, s.project_id, s.instructions, s.start_origin, s.output_schema, s.version, s.hit_count, s.heal_count,
          s.last_used_at, s.created_at, s.updated_at, v.steps
        FROM cache_scripts s JOIN cache_script_versions v ON v.script_id = s.id AND v.version = s.version`

      const find = (projectId: ProjectId, cacheKey: string) =>
        sql`${selectScript} WHERE s.project_id = ${projectId} AND s.cache_key = ${cacheKey}`.pipe(
          Effect.map((rows) => rows.length === 0 ? undefined : toScript(rows[0])),
          Effect.orDie
        )

      const save = (input: SaveInput) =>
        sql.withTransaction(Effect.gen(function*() {
          const key = cacheKeyOf(input.instructions, input.startOrigin, input.outputSchema)
          // One row per key: concurrent saves of one task serialise on it, each adding a version.
          const rows = yield* sql`
            INSERT INTO cache_scripts (id, project_id, cache_key, instructions, start_origin, output_schema, version)
            VALUES (${makeId("cs")}, ${input.projectId}, ${key}, ${normalizeInstructions(input.instructions)}, ${input.startOrigin},
              ${input.outputSchema === undefined || input.outputSchema === null ? null : JSON.stringify(input.outputSchema)}::jsonb, 1)
            ON CONFLICT (project_id, cache_key) DO UPDATE SET version = cache_scripts.version + 1, updated_at = now()
            RETURNING id, version`
          const row = decodeSaved(rows[0])
          yield* sql`
            INSERT INTO cache_script_versions (script_id, version, steps, source_run_id, healed_steps)
            VALUES (${row.id}, ${row.version}, ${JSON.stringify(input.steps)}::jsonb, ${input.sourceRunId}, ${input.healedSteps})`
          return row
        })).pipe(Effect.orDie)

      const recordUse = (scriptId: CacheScriptId, healed: boolean) =>
        sql`UPDATE cache_scripts SET hit_count = hit_count + 1, heal_count = heal_count + ${healed ? 1 : 0}, last_used_at = now()
          WHERE id = ${scriptId}`.pipe(Effect.asVoid, Effect.orDie)

      const list = (projectId: ProjectId, limit: number, beforeId: string | undefined) =>
        sql`${selectScript} WHERE s.project_id = ${projectId} ${beforeId === undefined ? sql`` : sql`AND s.id < ${beforeId}`}
          ORDER BY s.id DESC LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map(toScript)), Effect.orDie)

      const get = (projectId: ProjectId, scriptId: CacheScriptId) =>
        Effect.gen(function*() {
          const rows = yield* sql`${selectScript} WHERE s.project_id = ${projectId} AND s.id = ${scriptId}`.pipe(Effect.orDie)
          if (rows.length === 0) return yield* new CacheScriptNotFound({ scriptId })
          const versions = yield* sql`
            SELECT version, source_run_id, healed_steps, created_at FROM cache_script_versions
            WHERE script_id = ${scriptId} ORDER BY version DESC`.pipe(Effect.orDie)
          return { ...toScript(rows[0]), versions: versions.map((row) => decodeVersion(row)) }
        })

      const remove = (projectId: ProjectId, scriptId: CacheScriptId) =>
        Effect.gen(function*() {
          const deleted = yield* sql`DELETE FROM cache_scripts WHERE project_id = ${projectId} AND id = ${scriptId} RETURNING id`.pipe(Effect.orDie)
          if (deleted.length === 0) return yield* new CacheScriptNotFound({ scriptId })
        })

      return CacheScriptStore.of(withMethodSpans("CacheScriptStore", { find, save, recordUse, list, get, remove }))
    })
  )
}
