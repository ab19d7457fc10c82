/**
 * Projects in PostgreSQL: their rows and the webhook secret. Rows are decoded through Schema.
 * Also the lock of the first start (src/auth/bootstrap.ts): several nodes may start at once on one
 * database, and the transaction that holds it lets exactly one of them make the default project.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { makeId } from "../domain/ids.ts"
import { ProjectId } from "../domain/run.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { decodeRows } from "../domain/rows.ts"

/** The advisory lock the first start takes (its number is the one every node uses). */
const BOOTSTRAP_LOCK = 7261001

export const ProjectRow = Schema.Struct({
  id: ProjectId,
  name: Schema.String,
  created_at: Schema.Date
})
export type ProjectRow = typeof ProjectRow.Type

const projectRows = decodeRows(ProjectRow)
const CountRow = Schema.Struct({ n: Schema.FiniteFromString })
const WebhookSecretRow = Schema.Struct({ webhook_secret: Schema.String })

export class ProjectStore extends Context.Service<ProjectStore, {
  readonly insert: (name: string) => Effect.Effect<ProjectRow>
  readonly find: (id: ProjectId) => Effect.Effect<ProjectRow | undefined>
  readonly count: Effect.Effect<number>
  readonly webhookSecret: (id: ProjectId) => Effect.Effect<string | undefined>
  /** Runs `effect` in a transaction that holds the first start's lock (the statements of other stores in it join it). */
  readonly withBootstrapLock: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}>()("wa/auth/ProjectStore") {
  static readonly layer = Layer.effect(
    ProjectStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return ProjectStore.of(withMethodSpans("ProjectStore", {
        insert: (name) =>
          projectRows(sql`INSERT INTO projects (id, name) VALUES (${makeId("proj")}, ${name}) RETURNING id, name, created_at`).pipe(
            Effect.map((rows) => rows[0]!)
          ),
        find: (id) => projectRows(sql`SELECT id, name, created_at FROM projects WHERE id = ${id}`).pipe(Effect.map((rows) => rows[0])),
        count: decodeRows(CountRow)(sql`SELECT count(*)::text AS n FROM projects`).pipe(Effect.map((rows) => rows[0]!.n)),
        webhookSecret: (id) =>
          decodeRows(WebhookSecretRow)(sql`SELECT webhook_secret FROM projects WHERE id = ${id}`).pipe(
            Effect.map((rows) => rows[0]?.webhook_secret)
          ),
        withBootstrapLock: (effect) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* sql`SELECT pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`
            return yield* effect
          })).pipe(Effect.catchTag("SqlError", Effect.die))
      }))
    })
  )
}
