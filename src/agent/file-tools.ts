/**
 * The agent's file tools, for a session with a workspace: `upload_file` (sets a page's file input
 * from a workspace file), `list_files`, `read_file` (text, bounded) and `write_file`. Their names
 * join the vocabulary of `allowed_actions` (tools.ts merges them into the toolkit); a run whose
 * session has no workspace is not offered them.
 *
 * Files the session's pages download are saved to the workspace as they finish (`watchDownloads`)
 * and announced as `run.file_downloaded` events. The file tools and the end of the run first wait
 * for downloads still being saved, so a download the agent just started is there when it looks.
 *
 * This module depends on nothing in tools.ts (tools.ts imports it), so the two can be loaded in
 * any order.
 */
import { Context, Duration, Effect, FiberSet, Schema, type Scope, Stream } from "effect"
import { Toolkit } from "effect/ai"
import { tool, type ToolFailure } from "./tool-def.ts"
import type { Download, Page } from "playwright-core"
import type { ActionError } from "../browser/errors.ts"
import { resolveRefHandle } from "../browser/observe.ts"
import { attempt, type ContextLease } from "../browser/pool.ts"
import type { WorkspaceFileNotFound, WorkspaceNotFound } from "../domain/errors.ts"
import type { EventData, RunEventType } from "../domain/events.ts"
import type { WorkspaceId } from "../domain/id-schemas.ts"
import {
  contentTypeOf,
  type FileTooLarge,
  type InvalidFileName,
  sanitizeFileName,
  type WorkspaceStore
} from "../store/workspace-store.ts"

/** Bytes of a file read_file returns at most. */
export const READ_FILE_LIMIT = 50_000
/** How long a file tool (or the end of a run) waits for downloads still being saved. */
const SETTLE_DOWNLOADS = Duration.seconds(30)

const FileName = Schema.String.annotate({ description: "a file name in the session's workspace (see list_files)" })

export const UploadFile = tool(
  "upload_file",
  "Put a workspace file into a file input of the page (the ref of an <input type=file>, or of a button that opens a file chooser). Submit the form afterwards.",
  { ref: Schema.String.annotate({ description: "element ref from the page snapshot" }), name: FileName }
)
export const ListFiles = tool("list_files", "List the files of the session's workspace (uploaded by the user, downloaded by pages, written by you).", {})
export const ReadFile = tool("read_file", `Read a workspace file as text (at most ${READ_FILE_LIMIT} bytes).`, { name: FileName })
export const WriteFile = tool("write_file", "Write text to a workspace file (replacing a file of that name), e.g. to hand results to the user.", {
  name: FileName,
  content: Schema.String
})

export const fileTools = [UploadFile, ListFiles, ReadFile, WriteFile] as const
export const fileToolNames: ReadonlyArray<string> = fileTools.map((t) => t.name)
export const FileToolkit = Toolkit.make(...fileTools)

/** What the file tools need from the run they serve. */
export class FileToolContext extends Context.Service<FileToolContext, {
  /** Null: the session has no workspace (the tools are then not offered; a call is refused). */
  readonly workspaceId: WorkspaceId | null
  readonly lease: ContextLease
  readonly store: WorkspaceStore["Service"]
  /** Emits an event on the run's log. */
  readonly emit: <T extends RunEventType>(type: T, data: EventData<T>) => Effect.Effect<void>
  /** Waits (bounded) until downloads under way are saved to the workspace. */
  readonly settleDownloads: Effect.Effect<void>
}>()("wa/agent/FileToolContext") {}

class FileToolRefused extends Schema.TaggedError<FileToolRefused>()("FileToolRefused", {
  code: Schema.String,
  message: Schema.String
}) {}

type FileToolError = FileToolRefused | ActionError | WorkspaceFileNotFound | WorkspaceNotFound | FileTooLarge | InvalidFileName

