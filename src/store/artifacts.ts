/**
 * Files a run produces, one per name: DeepResearch's final.md, citations.json and confidence.json
 * (text, in `content`), and a DoAnything run's recording (bytes, in `data`, gzip-compressed).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { makeId } from "../domain/ids.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { RunId } from "../domain/run.ts"
import { ArtifactId } from "../domain/id-schemas.ts"
import { decodeRows } from "../domain/rows.ts"

/** An artifact's metadata as the store reads it (its body is read apart: `content`, `body`). */
export const ArtifactRow = Schema.Struct({
  id: ArtifactId,
  run_id: RunId,
  name: Schema.String,
  content_type: Schema.String,
  /** Bytes stored: the text's UTF-8 length, or the binary data's length (compressed, when encoded). */
  size_bytes: Schema.Number,
  /** `gzip` when the stored bytes are compressed (the content type describes them uncompressed). */
  content_encoding: Schema.NullOr(Schema.String),
  created_at: Schema.Date
})
export type ArtifactRow = typeof ArtifactRow.Type

const artifactRows = decodeRows(ArtifactRow)
const contentRows = decodeRows(Schema.Struct({ content_type: Schema.String, content: Schema.String }))
/** A row with its stored body: text in `content`, or bytes in `data` (null for a text artifact). */
const bodyRows = decodeRows(Schema.Struct({ ...ArtifactRow.fields, content: Schema.String, data: Schema.NullOr(Schema.Uint8Array) }))

export interface NewArtifact {
  readonly name: string
  readonly contentType: string
  readonly content: string
}

export interface NewBinaryArtifact {
  readonly name: string
  readonly contentType: string
  readonly contentEncoding: string | null
  readonly data: Uint8Array
}

/** An artifact's stored body: text, or bytes (possibly compressed, see `contentEncoding`). */
export interface ArtifactBody {
  readonly row: ArtifactRow
  readonly body: string | Uint8Array
}

export class ArtifactStore extends Context.Service<ArtifactStore, {
  /** Writes the run's artifacts in one transaction; writing a name again replaces its content and keeps its id. */
  readonly putAll: (runId: RunId, artifacts: ReadonlyArray<NewArtifact>) => Effect.Effect<ReadonlyArray<ArtifactRow>>
  /** Writes one binary artifact; writing its name again replaces its bytes and keeps its id. */
  readonly putBinary: (runId: RunId, artifact: NewBinaryArtifact) => Effect.Effect<ArtifactRow>
  /** The run's artifacts, newest first; with `page`, at most `limit` of them before the id `before`. */
  readonly list: (runId: RunId, page?: { readonly limit: number; readonly before: string | undefined }) => Effect.Effect<ReadonlyArray<ArtifactRow>>
  readonly content: (runId: RunId, artifactId: ArtifactId) => Effect.Effect<{ readonly contentType: string; readonly content: string } | undefined>
  /** The artifact of that name of the run (metadata only). */
  readonly findByName: (runId: RunId, name: string) => Effect.Effect<ArtifactRow | undefined>
  /** An artifact and its stored body; `runId` undefined looks the artifact up by id alone (signed URLs). */
  readonly body: (artifactId: ArtifactId, runId?: RunId) => Effect.Effect<ArtifactBody | undefined>
}>()("wa/store/ArtifactStore") {
  static readonly layer = Layer.effect(
    ArtifactStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const columns = sql`id, run_id, name, content_type, coalesce(octet_length(data), octet_length(content))::int AS size_bytes, content_encoding, created_at`
      return ArtifactStore.of(withMethodSpans("ArtifactStore", {
        putAll: (runId, artifacts) =>
          sql.withTransaction(Effect.forEach(artifacts, (artifact) =>
            artifactRows(sql`
              INSERT INTO run_artifacts (id, run_id, name, content_type, content)
              VALUES (${makeId("art")}, ${runId}, ${artifact.name}, ${artifact.contentType}, ${artifact.content})
              ON CONFLICT (run_id, name) DO UPDATE SET content = excluded.content, content_type = excluded.content_type,
                data = NULL, content_encoding = NULL
              RETURNING ${columns}`).pipe(Effect.map((rows) => rows[0]!)))).pipe(Effect.orDie),
        putBinary: (runId, artifact) =>
          artifactRows(sql`
            INSERT INTO run_artifacts (id, run_id, name, content_type, content, data, content_encoding)
            VALUES (${makeId("art")}, ${runId}, ${artifact.name}, ${artifact.contentType}, '', ${Buffer.from(artifact.data)}, ${artifact.contentEncoding})
            ON CONFLICT (run_id, name) DO UPDATE SET content = '', data = excluded.data, content_type = excluded.content_type,
              content_encoding = excluded.content_encoding
            RETURNING ${columns}`).pipe(Effect.map((rows) => rows[0]!)),
        list: (runId, page) =>
          artifactRows(sql`SELECT ${columns} FROM run_artifacts WHERE run_id = ${runId}
            ${page?.before === undefined ? sql`` : sql`AND id < ${page.before}`}
            ORDER BY id DESC ${page === undefined ? sql`` : sql`LIMIT ${page.limit}`}`),
        content: (runId, artifactId) =>
          contentRows(sql`
            SELECT content_type, content FROM run_artifacts WHERE run_id = ${runId} AND id = ${artifactId}`).pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : { contentType: rows[0].content_type, content: rows[0].content })
          ),
        findByName: (runId, name) =>
          artifactRows(sql`SELECT ${columns} FROM run_artifacts WHERE run_id = ${runId} AND name = ${name}`).pipe(
            Effect.map((rows) => rows[0])
          ),
        body: (artifactId, runId) =>
          bodyRows(sql`
            SELECT ${columns}, content, data FROM run_artifacts
            WHERE id = ${artifactId} ${runId === undefined ? sql`` : sql`AND run_id = ${runId}`}`).pipe(
            Effect.map((rows) => {
              const found = rows[0]
              if (found === undefined) return undefined
              const { content, data, ...row } = found
              return { row, body: data === null ? content : new Uint8Array(data) }
            })
          )
      }))
    })
  )
}
