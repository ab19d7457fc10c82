/**
 * Skills (`/v1/projects/{pid}/skills`): named, reusable abilities a DoAnything run can be given
 * (`skills: [name, ...]`). Each is offered to the model as a tool `skill_<name>` with its typed
 * parameters. A skill is either instructions (carried out by the run's agent, with the arguments
 * filled in) or a recorded script (a run's cached script, replayed without the model, its
 * parameters substituted where the steps say `{{param:name}}`).
 */
import { Schema } from "effect"
import { CachedSteps } from "./cache-script.ts"

export const SkillName = Schema.String.check(Schema.isPattern(/^[a-z0-9_]{1,48}$/)).annotate({
  description: "1 to 48 lower-case letters, digits or _ (the model calls it as the tool skill_<name>)"
})

export const SkillKind = Schema.Literals(["instructions", "script"])
export type SkillKind = typeof SkillKind.Type

/** One version of a skill, as runs use it. */
export const SkillVersion = Schema.Struct({
  version: Schema.Int,
  description: Schema.String,
  /** A JSON Schema of type object: the tool's parameters. */
  parameters: Schema.Record(Schema.String, Schema.Unknown),
  kind: SkillKind,
  instructions: Schema.NullOr(Schema.String),
  steps: Schema.NullOr(CachedSteps),
  source_run_id: Schema.NullOr(Schema.String)
})
export type SkillVersion = typeof SkillVersion.Type

/** `{{param:name}}` in a script step's text parameters: replaced by the call's argument. */
export const PARAM_PLACEHOLDER = /\{\{\s*param\s*:\s*([A-Za-z0-9_]{1,64})\s*\}\}/g

/** Limits of a skill. */
export const MAX_SKILL_DESCRIPTION = 1000
export const MAX_SKILL_INSTRUCTIONS = 20_000
export const MAX_SKILLS = 200