const describe = (error: FileToolError): ToolFailure => {
  switch (error._tag) {
    case "FileToolRefused": return { code: error.code, error: error.message }
    case "WorkspaceFileNotFound": return { code: "FileNotFound", error: `no file ${JSON.stringify(error.name)} in the workspace; call list_files` }
    case "WorkspaceNotFound": return { code: "WorkspaceNotFound", error: "the session's workspace was deleted" }
    case "FileTooLarge": return { code: "FileTooLarge", error: `the file is larger than the workspace limit of ${error.limitBytes} bytes` }
    case "InvalidFileName": return { code: "InvalidFileName", error: `invalid file name: ${error.reason}` }
    default: return { code: error._tag, error: error.message }
  }
}

/** Reports the tool with the same events as the other tools (tools.ts); failures go back to the model. */
const instrumented = <A>(ctx: FileToolContext["Service"], name: string, params: unknown, body: Effect.Effect<A, FileToolError>) =>
  Effect.gen(function*() {
    yield* ctx.emit("run.action.started", { action: name, params: name === "write_file" ? summarizeWrite(params) : params })
    const result = yield* Effect.result(body)
    if (result._tag === "Failure") {
      const failure = describe(result.failure)
      yield* ctx.emit("run.action.failed", { action: name, ...failure })
      return yield* Effect.fail(failure)
    }
    const text = JSON.stringify(result.success)
    yield* ctx.emit("run.action.completed", { action: name, result: text.length > 500 ? `${text.slice(0, 500)}…` : result.success })
    return result.success as unknown
  })

/** write_file's content can be long: its event carries the name and the size only. */
const summarizeWrite = (params: unknown) => {
  const { name, content } = params as { name?: unknown; content?: unknown }
  return { name, content_bytes: typeof content === "string" ? Buffer.byteLength(content) : 0 }
}

/** Sets the files of a file input, or of the file chooser the element opens when clicked. */
const setFiles = (page: Page, ref: string, file: { name: string; mimeType: string; buffer: Buffer }) => async () => {
  const element = await resolveRefHandle(page, ref)
  if (element === undefined) throw new Error(`no element ${ref} on the page any more; observe again for fresh refs`)
  try {
    const isFileInput = await element.evaluate((el) => el instanceof HTMLInputElement && el.type === "file")
    if (isFileInput) {
      await element.setInputFiles(file, { timeout: 10_000 })
    } else {
      const [chooser] = await Promise.all([page.waitForEvent("filechooser", { timeout: 10_000 }), element.click({ timeout: 10_000 })])
      await chooser.setFiles(file, { timeout: 10_000 })
    }
  } finally {
    void element.dispose().catch(() => undefined)
  }
}

const textLike = (contentType: string) => /^text\/|json|xml|javascript|csv|markdown|yaml/.test(contentType)

/** Handlers bound to one run: built per run with its FileToolContext. */
export const FileToolkitHandlers = FileToolkit.toLayer(Effect.gen(function*() {
  const ctx = yield* FileToolContext
  const { store } = ctx
  const workspace = Effect.suspend(() =>
    ctx.workspaceId === null
      ? Effect.fail(new FileToolRefused({ code: "NoWorkspace", message: "this session has no workspace (create the session with workspace_id)" }))
      : Effect.succeed(ctx.workspaceId)
  )
  return FileToolkit.of({
    upload_file: (params) =>
      instrumented(ctx, "upload_file", params, Effect.gen(function*() {
        const workspaceId = yield* workspace
        yield* ctx.settleDownloads
        const { file, bytes } = yield* store.readFile(workspaceId, params.name)
        const page = ctx.lease.page()
        if (page === undefined) return yield* new FileToolRefused({ code: "NoPage", message: "no tab is open" })
        yield* attempt(ctx.lease, `upload_file ${params.ref}`, 25_000, setFiles(page, params.ref, {
          name: file.name,
          mimeType: file.content_type,
          buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
        }))
        return { message: `set ${file.name} (${file.size_bytes} bytes) on ${params.ref}; submit the form to send it` }
      })),
    list_files: (params) =>
      instrumented(ctx, "list_files", params, Effect.gen(function*() {
        const workspaceId = yield* workspace
        yield* ctx.settleDownloads
        const files = yield* store.listFiles(workspaceId)
        return { files: files.map((f) => ({ name: f.name, size_bytes: f.size_bytes, content_type: f.content_type, source: f.source })) }
      })),
    read_file: (params) =>
      instrumented(ctx, "read_file", params, Effect.gen(function*() {
        const workspaceId = yield* workspace
        yield* ctx.settleDownloads
        const { file, bytes, truncated } = yield* store.readFile(workspaceId, params.name, READ_FILE_LIMIT)
        const head = bytes.subarray(0, Math.min(bytes.length, 4096))
        if (!textLike(file.content_type) && head.includes(0)) {
          return { name: file.name, size_bytes: file.size_bytes, content_type: file.content_type, text: null, note: "binary file; it cannot be read as text" }
        }
        return {
          name: file.name,
          size_bytes: file.size_bytes,
          content_type: file.content_type,
          text: new TextDecoder().decode(bytes),
          truncated
        }
      })),
    write_file: (params) =>
      instrumented(ctx, "write_file", params, Effect.gen(function*() {
        const workspaceId = yield* workspace
        const stored = yield* store.putFile(workspaceId, params.name, Stream.make(new TextEncoder().encode(params.content)), {
          contentType: contentTypeOf(params.name),
          source: "agent",
          onConflict: "replace"
        })
        return { name: stored.name, size_bytes: stored.size_bytes }
      }))
  })
}))

