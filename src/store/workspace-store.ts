/**
 * WorkspaceStore: a project's workspaces and their files, in PostgreSQL so every runner reads the
 * same bytes (see migration.ts for the layout), and the signed download URLs of those files.
 *
 * - Writes stream: bytes are cut into chunks of CHUNK_BYTES and inserted as they arrive, so an
 *   upload never sits in memory whole. The size limit is enforced while reading; past it the
 *   upload stops with FileTooLarge and its chunks are deleted: nothing is stored.
 * - A file is switched to its new content in one transaction at the end of the write (the old
 *   content is deleted there), so a reader sees the old file or the new one, never a mix.
 * - Download URLs carry `expires` and an HMAC-SHA256 `signature` over the workspace, the name and
 *   the expiry, keyed by the service's shared URL-signing secret (service_secrets 'url_signing',
 *   the same one screenshot URLs use), so any node can check a URL another node issued.
 */
import { Context, Effect, Layer, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { AppConfig } from "../config/config.ts"
import { makeId } from "../domain/ids.ts"
import { createOnce } from "./keyed-create.ts"
import { loadUrlSigner } from "./url-signer.ts"
import { type WireBody, WorkspaceFileNotFound, WorkspaceNotFound } from "../domain/errors.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { ProjectId } from "../domain/run.ts"
import { WorkspaceId } from "../domain/id-schemas.ts"
import { decodeRows } from "../domain/rows.ts"

/** Bytes per stored chunk: bytea values stay small and a download streams chunk by chunk. */
export const CHUNK_BYTES = 1024 * 1024
/** Lifetime of a signed download URL. */
export const FILE_URL_TTL_SECONDS = 15 * 60
/** A blob no file points at after this long is an upload whose process died; it is swept. */
const ORPHAN_BLOB_AGE = "1 day"

/** The file is larger than the configured limit; nothing was stored. */
export class FileTooLarge extends Schema.TaggedError<FileTooLarge>()("FileTooLarge", {
  limitBytes: Schema.Number
}) {
  get httpStatus() { return 413 as const }
  get code() { return "payload_too_large" }
  wire(): WireBody {
    return { detail: `the file is larger than ${this.limitBytes} bytes; nothing was stored`, extra: { limit_bytes: this.limitBytes } }
  }
}

/** The file name breaks the rules of `fileNameProblem`. */
export class InvalidFileName extends Schema.TaggedError<InvalidFileName>()("InvalidFileName", {
  name: Schema.String,
  reason: Schema.String
}) {
  get httpStatus() { return 422 as const }
  get code() { return "validation_error" }
  wire(): WireBody {
    return { detail: `invalid file name: ${this.reason}`, extra: { errors: [{ loc: ["path", "name"], msg: this.reason, type: "value_error" }] } }
  }
}

export const WorkspaceRow = Schema.Struct({
  id: WorkspaceId,
  project_id: ProjectId,
  name: Schema.NullOr(Schema.String),
  file_count: Schema.Number,
  size_bytes: Schema.Number,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type WorkspaceRow = typeof WorkspaceRow.Type

/** Where a file came from. */
export const FileSource = Schema.Literals(["upload", "download", "agent"])
export type FileSource = typeof FileSource.Type

export const WorkspaceFileRow = Schema.Struct({
  workspace_id: WorkspaceId,
  name: Schema.String,
  size_bytes: Schema.Number,
  content_type: Schema.String,
  source: FileSource,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type WorkspaceFileRow = typeof WorkspaceFileRow.Type

const workspaceRows = decodeRows(WorkspaceRow)
const fileRows = decodeRows(WorkspaceFileRow)
/** A file row with the blob that holds its bytes (the store's own; callers get WorkspaceFileRow). */
const storedFileRows = decodeRows(Schema.Struct({ ...WorkspaceFileRow.fields, blob_id: Schema.String }))
const blobIdRows = decodeRows(Schema.Struct({ blob_id: Schema.String }))
const seqRows = decodeRows(Schema.Struct({ seq: Schema.Number }))
const chunkRows = decodeRows(Schema.Struct({ data: Schema.Uint8Array }))
const totalRows = decodeRows(Schema.Struct({ total: Schema.Number }))

export interface SignedUrl {
  /** Path and query, relative to the service's base URL. */
  readonly url: string
  readonly expires_at: Date
}

export interface PutOptions {
  readonly contentType: string
  readonly source: FileSource
  /** `replace` overwrites a file of that name; `rename` keeps it and picks `name (1).ext`, ... */
  readonly onConflict: "replace" | "rename"
  /** Limit for this write; the configured WA_WORKSPACE_MAX_FILE_BYTES when absent. */
  readonly maxBytes?: number
}

/**
 * Characters no file name may hold: C0 and C1 controls, DEL, and the bidirectional marks,
 * embeddings, overrides and isolates (they make `invoice\u202Etxt.exe` read as `invoiceexe.txt`).
 */
const forbiddenInName = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/
const forbiddenInNameGlobal = new RegExp(forbiddenInName.source, "g")

/**
 * The one spelling of a file name: Unicode NFC, so `café` typed precomposed or decomposed is one
 * name. Every lookup, write and signature goes through it.
 */
export const canonicalFileName = (name: string): string => name.isWellFormed() ? name.normalize("NFC") : name

/**
 * Why a file name (already canonical) is refused, or undefined. Names are flat (no folders): 1 to
 * 255 characters, no `/` or `\`, no control or bidi-override characters, not `.` or `..`.
 */
export const fileNameProblem = (name: string): string | undefined => {
  if (name.length === 0) return "the name is empty"
  // Characters are code points, as the path parameter's schema counts them (not UTF-16 units).
  if ([...name].length > 255) return "the name is longer than 255 characters"
  if (!name.isWellFormed()) return "the name holds an invalid character"
  if (/[/\\]/.test(name)) return "the name may not contain / or \\"
  if (forbiddenInName.test(name)) return "the name may not contain control or bidirectional-override characters"
  if (name === "." || name === "..") return "the name may not be . or .."
  return undefined
}

/** A name for a download suggested by a page: its last path segment, cleaned of what fileNameProblem refuses. */
export const sanitizeFileName = (suggested: string): string => {
  const base = suggested.split(/[/\\]/).at(-1) ?? ""
  const cleaned = Array.from(canonicalFileName(base.toWellFormed().replace(forbiddenInNameGlobal, "")).trim()).slice(0, 255).join("")
  return cleaned === "" || cleaned === "." || cleaned === ".." ? "download" : cleaned.toWellFormed()
}

/** `report.csv` → `report (n).csv` */
const numbered = (name: string, n: number): string => {
  const dot = name.lastIndexOf(".")
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ""]
  return Array.from(`${stem} (${n})${ext}`).slice(-255).join("")
}

const contentTypes: Record<string, string> = {
  txt: "text/plain", csv: "text/csv", json: "application/json", html: "text/html", htm: "text/html", md: "text/markdown",
  xml: "application/xml", pdf: "application/pdf", png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif",
  webp: "image/webp", svg: "image/svg+xml", zip: "application/zip", gz: "application/gzip", tsv: "text/tab-separated-values",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
}

/** A content type from a file name's extension (application/octet-stream when unknown). */
export const contentTypeOf = (name: string): string =>
  contentTypes[name.slice(name.lastIndexOf(".") + 1).toLowerCase()] ?? "application/octet-stream"

export class WorkspaceStore extends Context.Service<WorkspaceStore, {
  readonly create: (projectId: ProjectId, name: string | null) => Effect.Effect<WorkspaceRow>
  /** Newest first; `beforeId` is the cursor. */
  readonly list: (projectId: ProjectId, limit: number, beforeId: string | undefined) => Effect.Effect<{ readonly rows: ReadonlyArray<WorkspaceRow>; readonly total: number }>
  readonly find: (projectId: ProjectId, workspaceId: WorkspaceId) => Effect.Effect<WorkspaceRow, WorkspaceNotFound>
  /** Deletes the workspace with its files. */
  readonly remove: (projectId: ProjectId, workspaceId: WorkspaceId) => Effect.Effect<WorkspaceRow, WorkspaceNotFound>
  /** The workspace's files by name; with `page`, at most `limit` of them after the name `after`. */
  readonly listFiles: (workspaceId: WorkspaceId, page?: { readonly limit: number; readonly after: string | undefined }) => Effect.Effect<ReadonlyArray<WorkspaceFileRow>>
  readonly findFile: (workspaceId: WorkspaceId, name: string) => Effect.Effect<WorkspaceFileRow, WorkspaceFileNotFound>
  /** Streams `body` into the file `name`; the row of the file as stored (its name may differ under `rename`). */
  readonly putFile: <E>(workspaceId: WorkspaceId, name: string, body: Stream.Stream<Uint8Array, E>, options: PutOptions) => Effect.Effect<
    WorkspaceFileRow,
    E | FileTooLarge | InvalidFileName | WorkspaceNotFound
  >
  /** The first `limit` bytes of the file (all of it without a limit), and whether there was more. */
  readonly readFile: (workspaceId: WorkspaceId, name: string, limit?: number) => Effect.Effect<
    { readonly file: WorkspaceFileRow; readonly bytes: Uint8Array; readonly truncated: boolean },
    WorkspaceFileNotFound
  >
  /** The file's bytes as a stream of its chunks (for a download response). */
  readonly streamFile: (workspaceId: WorkspaceId, name: string) => Effect.Effect<
    { readonly file: WorkspaceFileRow; readonly stream: Stream.Stream<Uint8Array> },
    WorkspaceFileNotFound
  >
  readonly deleteFile: (workspaceId: WorkspaceId, name: string) => Effect.Effect<WorkspaceFileRow, WorkspaceFileNotFound>
  /** A download URL for the file, valid FILE_URL_TTL_SECONDS. */
  readonly signUrl: (workspaceId: WorkspaceId, name: string) => Effect.Effect<SignedUrl>
  /** Checks a download URL's signature and expiry (the signature first: a forged expiry is "invalid"). */
  readonly verifyUrl: (workspaceId: WorkspaceId, name: string, expires: number, signature: string) => Effect.Effect<"ok" | "expired" | "invalid">
  readonly maxFileBytes: number
}>()("wa/workspaces/WorkspaceStore") {
  static readonly layer = Layer.effect(
    WorkspaceStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const signer = yield* loadUrlSigner
      const message = (workspaceId: WorkspaceId, name: string, expires: number) =>
        `workspace_file\u0000${workspaceId}\u0000${canonicalFileName(name)}\u0000${expires}`
      const sign = (workspaceId: WorkspaceId, name: string, expires: number) => signer.sign(message(workspaceId, name, expires))

      const workspaceColumns = sql`
        w.id, w.project_id, w.name, w.created_at, w.updated_at,
        (SELECT count(*)::int FROM workspace_files f WHERE f.workspace_id = w.id) AS file_count,
        (SELECT coalesce(sum(f.size_bytes), 0)::float8 FROM workspace_files f WHERE f.workspace_id = w.id) AS size_bytes`
      const fileColumns = sql`workspace_id, name, size_bytes::float8 AS size_bytes, content_type, source, created_at, updated_at`

      const find = (projectId: ProjectId, workspaceId: WorkspaceId) =>
        workspaceRows(sql`SELECT ${workspaceColumns} FROM workspaces w WHERE w.id = ${workspaceId} AND w.project_id = ${projectId}`).pipe(
          Effect.flatMap((rows) => rows[0] === undefined ? Effect.fail(new WorkspaceNotFound({ workspaceId })) : Effect.succeed(rows[0]))
        )

      const findFile = (workspaceId: WorkspaceId, name: string) =>
        storedFileRows(sql`
          SELECT ${fileColumns}, blob_id FROM workspace_files WHERE workspace_id = ${workspaceId} AND name = ${canonicalFileName(name)}`).pipe(
          Effect.flatMap((rows) => rows[0] === undefined ? Effect.fail(new WorkspaceFileNotFound({ workspaceId, name })) : Effect.succeed(rows[0]))
        )

      const dropBlob = (blobId: string) => sql`DELETE FROM workspace_blobs WHERE id = ${blobId}`.pipe(Effect.orDie, Effect.asVoid)

      /** Writes the stream as chunks of `blobId`; fails with FileTooLarge past `limit`. */
      const writeChunks = <E>(blobId: string, body: Stream.Stream<Uint8Array, E>, limit: number) =>
        Effect.gen(function*() {
          let pending: Array<Uint8Array> = []
          let pendingBytes = 0
          let total = 0
          let seq = 0
          const flush = Effect.suspend(() => {
            if (pendingBytes === 0) return Effect.void
            const data = Buffer.concat(pending, pendingBytes)
            pending = []
            pendingBytes = 0
            return sql`INSERT INTO workspace_blob_chunks (blob_id, seq, data) VALUES (${blobId}, ${seq++}, ${data})`.pipe(Effect.orDie, Effect.asVoid)
          })
          yield* Stream.runForEach(body, (bytes) =>
            Effect.gen(function*() {
              total += bytes.length
              if (total > limit) return yield* new FileTooLarge({ limitBytes: limit })
              pending.push(bytes)
              pendingBytes += bytes.length
              if (pendingBytes >= CHUNK_BYTES) yield* flush
            }))
          yield* flush
          return total
        })

      /** Points the file at the finished blob in one transaction; the file's previous blob is deleted. */
      const commit = (workspaceId: WorkspaceId, requested: string, blobId: string, size: number, options: PutOptions) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`UPDATE workspace_blobs SET size_bytes = ${size} WHERE id = ${blobId}`
          const touched = yield* sql`UPDATE workspaces SET updated_at = now() WHERE id = ${workspaceId} RETURNING id`
          if (touched.length === 0) return yield* new WorkspaceNotFound({ workspaceId })
          if (options.onConflict === "replace") {
            const previous = yield* blobIdRows(sql`
              SELECT blob_id FROM workspace_files WHERE workspace_id = ${workspaceId} AND name = ${requested} FOR UPDATE`)
            const rows = yield* fileRows(sql`
              INSERT INTO workspace_files (workspace_id, name, blob_id, size_bytes, content_type, source)
              VALUES (${workspaceId}, ${requested}, ${blobId}, ${size}, ${options.contentType}, ${options.source})
              ON CONFLICT (workspace_id, name) DO UPDATE SET
                blob_id = excluded.blob_id, size_bytes = excluded.size_bytes, content_type = excluded.content_type,
                source = excluded.source, updated_at = now()
              RETURNING ${fileColumns}`)
            if (previous[0] !== undefined && previous[0].blob_id !== blobId) yield* sql`DELETE FROM workspace_blobs WHERE id = ${previous[0].blob_id}`
            return rows[0]!
          }
          // The workspace row is locked by the UPDATE above, so two renames cannot pick one name.
          for (let n = 0; ; n++) {
            const candidate = n === 0 ? requested : numbered(requested, n)
            const rows = yield* fileRows(sql`
              INSERT INTO workspace_files (workspace_id, name, blob_id, size_bytes, content_type, source)
              VALUES (${workspaceId}, ${candidate}, ${blobId}, ${size}, ${options.contentType}, ${options.source})
              ON CONFLICT (workspace_id, name) DO NOTHING
              RETURNING ${fileColumns}`)
            if (rows[0] !== undefined) return rows[0]
          }
        })).pipe(Effect.catchTag("SqlError", Effect.die))

      const putFile = <E>(workspaceId: WorkspaceId, requested: string, body: Stream.Stream<Uint8Array, E>, options: PutOptions) =>
        Effect.gen(function*() {
          const name = canonicalFileName(requested)
          const problem = fileNameProblem(name)
          if (problem !== undefined) return yield* new InvalidFileName({ name, reason: problem })
          // Leftovers of uploads whose process died mid-way (the index on created_at keeps it cheap).
          yield* sql`
            DELETE FROM workspace_blobs b WHERE b.created_at < now() - ${ORPHAN_BLOB_AGE}::interval
              AND NOT EXISTS (SELECT 1 FROM workspace_files f WHERE f.blob_id = b.id)`.pipe(Effect.orDie)
          const blobId = `blob_${randomUUID()}`
          const created = yield* sql`
            INSERT INTO workspace_blobs (id, workspace_id) SELECT ${blobId}, id FROM workspaces WHERE id = ${workspaceId} RETURNING id`.pipe(Effect.orDie)
          if (created.length === 0) return yield* new WorkspaceNotFound({ workspaceId })
          const limit = options.maxBytes ?? config.workspaceMaxFileBytes
          return yield* writeChunks(blobId, body, limit).pipe(
            Effect.flatMap((size) => commit(workspaceId, name, blobId, size, options)),
            // Nothing of a failed, refused or abandoned write stays behind.
            Effect.onError(() => dropBlob(blobId))
          )
        })

      const chunkSeqs = (blobId: string) =>
        seqRows(sql`SELECT seq FROM workspace_blob_chunks WHERE blob_id = ${blobId} ORDER BY seq`).pipe(
          Effect.map((rows) => rows.map((row) => row.seq))
        )
      const chunk = (blobId: string, seq: number) =>
        chunkRows(sql`SELECT data FROM workspace_blob_chunks WHERE blob_id = ${blobId} AND seq = ${seq}`).pipe(
          Effect.flatMap((rows) => rows[0] === undefined
            ? Effect.die(new Error("the file was replaced or deleted while it was read"))
            : Effect.succeed(new Uint8Array(rows[0].data.buffer, rows[0].data.byteOffset, rows[0].data.byteLength)))
        )

      const publicFile = ({ blob_id: _, ...file }: WorkspaceFileRow & { blob_id: string }): WorkspaceFileRow => file

      return WorkspaceStore.of(withMethodSpans("WorkspaceStore", {
        maxFileBytes: config.workspaceMaxFileBytes,
        // Once per Idempotency-Key, even across a crash (src/store/keyed-create.ts).
        create: (projectId, name) =>
          createOnce(
            sql,
            workspaceRows(sql`
              INSERT INTO workspaces (id, project_id, name) VALUES (${makeId("ws")}, ${projectId}, ${name})
              RETURNING id, project_id, name, created_at, updated_at, 0 AS file_count, 0 AS size_bytes`).pipe(Effect.map((rows) => rows[0]!)),
            (row) => row.id,
            (id) => find(projectId, WorkspaceId.make(id)).pipe(Effect.catchTag("WorkspaceNotFound", () => Effect.succeed(undefined)))
          ).pipe(Effect.orDie),
        list: (projectId, limit, beforeId) =>
          Effect.all({
            rows: workspaceRows(sql`
              SELECT ${workspaceColumns} FROM workspaces w
              WHERE w.project_id = ${projectId} ${beforeId === undefined ? sql`` : sql`AND w.id < ${beforeId}`}
              ORDER BY w.id DESC LIMIT ${limit}`),
            total: totalRows(sql`SELECT count(*)::int AS total FROM workspaces WHERE project_id = ${projectId}`).pipe(
              Effect.map((rows) => rows[0]?.total ?? 0)
            )
          }),
        find,
        remove: (projectId, workspaceId) =>
          Effect.gen(function*() {
            const row = yield* find(projectId, workspaceId)
            yield* sql`DELETE FROM workspaces WHERE id = ${workspaceId} AND project_id = ${projectId}`.pipe(Effect.orDie)
            return row
          }),
        listFiles: (workspaceId, page) =>
          fileRows(sql`SELECT ${fileColumns} FROM workspace_files WHERE workspace_id = ${workspaceId}
            ${page?.after === undefined ? sql`` : sql`AND name > ${page.after}`}
            ORDER BY name ${page === undefined ? sql`` : sql`LIMIT ${page.limit}`}`),
        findFile: (workspaceId, name) => Effect.map(findFile(workspaceId, name), publicFile),
        putFile,
        readFile: (workspaceId, name, limit) =>
          Effect.gen(function*() {
            const file = yield* findFile(workspaceId, name)
            const parts: Array<Uint8Array> = []
            let read = 0
            for (const seq of yield* chunkSeqs(file.blob_id)) {
              if (limit !== undefined && read >= limit) break
              const data = yield* chunk(file.blob_id, seq)
              parts.push(data)
              read += data.length
            }
            const all = Buffer.concat(parts)
            const bytes = limit !== undefined && all.length > limit ? all.subarray(0, limit) : all
            return { file: publicFile(file), bytes: new Uint8Array(bytes), truncated: bytes.length < file.size_bytes }
          }),
        streamFile: (workspaceId, name) =>
          Effect.gen(function*() {
            const file = yield* findFile(workspaceId, name)
            const seqs = yield* chunkSeqs(file.blob_id)
            return { file: publicFile(file), stream: Stream.mapEffect(Stream.fromIterable(seqs), (seq) => chunk(file.blob_id, seq)) }
          }),
        deleteFile: (workspaceId, name) =>
          sql.withTransaction(Effect.gen(function*() {
            const rows = yield* storedFileRows(sql`
              DELETE FROM workspace_files WHERE workspace_id = ${workspaceId} AND name = ${canonicalFileName(name)} RETURNING ${fileColumns}, blob_id`)
            if (rows[0] === undefined) return yield* new WorkspaceFileNotFound({ workspaceId, name })
            yield* sql`DELETE FROM workspace_blobs WHERE id = ${rows[0].blob_id}`
            yield* sql`UPDATE workspaces SET updated_at = now() WHERE id = ${workspaceId}`
            return publicFile(rows[0])
          })).pipe(Effect.catchTag("SqlError", Effect.die)),
        signUrl: (workspaceId, name) =>
          Effect.sync(() => {
            const expires = Math.floor(Date.now() / 1000) + FILE_URL_TTL_SECONDS
            const url = `/v1/workspace_files/${encodeURIComponent(workspaceId)}/${encodeURIComponent(canonicalFileName(name))}` +
              `?expires=${expires}&signature=${sign(workspaceId, name, expires)}`
            return { url, expires_at: new Date(expires * 1000) }
          }),
        verifyUrl: (workspaceId, name, expires, signature) =>
          Effect.sync(() => {
            const verdict = signer.check(message(workspaceId, name, expires), expires, signature)
            return verdict === "valid" ? "ok" as const : verdict
          })
      }))
    })
  )
}
