/**
 * Handlers of workspaces, their files and the signed file downloads (src/http/api/workspaces.ts),
 * over the Workspaces service (src/workspaces/service.ts). A file's view carries a fresh signed
 * download URL.
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { type WorkspaceFileRow, type WorkspaceRow, Workspaces } from "../../workspaces/service.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { badRequest } from "../errors.ts"
import { DEFAULT_LIMIT, decodeCursor, nameCursor, toPage } from "../pagination.ts"

export const workspaceView = (row: WorkspaceRow) => ({
  id: row.id,
  project_id: row.project_id,
  name: row.name,
  file_count: row.file_count,
  size_bytes: row.size_bytes,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString()
})

const fileView = (workspaces: Workspaces["Service"], file: WorkspaceFileRow) =>
  Effect.map(workspaces.downloadUrl(file), (signed) => ({
    workspace_id: file.workspace_id,
    name: file.name,
    size_bytes: file.size_bytes,
    content_type: file.content_type,
    source: file.source,
    created_at: file.created_at.toISOString(),
    updated_at: file.updated_at.toISOString(),
    download_url: signed.url,
    download_url_expires_at: signed.expires_at.toISOString()
  }))


export const WorkspacesHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "workspaces",
  Effect.fn(function*(handlers) {
    const workspaces = yield* Workspaces
    return handlers
      .handle("create", ({ payload }) =>
        CurrentKey.use(({ projectId }) => workspaces.create(projectId, payload.name ?? null)).pipe(Effect.map(workspaceView)))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const limit = query.limit ?? DEFAULT_LIMIT
          const before = yield* decodeCursor(query.cursor)
          const { rows, total } = yield* workspaces.list(projectId, limit + 1, before)
          const page = toPage(rows, limit)
          return { items: page.items.map(workspaceView), total, next_cursor: page.next_cursor }
        }))
      .handle("get", ({ params }) =>
        CurrentKey.use(({ projectId }) => httpErrors(workspaces.find(projectId, params.wid))).pipe(Effect.map(workspaceView)))
      .handle("delete", ({ params }) =>
        CurrentKey.use(({ projectId }) => httpErrors(workspaces.remove(projectId, params.wid))).pipe(Effect.map(workspaceView)))
      .handle("listFiles", ({ params, query }) =>
        Effect.gen(function*() {
          const limit = query.limit ?? DEFAULT_LIMIT
          const after = yield* nameCursor.decode(query.cursor)
          const { projectId } = yield* CurrentKey
          const rows = yield* httpErrors(workspaces.files(projectId, params.wid, { limit: limit + 1, after }))
          const files = rows.slice(0, limit)
          return {
            items: yield* Effect.forEach(files, (file) => fileView(workspaces, file)),
            next_cursor: rows.length > limit && files.length > 0 ? nameCursor.encode(files[files.length - 1]!.name) : null
          }
        }))
      .handle("getFile", ({ params }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          return yield* fileView(workspaces, yield* httpErrors(workspaces.file(projectId, params.wid, params.name)))
        }))
      .handle("deleteFile", ({ params }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          return yield* fileView(workspaces, yield* httpErrors(workspaces.deleteFile(projectId, params.wid, params.name)))
        }))
  })
)

export const WorkspaceUploadHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "workspace_upload",
  Effect.fn(function*(handlers) {
    const workspaces = yield* Workspaces
    // Raw: the body is not decoded (nor read whole) by the framework; the upload streams it.
    return handlers.handleRaw("putFile", ({ params, request }) =>
      Effect.gen(function*() {
        const { projectId } = yield* CurrentKey
        // A declared length over the limit is refused before a byte is read (by the service).
        const declared = Number(request.headers["content-length"])
        const contentType = (request.headers["content-type"] ?? "").split(",")[0]!.trim().slice(0, 200) || "application/octet-stream"
        const stored = yield* workspaces.upload(projectId, params.wid, params.name, request.stream, {
          contentType,
          declaredBytes: Number.isFinite(declared) ? declared : undefined
        }).pipe(
          // The client's body broke off (disconnect, malformed chunking): nothing was stored.
          Effect.catchTag("HttpServerError", () => Effect.fail(badRequest("the request body could not be read; nothing was stored"))),
          httpErrors
        )
        return yield* fileView(workspaces, stored)
      }))
  })
)

/** `attachment; filename*=UTF-8''...` with an ASCII fallback. */
const contentDisposition = (name: string) =>
  `attachment; filename="${name.replace(/[^\x20-\x7e]|["\\]/g, "_")}"; filename*=UTF-8''${encodeURIComponent(name)}`

export const WorkspaceDownloadHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "workspace_download",
  Effect.fn(function*(handlers) {
    const workspaces = yield* Workspaces
    return handlers.handle("download", ({ params, query }) =>
      Effect.gen(function*() {
        const download = yield* httpErrors(workspaces.download(params.wid, params.name, query.expires, query.signature))
        const { file, stream } = download
        return HttpServerResponse.stream(stream, {
          contentType: file.content_type,
          contentLength: file.size_bytes,
          headers: {
            "content-disposition": contentDisposition(file.name),
            // The bytes are the user's: never rendered as a page of this origin.
            "x-content-type-options": "nosniff",
            "content-security-policy": "sandbox",
            "cache-control": "private, max-age=900"
          }
        })
      }))
  })
)
