/**
 * Skills (`/v1/projects/{pid}/skills`): named, reusable abilities of a project that a DoAnything
 * run is given by name (`skills: [name, ...]`) and the agent calls as the tool `skill_<name>` with
 * typed parameters. A skill is instructions, or a script saved from a run that recorded one
 * (`cache_script: true`). Created, listed, read with their versions, updated (a new version) and
 * deleted by any key of the project, as its profiles are.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, NotFound, ValidationError } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { MAX_SKILL_DESCRIPTION, MAX_SKILL_INSTRUCTIONS, MAX_SKILLS, SkillKind, SkillName } from "../../domain/skill.ts"
import { CacheScriptStepResponse } from "./cache-scripts.ts"
import { MaxString, ProjectIdParam, Timestamp } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const Description = MaxString(MAX_SKILL_DESCRIPTION).check(Schema.isMinCodePoints(1)).annotate({
  description: "what the skill does and when to use it: the model reads it as the tool's description"
})

const Parameters = Schema.Record(Schema.String, Schema.Unknown).annotate({
  description: "a JSON Schema of type \"object\" (at most 16384 bytes of JSON): the tool's arguments. Property names are 1 to 64 " +
    "letters, digits or _, and what {{param:name}} in the instructions or steps names. Default {\"type\":\"object\",\"properties\":{}}"
})

const Instructions = MaxString(MAX_SKILL_INSTRUCTIONS).check(Schema.isMinCodePoints(1)).annotate({
  description: "an instructions skill: what the run's agent does when it calls the skill; {{param:name}} is replaced by the argument"
})

const FromRunId = MaxString(64).annotate({
  description: "a script skill (\"save this run as a skill\"): a DoAnything run of the project that ended done with cache_script: true; " +
    "its recorded steps, without done, become the skill's"
})

const ParameterValues = Schema.Record(Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_]{1,64}$/)), MaxString(10_000).check(Schema.isMinCodePoints(1))).annotate({
  description: "with from_run_id: {parameter name: the literal text the run typed}. Every occurrence of the text in the steps' parameters " +
    "becomes {{param:name}}, replaced by the caller's argument when the skill runs"
})

export const CreateSkillRequest = Schema.Struct({
  name: SkillName,
  description: Description,
  parameters: Schema.optional(Parameters),
  instructions: Schema.optional(Instructions),
  from_run_id: Schema.optional(FromRunId),
  parameter_values: Schema.optional(ParameterValues)
}).annotate({ description: "exactly one of instructions and from_run_id" })

export const UpdateSkillRequest = Schema.Struct({
  description: Schema.optional(Description),
  parameters: Schema.optional(Parameters),
  instructions: Schema.optional(Instructions),
  from_run_id: Schema.optional(FromRunId),
  parameter_values: Schema.optional(ParameterValues)
}).annotate({
  description: "any of the fields (not the name); the new version carries the others over. instructions or from_run_id replaces " +
    "what the skill does (and its kind)"
})

export const SkillVersionResponse = Schema.Struct({
  version: Schema.Int,
  kind: SkillKind,
  source_run_id: Schema.NullOr(Schema.String).annotate({ description: "script: the run the steps were saved from; null for instructions" }),
  created_at: Timestamp
})

const skillFields = {
  id: Schema.String.annotate({ description: "sk_..." }),
  name: Schema.String.annotate({ description: "what runs list in skills; the agent calls it as the tool skill_<name>" }),
  description: Schema.String,
  parameters: Schema.Record(Schema.String, Schema.Unknown).annotate({ description: "the JSON Schema of the tool's arguments" }),
  kind: SkillKind.annotate({ description: "instructions: carried out by the run's agent; script: recorded steps replayed without the model" }),
  instructions: Schema.NullOr(Schema.String).annotate({ description: "instructions skills; null for scripts" }),
  steps: Schema.NullOr(Schema.Array(CacheScriptStepResponse)).annotate({
    description: "script skills: the current version's steps, {{param:name}} where the arguments go; null for instructions"
  }),
  version: Schema.Int.annotate({ description: "the current version: the one runs use (1 at create, +1 per update)" }),
  call_count: Schema.Int.annotate({ description: "calls of the skill by runs" }),
  last_used_at: Schema.NullOr(Timestamp).annotate({ description: "when a run last called it; null when none has" }),
  created_at: Timestamp,
  updated_at: Timestamp.annotate({ description: "when its current version was saved" })
}

/** A skill in a list, created or updated: without its versions. */
export const SkillSummaryResponse = Schema.Struct(skillFields)

export const SkillResponse = Schema.Struct({
  ...skillFields,
  versions: Schema.Array(SkillVersionResponse).annotate({ description: "every version, newest first" })
})

export const SkillListResponse = Schema.Struct({
  items: Schema.Array(SkillSummaryResponse),
  next_cursor: Schema.NullOr(Schema.String)
})

const SkillParam = {
  ...ProjectIdParam,
  skill: MaxString(64).annotate({ description: "the skill's id (sk_...) or its name" })
}

export class SkillsApi extends HttpApiGroup.make("skills")
  .add(
    HttpApiEndpoint.post("create", "/", {
      params: ProjectIdParam,
      payload: CreateSkillRequest,
      success: SkillSummaryResponse.annotate({ httpApiStatus: 201 }),
      error: [ValidationError, Conflict, NotFound]
    }).annotate(
      OpenApi.Description,
      "Creates a skill (version 1) from instructions, or from a run (from_run_id) that ended done and saved a script (cache_script: true). " +
        `409 skill_name_taken, 409 skill_limit_reached (${MAX_SKILLS} per project), 404 run_not_found, 409 run_not_done, ` +
        "422 run_has_no_script (the run saved no script: run it with cache_script: true), 422 parameter_value_not_found (a " +
        "parameter_values text no step typed), 422 unknown_parameters (a name that is not a property of parameters), " +
        "422 validation_error (parameters not a JSON Schema of type object; neither or both of instructions and from_run_id)."
    ),
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: PageQuery,
      success: SkillListResponse,
      error: BadRequest
    }).annotate(OpenApi.Description, "The project's skills, newest first, in cursor pages; versions are on the skill's own GET."),
    HttpApiEndpoint.get("get", "/:skill", { params: SkillParam, success: SkillResponse, error: NotFound })
      .annotate(OpenApi.Description, "A skill by id or name, with its versions newest first. 404 skill_not_found."),
    HttpApiEndpoint.patch("update", "/:skill", {
      params: SkillParam,
      payload: UpdateSkillRequest,
      success: SkillSummaryResponse,
      error: [ValidationError, NotFound, Conflict]
    }).annotate(
      OpenApi.Description,
      "Saves a new version of the skill: the fields given, the others carried over (the name does not change). Runs created " +
        "after it use the new version. 404 skill_not_found; the refusals of create otherwise."
    ),
    HttpApiEndpoint.delete("delete", "/:skill", {
      params: SkillParam,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotate(
      OpenApi.Description,
      "Deletes the skill and its versions; a run created afterwards that lists it is refused (422 unknown_skills). 404 skill_not_found."
    )
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/skills")
  .annotateMerge(OpenApi.annotations({
    title: "Skills",
    description: "Named, reusable abilities of a project. A DoAnything run lists the names it may use (skills: [name, ...]; an " +
      "unknown name is 422 unknown_skills) and the agent calls each as the tool skill_<name> with the arguments its parameters " +
      "describe. An instructions skill is carried out by the run's agent; a script skill replays the steps a run recorded."
  }))
{}