/**
 * Saves every file the context's pages download to the workspace (a name already taken gets
 * ` (1)`, ` (2)`, ...), announcing each as `run.file_downloaded` (or `run.file_download_failed`).
 * Stops listening when the scope closes; `settle` waits, bounded, for the saves under way.
 */
export const watchDownloads = Effect.fnUntraced(function*(options: {
  readonly lease: ContextLease
  readonly workspaceId: WorkspaceId
  readonly store: WorkspaceStore["Service"]
  readonly emit: <T extends RunEventType>(type: T, data: EventData<T>) => Effect.Effect<void>
}): Effect.fn.Return<{ readonly settle: Effect.Effect<void> }, never, Scope.Scope> {
  const { lease, workspaceId, store, emit } = options
  const saves = yield* FiberSet.make()
  const run = yield* FiberSet.runtime(saves)()

  const save = (download: Download) =>
    Effect.gen(function*() {
      const name = sanitizeFileName(download.suggestedFilename())
      const readable = yield* Effect.tryPromise(() => download.createReadStream())
      const stored = yield* store.putFile(
        workspaceId,
        name,
        Stream.fromAsyncIterable(readable as AsyncIterable<Uint8Array>, (cause) => new Error(`the download broke off: ${String(cause)}`)),
        { contentType: contentTypeOf(name), source: "download", onConflict: "rename" }
      )
      yield* emit("run.file_downloaded", {
        workspace_id: workspaceId,
        name: stored.name,
        size_bytes: stored.size_bytes,
        content_type: stored.content_type,
        url: download.url()
      })
    }).pipe(
      Effect.catchCause((cause) =>
        Effect.gen(function*() {
          const failure = yield* Effect.promise(() => download.failure().catch(() => null))
          const squashed = cause.reasons.find((reason) => reason._tag === "Fail")
          const error = squashed?._tag === "Fail" ? squashed.error as { _tag?: string; limitBytes?: number; message?: string } : undefined
          yield* emit("run.file_download_failed", {
            workspace_id: workspaceId,
            name: sanitizeFileName(download.suggestedFilename()),
            url: download.url(),
            reason: failure ??
              (error?._tag === "FileTooLarge" ? `larger than the workspace limit of ${error.limitBytes} bytes` : error?.message ?? "the download could not be saved")
          })
        })
      )
    )

  const onDownload = (download: Download) => {
    run(save(download))
  }
  const watchPage = (page: Page) => page.on("download", onDownload)
  for (const page of lease.pages()) watchPage(page)
  lease.context.on("page", watchPage)
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      lease.context.off("page", watchPage)
      for (const page of lease.context.pages()) page.off("download", onDownload)
    })
  )
  return { settle: FiberSet.awaitEmpty(saves).pipe(Effect.timeoutOption(SETTLE_DOWNLOADS), Effect.asVoid) }
})

/** A line of the system prompt for a run whose session has a workspace. */
export const workspacePrompt =
  "This session has a workspace of files: list_files shows them, upload_file puts one into a page's file input, " +
  "read_file and write_file read and write text files. Files the pages download are saved there automatically."
