/**
 * Skills in PostgreSQL (tables skills and skill_versions, migration 0031): create, a new version on
 * update, list, get (with versions), delete, the current versions of the names a run lists, and a
 * use count. The steps of a script skill come from a run's cached script (cache_script_versions).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { CachedSteps, type CachedStep } from "../domain/cache-script.ts"
import { SkillLimitReached, SkillNameTaken, SkillNotFound } from "../domain/errors.ts"
import { makeId } from "../domain/ids.ts"
import { SkillId } from "../domain/id-schemas.ts"
import { SkillKind, type SkillVersion } from "../domain/skill.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { ProjectId, type RunId } from "../domain/run.ts"
import { decodeRows } from "../domain/rows.ts"

export interface Skill extends SkillVersion {
  readonly id: SkillId
  readonly project_id: ProjectId
  readonly name: string
  readonly call_count: number
  readonly last_used_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

export interface SkillDetail extends Skill {
  readonly versions: ReadonlyArray<{ readonly version: number; readonly kind: SkillKind; readonly source_run_id: string | null; readonly created_at: Date }>
}

export interface SkillContent {
  readonly description: string
  readonly parameters: Record<string, unknown>
  readonly kind: SkillKind
  readonly instructions: string | null
  readonly steps: ReadonlyArray<CachedStep> | null
  readonly sourceRunId: string | null
}

const Row = Schema.Struct({
  id: SkillId,
  project_id: ProjectId,
  name: Schema.String,
  version: Schema.Number,
  call_count: Schema.Number,
  last_used_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  description: Schema.String,
  parameters: Schema.Record(Schema.String, Schema.Unknown),
  kind: SkillKind,
  instructions: Schema.NullOr(Schema.String),
  steps: Schema.NullOr(CachedSteps),
  source_run_id: Schema.NullOr(Schema.String)
})
const decodeRow = Schema.decodeUnknownSync(Row)

const VersionRow = Schema.Struct({ version: Schema.Number, kind: SkillKind, source_run_id: Schema.NullOr(Schema.String), created_at: Schema.Date })
const decodeVersion = Schema.decodeUnknownSync(VersionRow)

/** The project's skills, counted by a create. */
const countRows = decodeRows(Schema.Struct({ n: Schema.Number }))
/** An updated skill: its id and new version. */
const bumpedRows = decodeRows(Schema.Struct({ id: SkillId, version: Schema.Number }))
/** The steps of a run's cached script. */
const scriptRows = decodeRows(Schema.Struct({ steps: CachedSteps }))

