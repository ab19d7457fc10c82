/**
 * Tables of workspaces: a project's file areas. File bytes live in PostgreSQL (every runner reads
 * the same database), split into chunks of at most 1 MiB so no single value is large. A file
 * points at one blob; an upload writes a new blob chunk by chunk and the file row is switched to
 * it in one transaction at the end, so a failed or oversized upload leaves the old file as it was.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE workspaces (
      id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
      name text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX workspaces_project ON workspaces (project_id, id DESC)`
  // A blob being written (no file points at it yet) or the content of one file.
  yield* sql`
    CREATE TABLE workspace_blobs (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      size_bytes bigint NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX workspace_blobs_created ON workspace_blobs (created_at)`
  yield* sql`
    CREATE TABLE workspace_blob_chunks (
      blob_id text NOT NULL REFERENCES workspace_blobs(id) ON DELETE CASCADE,
      seq integer NOT NULL,
      data bytea NOT NULL,
      PRIMARY KEY (blob_id, seq)
    )`
  yield* sql`
    CREATE TABLE workspace_files (
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name text NOT NULL,
      blob_id text NOT NULL REFERENCES workspace_blobs(id) ON DELETE CASCADE,
      size_bytes bigint NOT NULL,
      content_type text NOT NULL,
      source text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (workspace_id, name)
    )`
  yield* sql`CREATE INDEX workspace_files_blob ON workspace_files (blob_id)`
})
