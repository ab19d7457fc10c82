/**
 * Cached scripts (`/v1/projects/{pid}/cache_scripts`): the steps a DoAnything run with
 * `cache_script: true` saved when it ended `done`, which later runs of the same task replay
 * without the model. Listed, read (steps, versions, use counts) and deleted; any key of the
 * project may do each, as it may read and start the runs that make and use them.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, NotFound } from "../../domain/api-errors.ts"
import { CacheScriptId } from "../../domain/id-schemas.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { CacheScriptListResponse, CacheScriptResponse } from "../../domain/wire/cache-scripts.ts"
import { ProjectIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

/** The script id in a path, decoded as the branded CacheScriptId (on the wire the same string, at most 64 characters). */
const ScriptIdParam = { ...ProjectIdParam, script_id: CacheScriptId.check(Schema.isMaxCodePoints(64)) }

export class CacheScriptsApi extends HttpApiGroup.make("cacheScripts")
  .add(
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: PageQuery,
      success: CacheScriptListResponse,
      error: BadRequest
    }).annotate(OpenApi.Description, "The project's cached scripts, newest first, each with its current steps; versions are on the script's own GET."),
    HttpApiEndpoint.get("get", "/:script_id", { params: ScriptIdParam, success: CacheScriptResponse, error: NotFound })
      .annotate(OpenApi.Description, "A cached script: its current steps, its versions newest first and its use counts. 404 cache_script_not_found."),
    HttpApiEndpoint.delete("delete", "/:script_id", {
      params: ScriptIdParam,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotate(
      OpenApi.Description,
      "Deletes the script and all its versions; the next cache_script run of its task is run by the model and recorded again. " +
        "404 cache_script_not_found."
    )
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/cache_scripts")
  .annotateMerge(OpenApi.annotations({
    title: "Cached scripts",
    description: "What DoAnything runs with cache_script: true saved: the steps of a run that ended done, keyed by the task " +
      "(normalised instructions, start origin, output_schema), replayed by later runs of the task without the model. " +
      "A replay in which the model had to take steps again saves a new version."
  }))
{}
