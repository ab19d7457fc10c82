/**
 * Skills on the wire: the create and update bodies, a skill with its versions, and their list
 * (src/http/api/skills.ts).
 */
import { Schema } from "effect"
import { MAX_SKILL_DESCRIPTION, MAX_SKILL_INSTRUCTIONS, SkillKind, SkillName } from "../skill.ts"
import { MaxString, Timestamp } from "../schemas.ts"
import { CacheScriptStepResponse } from "./cache-scripts.ts"
import { RunId } from "../run.ts"

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

const FromRunId = RunId.check(Schema.isMaxCodePoints(64)).annotate({
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