export class SkillStore extends Context.Service<SkillStore, {
  /** Creates the skill unless the project already has `maxSkills` (checked in the inserting transaction). */
  readonly create: (projectId: ProjectId, name: string, content: SkillContent, maxSkills: number) => Effect.Effect<Skill, SkillNameTaken | SkillLimitReached>
  /** Saves `content` as the skill's next version. */
  readonly update: (projectId: ProjectId, idOrName: string, content: SkillContent) => Effect.Effect<Skill, SkillNotFound>
  readonly list: (projectId: ProjectId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<Skill>>
  readonly get: (projectId: ProjectId, idOrName: string) => Effect.Effect<SkillDetail, SkillNotFound>
  readonly remove: (projectId: ProjectId, idOrName: string) => Effect.Effect<void, SkillNotFound>
  /** The current versions of the named skills; the names the project has no skill for are in `missing`. */
  readonly forRun: (projectId: ProjectId, names: ReadonlyArray<string>) => Effect.Effect<{ readonly skills: ReadonlyArray<Skill>; readonly missing: ReadonlyArray<string> }>
  readonly recordCall: (skillId: SkillId) => Effect.Effect<void>
  /** The steps of the cached script a run saved (its newest version), if it saved one. */
  readonly scriptOfRun: (projectId: ProjectId, runId: RunId) => Effect.Effect<ReadonlyArray<CachedStep> | undefined>
}>()("wa/store/SkillStore") {
  static readonly layer = Layer.effect(
    SkillStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const select = sql`
        SELECT s.id, s.project_id, s.name, s.version, s.call_count, s.last_used_at, s.created_at, s.updated_at,
          v.description, v.parameters, v.kind, v.instructions, v.steps, v.source_run_id
        FROM skills s JOIN skill_versions v ON v.skill_id = s.id AND v.version = s.version`
      const byIdOrName = (projectId: ProjectId, idOrName: string) =>
        sql`s.project_id = ${projectId} AND (s.id = ${idOrName} OR s.name = ${idOrName})`

      const insertVersion = (skillId: SkillId, version: number, content: SkillContent) =>
        sql`INSERT INTO skill_versions (skill_id, version, description, parameters, kind, instructions, steps, source_run_id)
          VALUES (${skillId}, ${version}, ${content.description}, ${JSON.stringify(content.parameters)}::jsonb, ${content.kind},
            ${content.instructions}, ${content.steps === null ? null : JSON.stringify(content.steps)}::jsonb, ${content.sourceRunId})`

      const getOne = (projectId: ProjectId, idOrName: string) =>
        Effect.gen(function*() {
          const rows = yield* sql`${select} WHERE ${byIdOrName(projectId, idOrName)}`.pipe(Effect.orDie)
          if (rows.length === 0) return yield* new SkillNotFound({ skill: idOrName })
          return decodeRow(rows[0])
        })

      const create = (projectId: ProjectId, name: string, content: SkillContent, maxSkills: number) =>
        Effect.gen(function*() {
          const id = makeId("sk")
          const outcome = yield* sql.withTransaction(Effect.gen(function*() {
            // Creates of one project take turns, so the count below holds until this one commits.
            yield* sql`SELECT pg_advisory_xact_lock(hashtext(${`skills:${projectId}`}))`
            const [counted] = yield* countRows(sql`SELECT count(*)::int AS n FROM skills WHERE project_id = ${projectId}`)
            if ((counted?.n ?? 0) >= maxSkills) return { _tag: "full" as const, count: counted?.n ?? 0 }
            const rows = yield* sql`INSERT INTO skills (id, project_id, name, version) VALUES (${id}, ${projectId}, ${name}, 1)
              ON CONFLICT (project_id, name) DO NOTHING RETURNING id`
            if (rows.length === 0) return { _tag: "taken" as const }
            yield* insertVersion(id, 1, content)
            return { _tag: "created" as const }
          })).pipe(Effect.orDie)
          if (outcome._tag === "full") return yield* new SkillLimitReached({ count: outcome.count })
          if (outcome._tag === "taken") return yield* new SkillNameTaken({ name })
          return yield* getOne(projectId, id).pipe(Effect.orDie)
        })

      const update = (projectId: ProjectId, idOrName: string, content: SkillContent) =>
        Effect.gen(function*() {
          const updated = yield* sql.withTransaction(Effect.gen(function*() {
            const rows = yield* bumpedRows(sql`
              UPDATE skills s SET version = s.version + 1, updated_at = now() WHERE ${byIdOrName(projectId, idOrName)}
              RETURNING s.id, s.version`)
            if (rows.length === 0) return undefined
            yield* insertVersion(rows[0]!.id, rows[0]!.version, content)
            return rows[0]!.id
          })).pipe(Effect.orDie)
          if (updated === undefined) return yield* new SkillNotFound({ skill: idOrName })
          return yield* getOne(projectId, updated).pipe(Effect.orDie)
        })

      const list = (projectId: ProjectId, limit: number, beforeId: string | undefined) =>
        sql`${select} WHERE s.project_id = ${projectId} ${beforeId === undefined ? sql`` : sql`AND s.id < ${beforeId}`}
          ORDER BY s.id DESC LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map((row) => decodeRow(row))), Effect.orDie)

      const get = (projectId: ProjectId, idOrName: string) =>
        Effect.gen(function*() {
          const skill = yield* getOne(projectId, idOrName)
          const versions = yield* sql`SELECT version, kind, source_run_id, created_at FROM skill_versions
            WHERE skill_id = ${skill.id} ORDER BY version DESC`.pipe(Effect.orDie)
          return { ...skill, versions: versions.map((row) => decodeVersion(row)) }
        })

      const remove = (projectId: ProjectId, idOrName: string) =>
        Effect.gen(function*() {
          const rows = yield* sql`DELETE FROM skills s WHERE ${byIdOrName(projectId, idOrName)} RETURNING s.id`.pipe(Effect.orDie)
          if (rows.length === 0) return yield* new SkillNotFound({ skill: idOrName })
        })

      const forRun = (projectId: ProjectId, names: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          if (names.length === 0) return { skills: [], missing: [] }
          const rows = yield* sql`${select} WHERE s.project_id = ${projectId} AND s.name IN ${sql.in(names)}`.pipe(Effect.orDie)
          const skills = rows.map((row) => decodeRow(row))
          return { skills, missing: names.filter((name) => !skills.some((skill) => skill.name === name)) }
        })

      const recordCall = (skillId: SkillId) =>
        sql`UPDATE skills SET call_count = call_count + 1, last_used_at = now() WHERE id = ${skillId}`.pipe(Effect.asVoid, Effect.orDie)

      const scriptOfRun = (projectId: ProjectId, runId: RunId) =>
        scriptRows(sql`
          SELECT v.steps FROM cache_script_versions v JOIN cache_scripts s ON s.id = v.script_id
          WHERE s.project_id = ${projectId} AND v.source_run_id = ${runId} ORDER BY v.created_at DESC LIMIT 1`).pipe(
          Effect.map((rows) => rows[0]?.steps),
          Effect.orDie
        )

      return SkillStore.of(withMethodSpans("SkillStore", { create, update, list, get, remove, forRun, recordCall, scriptOfRun }))
    })
  )
}
