/**
 * Workspaces on the wire: a workspace, a file, their lists, the create body, and the 413 of an
 * upload larger than the limit (src/http/api/workspaces.ts).
 */
import { Schema } from "effect"
import { MaxString, OptionalNullable, Timestamp } from "../schemas.ts"

const envelope = {
  code: Schema.String,
  detail: Schema.String,
  extra: Schema.Record(Schema.String, Schema.Unknown)
}

/** 413: the uploaded file is larger than WA_WORKSPACE_MAX_FILE_BYTES; nothing was stored. */
export class PayloadTooLarge extends Schema.Error<PayloadTooLarge>("PayloadTooLarge")(envelope, {
  httpApiStatus: 413,
  description: "payload_too_large: the file is larger than the limit (extra.limit_bytes); nothing was stored"
}) {}

export const WorkspaceResponse = Schema.Struct({
  id: Schema.String.annotate({ description: "ws_..." }),
  project_id: Schema.String,
  name: Schema.NullOr(Schema.String),
  file_count: Schema.Int,
  size_bytes: Schema.Number.annotate({ description: "total bytes of the workspace's files" }),
  created_at: Timestamp,
  updated_at: Timestamp
})

export const WorkspaceListResponse = Schema.Struct({
  items: Schema.Array(WorkspaceResponse),
  total: Schema.Int,
  next_cursor: Schema.NullOr(Schema.String)
})

export const CreateWorkspaceRequest = Schema.Struct({ name: OptionalNullable(MaxString(200)) })

export const WorkspaceFileResponse = Schema.Struct({
  workspace_id: Schema.String,
  name: Schema.String,
  size_bytes: Schema.Number,
  content_type: Schema.String,
  source: Schema.Literals(["upload", "download", "agent"]).annotate({
    description: "upload: through the API; download: saved from a page the agent browsed; agent: written by the agent's write_file"
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
  download_url: Schema.String.annotate({ description: "signed URL path (no API key needed), valid about 15 minutes" }),
  download_url_expires_at: Timestamp
})

export const WorkspaceFileListResponse = Schema.Struct({ items: Schema.Array(WorkspaceFileResponse), next_cursor: Schema.NullOr(Schema.String) })
