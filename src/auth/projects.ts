/** Projects: the unit an API key is scoped to. */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { makeId } from "../domain/ids.ts"
import type { ProjectId } from "../domain/run.ts"

export interface ProjectRow {
  readonly id: ProjectId
  readonly name: string
  readonly created_at: Date
}

export class Projects extends Context.Service<Projects, {
  readonly create: (name: string) => Effect.Effect<ProjectRow>
  readonly find: (id: string) => Effect.Effect<ProjectRow | undefined>
  readonly count: Effect.Effect<number>
  /** The secret that signs the project's callbacks (GET /v1/projects/{pid}/webhook_secret, admin keys). */
  readonly webhookSecret: (id: string) => Effect.Effect<string | undefined>
}>()("wa/auth/Projects") {
  static readonly layer = Layer.effect(
    Projects,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return Projects.of({
        create: (name) =>
          sql<ProjectRow>`INSERT INTO projects (id, name) VALUES (${makeId("proj")}, ${name}) RETURNING *`.pipe(
            Effect.map((rows) => rows[0]!),
            Effect.orDie
          ),
        find: (id) =>
          sql<ProjectRow>`SELECT * FROM projects WHERE id = ${id}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie),
        count: sql<{ n: string }>`SELECT count(*)::text AS n FROM projects`.pipe(
          Effect.map((rows) => Number(rows[0]!.n)),
          Effect.orDie
        ),
        webhookSecret: (id) =>
          sql<{ webhook_secret: string }>`SELECT webhook_secret FROM projects WHERE id = ${id}`.pipe(
            Effect.map((rows) => rows[0]?.webhook_secret),
            Effect.orDie
          )
      })
    })
  )
}
