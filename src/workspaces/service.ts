/**
 * Workspaces: a project's shared file areas as the API offers them. It owns the rules the handlers
 * used to apply around the store: a workspace and its files are reached only through the caller's
 * project (404 workspace_not_found otherwise), an upload whose declared length is over the limit
 * is refused before a byte is read, an upload replaces a file of the same name, and a download
 * URL opens a file only while its signature holds. The bytes, the streaming writes and the URL
 * signatures are WorkspaceStore's (src/store/workspace-store.ts).
 */
import { Context, Effect, Layer, type Stream } from "effect"
import { InvalidSignature, SignedUrlExpired, type WorkspaceFileNotFound, type WorkspaceNotFound } from "../domain/errors.ts"
import type { WorkspaceId } from "../domain/id-schemas.ts"
import type { ProjectId } from "../domain/run.ts"
import { withMethodSpans } from "../observability/spans.ts"
import {
  FileTooLarge,
  type InvalidFileName,
  type SignedUrl,
  type WorkspaceFileRow,
  type WorkspaceRow,
  WorkspaceStore
} from "../store/workspace-store.ts"

export { FileTooLarge, type InvalidFileName, type SignedUrl, type WorkspaceFileRow, type WorkspaceRow }

/** What a signed download URL opens: the file as a stream of its chunks. */
export interface Download {
  readonly file: WorkspaceFileRow
  readonly stream: Stream.Stream<Uint8Array>
}

export class Workspaces extends Context.Service<Workspaces, {
  readonly create: (projectId: ProjectId, name: string | null) => Effect.Effect<WorkspaceRow>
  /** Newest first; `beforeId` is the cursor. */
  readonly list: (projectId: ProjectId, limit: number, beforeId: string | undefined) => Effect.Effect<{ readonly rows: ReadonlyArray<WorkspaceRow>; readonly total: number }>
  readonly find: (projectId: ProjectId, workspaceId: WorkspaceId) => Effect.Effect<WorkspaceRow, WorkspaceNotFound>
  /** Deletes the workspace with its files. */
  readonly remove: (projectId: ProjectId, workspaceId: WorkspaceId) => Effect.Effect<WorkspaceRow, WorkspaceNotFound>
  /** The files of the project's workspace by name: at most `limit` of them after the name `after`. */
  readonly files: (projectId: ProjectId, workspaceId: WorkspaceId, page: { readonly limit: number; readonly after: string | undefined }) => Effect.Effect<
    ReadonlyArray<WorkspaceFileRow>,
    WorkspaceNotFound
  >
  readonly file: (projectId: ProjectId, workspaceId: WorkspaceId, name: string) => Effect.Effect<WorkspaceFileRow, WorkspaceNotFound | WorkspaceFileNotFound>
  readonly deleteFile: (projectId: ProjectId, workspaceId: WorkspaceId, name: string) => Effect.Effect<WorkspaceFileRow, WorkspaceNotFound | WorkspaceFileNotFound>
  /**
   * Streams an upload into the file `name` (replacing a file of that name). `declaredBytes`: the
   * request's declared length, if any; over the limit, nothing is read (FileTooLarge).
   */
  readonly upload: <E>(
    projectId: ProjectId,
    workspaceId: WorkspaceId,
    name: string,
    body: Stream.Stream<Uint8Array, E>,
    options: { readonly contentType: string; readonly declaredBytes: number | undefined }
  ) => Effect.Effect<WorkspaceFileRow, E | FileTooLarge | InvalidFileName | WorkspaceNotFound>
  /** A fresh signed download URL of the file. */
  readonly downloadUrl: (file: WorkspaceFileRow) => Effect.Effect<SignedUrl>
  /** The file a signed download URL names, once its signature and expiry are checked. */
  readonly download: (workspaceId: WorkspaceId, name: string, expires: number, signature: string) => Effect.Effect<Download, WorkspaceFileNotFound | InvalidSignature | SignedUrlExpired>
}>()("wa/workspaces/Workspaces") {
  static readonly layer = Layer.effect(
    Workspaces,
    Effect.gen(function*() {
      const store = yield* WorkspaceStore
      const own = (projectId: ProjectId, workspaceId: WorkspaceId) => store.find(projectId, workspaceId)
      return Workspaces.of(withMethodSpans("Workspaces", {
        create: (projectId: ProjectId, name: string | null) => store.create(projectId, name),
        list: (projectId: ProjectId, limit: number, beforeId: string | undefined) => store.list(projectId, limit, beforeId),
        find: own,
        remove: (projectId: ProjectId, workspaceId: WorkspaceId) => store.remove(projectId, workspaceId),
        files: (projectId: ProjectId, workspaceId: WorkspaceId, page: { readonly limit: number; readonly after: string | undefined }) =>
          Effect.andThen(own(projectId, workspaceId), store.listFiles(workspaceId, page)),
        file: (projectId: ProjectId, workspaceId: WorkspaceId, name: string) =>
          Effect.andThen(own(projectId, workspaceId), store.findFile(workspaceId, name)),
        deleteFile: (projectId: ProjectId, workspaceId: WorkspaceId, name: string) =>
          Effect.andThen(own(projectId, workspaceId), store.deleteFile(workspaceId, name)),
        upload: <E>(
          projectId: ProjectId,
          workspaceId: WorkspaceId,
          name: string,
          body: Stream.Stream<Uint8Array, E>,
          options: { readonly contentType: string; readonly declaredBytes: number | undefined }
        ): Effect.Effect<WorkspaceFileRow, E | FileTooLarge | InvalidFileName | WorkspaceNotFound> =>
          Effect.gen(function*() {
            yield* own(projectId, workspaceId)
            // A declared length over the limit is refused before a byte is read.
            if (options.declaredBytes !== undefined && options.declaredBytes > store.maxFileBytes) {
              return yield* new FileTooLarge({ limitBytes: store.maxFileBytes })
            }
            return yield* store.putFile(workspaceId, name, body, { contentType: options.contentType, source: "upload", onConflict: "replace" })
          }),
        downloadUrl: (file: WorkspaceFileRow) => store.signUrl(file.workspace_id, file.name),
        download: (workspaceId: WorkspaceId, name: string, expires: number, signature: string) =>
          Effect.gen(function*() {
            const verdict = yield* store.verifyUrl(workspaceId, name, expires, signature)
            if (verdict === "invalid") return yield* new InvalidSignature()
            if (verdict === "expired") return yield* new SignedUrlExpired({ refresh: "get the file again (GET .../workspaces/{wid}/files/{name}) for a fresh one" })
            return yield* store.streamFile(workspaceId, name)
          })
      }))
    })
  )
}
