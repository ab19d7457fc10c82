/**
 * Cached scripts as a resource (`/v1/projects/{pid}/cache_scripts`): what a project's
 * `cache_script: true` runs saved (src/cache/ records and replays them), listed, read with their
 * versions, and deleted so the next run of the task is recorded again. The handlers go through
 * this service; the rows are the store's (src/store/cache-scripts.ts).
 */
import { Context, Effect, Layer } from "effect"
import type { CacheScriptNotFound } from "../domain/errors.ts"
import { type CacheScript, type CacheScriptDetail, CacheScriptStore } from "../store/cache-scripts.ts"
import type { CacheScriptId } from "../domain/id-schemas.ts"
import type { ProjectId } from "../domain/run.ts"

export type { CacheScript, CacheScriptDetail }

export class CacheScripts extends Context.Service<CacheScripts, {
  /** The project's scripts, newest first, before `beforeId` (a cursor page loads `limit + 1`). */
  readonly list: (projectId: ProjectId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<CacheScript>>
  /** A script with its current steps and every version, newest first. */
  readonly get: (projectId: ProjectId, scriptId: CacheScriptId) => Effect.Effect<CacheScriptDetail, CacheScriptNotFound>
  /** Deletes a script and its versions: the next run of its task records a new one. */
  readonly remove: (projectId: ProjectId, scriptId: CacheScriptId) => Effect.Effect<void, CacheScriptNotFound>
}>()("wa/do-anything/CacheScripts") {
  static readonly layer = Layer.effect(
    CacheScripts,
    Effect.gen(function*() {
      const store = yield* CacheScriptStore
      return CacheScripts.of({
        list: Effect.fn("CacheScripts.list")(function*(projectId, limit, beforeId) {
          return yield* store.list(projectId, limit, beforeId)
        }),
        get: Effect.fn("CacheScripts.get")(function*(projectId, scriptId) {
          return yield* store.get(projectId, scriptId)
        }),
        remove: Effect.fn("CacheScripts.remove")(function*(projectId, scriptId) {
          yield* store.remove(projectId, scriptId)
        })
      })
    })
  ).pipe(Layer.provide(CacheScriptStore.layer))
}
