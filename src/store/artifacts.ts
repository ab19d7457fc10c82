/** Files a run produces (DeepResearch: final.md, citations.json, confidence.json), one per name. */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { makeId } from "../domain/ids.ts"

export interface ArtifactRow {
  readonly id: string
  readonly run_id: string
  readonly name: string
  readonly content_type: string
  readonly size_bytes: number
  readonly created_at: Date
}

export interface NewArtifact {
  readonly name: string
  readonly contentType: string
  readonly content: string
}

export class ArtifactStore extends Context.Service<ArtifactStore, {
  /** Writes the run's artifacts in one transaction; writing a name again replaces its content and keeps its id. */
  readonly putAll: (runId: string, artifacts: ReadonlyArray<NewArtifact>) => Effect.Effect<ReadonlyArray<ArtifactRow>>
  readonly list: (runId: string) => Effect.Effect<ReadonlyArray<ArtifactRow>>
  readonly content: (runId: string, artifactId: string) => Effect.Effect<{ readonly contentType: string; readonly content: string } | undefined>
}>()("wa/store/ArtifactStore") {
  static readonly layer = Layer.effect(
    ArtifactStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const columns = sql`id, run_id, name, content_type, octet_length(content)::int AS size_bytes, created_at`
      return ArtifactStore.of({
        putAll: (runId, artifacts) =>
          sql.withTransaction(Effect.forEach(artifacts, (artifact) =>
            sql<ArtifactRow>`
              INSERT INTO run_artifacts (id, run_id, name, content_type, content)
              VALUES (${makeId("art")}, ${runId}, ${artifact.name}, ${artifact.contentType}, ${artifact.content})
              ON CONFLICT (run_id, name) DO UPDATE SET content = excluded.content, content_type = excluded.content_type
              RETURNING ${columns}`.pipe(Effect.map((rows) => rows[0]!)))).pipe(Effect.orDie),
        list: (runId) => sql<ArtifactRow>`SELECT ${columns} FROM run_artifacts WHERE run_id = ${runId} ORDER BY name DESC`.pipe(Effect.orDie),
        content: (runId, artifactId) =>
          sql<{ content_type: string; content: string }>`
            SELECT content_type, content FROM run_artifacts WHERE run_id = ${runId} AND id = ${artifactId}`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : { contentType: rows[0].content_type, content: rows[0].content }),
            Effect.orDie
          )
      })
    })
  )
}
