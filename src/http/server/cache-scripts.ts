/**
 * Handlers of /v1/projects/{pid}/cache_scripts, through the CacheScripts service. Any key of the
 * project may list, read and delete them (scope `run`), as it may read its runs (GET of a run) and
 * delete its sessions and profiles: a script is what those runs did.
 */
import { Effect, Schema } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { type CacheScript, type CacheScriptDetail, CacheScripts } from "../../do-anything/cache-scripts.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { cursorPage } from "../pagination.ts"

const iso = (date: Date | null) => date === null ? null : date.toISOString()

/** A run's output_schema is a JSON object (or absent): what the key was made from. */
const isJsonObject = Schema.is(Schema.Record(Schema.String, Schema.Unknown))
const jsonObjectOrNull = (value: unknown): { readonly [key: string]: unknown } | null =>
  isJsonObject(value) ? value : null

/** A script in a list: its current steps and counts, without the versions. */
export const cacheScriptSummaryView = (script: CacheScript) => ({
  id: script.id,
  instructions: script.instructions,
  start_origin: script.start_origin,
  output_schema: jsonObjectOrNull(script.output_schema),
  version: script.version,
  steps: script.steps,
  hit_count: script.hit_count,
  heal_count: script.heal_count,
  last_used_at: iso(script.last_used_at),
  created_at: script.created_at.toISOString(),
  updated_at: script.updated_at.toISOString()
})

export const cacheScriptView = (script: CacheScriptDetail) => ({
  ...cacheScriptSummaryView(script),
  versions: script.versions.map((version) => ({
    version: version.version,
    source_run_id: version.source_run_id,
    healed_steps: version.healed_steps,
    created_at: version.created_at.toISOString()
  }))
})

export const CacheScriptsHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "cacheScripts",
  Effect.fn(function*(handlers) {
    const scripts = yield* CacheScripts
    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          return yield* cursorPage(query, (limit, beforeId) => scripts.list(projectId, limit, beforeId), cacheScriptSummaryView)
        }))
      .handle("get", ({ params }) =>
        CurrentKey.use(({ projectId }) => scripts.get(projectId, params.script_id)).pipe(
          httpErrors,
          Effect.map(cacheScriptView)
        ))
      .handle("delete", ({ params }) =>
        CurrentKey.use(({ projectId }) => scripts.remove(projectId, params.script_id)).pipe(
          httpErrors
        ))
  })
)
