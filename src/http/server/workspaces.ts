/**
 * Handlers of workspaces, their files and the signed file downloads (src/http/api/workspaces.ts),
 * over WorkspaceStore. A file's view carries a fresh signed download URL.
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { FileTooLarge, type WorkspaceFileRow, type WorkspaceRow, WorkspaceStore } from "../../store/workspace-store.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { httpErrors, toHttpError } from "../domain-errors.ts"
import type { WorkspaceId } from "../../domain/id-schemas.ts"
import { badRequest, Forbidden } from "../errors.ts"
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

const fileView = (store: WorkspaceStore["Service"], file: WorkspaceFileRow) =>
  Effect.map(store.signUrl(file.workspace_id, file.name), (signed) => ({
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


/** The workspace of the calling key's project (404 workspace_not_found otherwise). */
const ownWorkspace = (store: WorkspaceStore["Service"], wid: WorkspaceId) =>
  CurrentKey.use(({ projectId }) => httpErrors(store.find(projectId, wid)))

export const WorkspacesHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "workspaces",
  Effect.fn(function*(handlers) {
    const store = yield* WorkspaceStore
    return handlers
      .handle("create", ({ payload }) =>
        CurrentKey.use(({ projectId }) => store.create(projectId, payload.name ?? null)).pipe(Effect.map(workspaceView)))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const limit = query.limit ?? DEFAULT_LIMIT
          const before = yield* decodeCursor(query.cursor)
          const { rows, total } = yield* store.list(projectId, limit + 1, before)
          const page = toPage(rows, limit)
          return { items: page.items.map(workspaceView), total, next_cursor: page.next_cursor }
        }))
      .handle("get", ({ params }) => ownWorkspace(store, params.wid).pipe(Effect.map(workspaceView)))
      .handle("delete", ({ params }) =>
        CurrentKey.use(({ projectId }) => httpErrors(store.remove(projectId, params.wid))).pipe(Effect.map(workspaceView)))
      .handle("listFiles", ({ params, query }) =>
        Effect.gen(function*() {
          const limit = query.limit ?? DEFAULT_LIMIT
          const after = yield* nameCursor.decode(query.cursor)
          yield* ownWorkspace(store, params.wid)
          const rows = yield* store.listFiles(params.wid, { limit: limit + 1, after })
          const files = rows.slice(0, limit)
          return {
            items: yield* Effect.forEach(files, (file) => fileView(store, file)),
            next_cursor: rows.length > limit && files.length > 0 ? nameCursor.encode(files[files.length - 1]!.name) : null
          }
        }))
      .handle("getFile", ({ params }) =>
        Effect.gen(function*() {
          yield* ownWorkspace(store, params.wid)
          return yield* fileView(store, yield* httpErrors(store.findFile(params.wid, params.name)))
        }))
      .handle("deleteFile", ({ params }) =>
        Effect.gen(function*() {
          yield* ownWorkspace(store, params.wid)
          return yield* fileView(store, yield* httpErrors(store.deleteFile(params.wid, params.name)))
        }))
  })
)

export const WorkspaceUploadHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "workspace_upload",
  Effect.fn(function*(handlers) {
    const store = yield* WorkspaceStore
    // Raw: the body is not decoded (nor read whole) by the framework; putFile streams it.
    return handlers.handleRaw("putFile", ({ params, request }) =>
      Effect.gen(function*() {
        yield* ownWorkspace(store, params.wid)
        // A declared length over the limit is refused before a byte is read.
        const declared = Number(request.headers["content-length"])
        if (Number.isFinite(declared) && declared > store.maxFileBytes) return yield* toHttpError(new FileTooLarge({ limitBytes: store.maxFileBytes }))
        const contentType = (request.headers["content-type"] ?? "").split(",")[0]!.trim().slice(0, 200) || "application/octet-stream"
        const stored = yield* store.putFile(params.wid, params.name, request.stream, { contentType, source: "upload", onConflict: "replace" }).pipe(
          // The client's body broke off (disconnect, malformed chunking): nothing was stored.
          Effect.catchTag("HttpServerError", () => Effect.fail(badRequest("the request body could not be read; nothing was stored"))),
          httpErrors
        )
        return yield* fileView(store, stored)
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
    const store = yield* WorkspaceStore
    return handlers.handle("download", ({ params, query }) =>
      Effect.gen(function*() {
        const verdict = yield* store.verifyUrl(params.wid, params.name, query.expires, query.signature)
        if (verdict === "invalid") {
          return yield* new Forbidden({ code: "invalid_signature", detail: "the signature does not match this URL", extra: {} })
        }
        if (verdict === "expired") {
          return yield* new Forbidden({
            code: "url_expired",
            detail: "the URL has expired; get the file again (GET .../workspaces/{wid}/files/{name}) for a fresh one",
            extra: {}
          })
        }
        const { file, stream } = yield* httpErrors(store.streamFile(params.wid, params.name))
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
