/**
 * Skills (`/v1/projects/{pid}/skills`): named, reusable abilities of a project that a DoAnything
 * run is given by name (`skills: [name, ...]`) and the agent calls as the tool `skill_<name>` with
 * typed parameters. A skill is instructions, or a script saved from a run that recorded one
 * (`cache_script: true`). Created, listed, read with their versions, updated (a new version) and
 * deleted by any key of the project, as its profiles are.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, NotFound, ValidationError } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { MAX_SKILLS } from "../../domain/skill.ts"
import { CreateSkillRequest, SkillListResponse, SkillResponse, SkillSummaryResponse, UpdateSkillRequest } from "../../domain/wire/skills.ts"
import { MaxString, ProjectIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

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
