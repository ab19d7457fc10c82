/**
 * Skills as a resource (`/v1/projects/{pid}/skills`): the rules of creating and changing a skill
 * (src/domain/skill.ts) over the store (src/store/skills.ts). A skill is either instructions, or a
 * script saved from a run ("save this run as a skill"): the cached script that `cache_script: true`
 * run recorded, without its `done` steps (a skill is called inside another run; its done would end
 * that run), with the literal text the run typed turned into `{{param:name}}` placeholders where
 * the caller says which parameter it stands for. An update saves a new version carrying over the
 * fields it does not give. The handlers go through this service.
 */
import { mapStrings } from "../domain/json-strings.ts"
import { Ajv } from "ajv"
import { Context, Effect, Layer, Schema } from "effect"
import type { CachedStep } from "../domain/cache-script.ts"
import type { SkillNameTaken, SkillNotFound, WireBody } from "../domain/errors.ts"
import type { ProjectId, RunId } from "../domain/run.ts"
import { MAX_SKILLS, PARAM_PLACEHOLDER } from "../domain/skill.ts"
import { RunStore } from "../store/runs.ts"
import { type Skill, type SkillContent, type SkillDetail, SkillStore } from "../store/skills.ts"

export type { Skill, SkillDetail }

/** The largest `parameters` schema accepted, as JSON text: it is sent to the model as a tool's parameters. */
export const MAX_SKILL_PARAMETERS_BYTES = 16 * 1024
/** A parameter's name: what `{{param:name}}` can name. */
const PARAMETER_NAME = /^[A-Za-z0-9_]{1,64}$/
/** The parameters of a skill created without them: none. */
export const DEFAULT_SKILL_PARAMETERS: Record<string, unknown> = { type: "object", properties: {} }

/**
 * A create or update this service refuses, with the status and envelope code it is answered with
 * (`loc` for a 422 that names the body field).
 */
export class SkillRefused extends Schema.TaggedError<SkillRefused>()("SkillRefused", {
  status: Schema.Literals([404, 409, 422]),
  code: Schema.String,
  detail: Schema.String,
  extra: Schema.Record(Schema.String, Schema.Unknown),
  loc: Schema.optional(Schema.Array(Schema.String))
}) {
  get httpStatus() { return this.status }
  /** A 422 names the refused body field in `extra.errors[]`. */
  wire(): WireBody {
    return this.status === 422
      ? { detail: this.detail, extra: { ...this.extra, errors: [{ loc: ["body", ...(this.loc ?? [])], msg: this.detail, type: "value_error" }] } }
      : { detail: this.detail, extra: this.extra }
  }
}

/** The fields of a create or an update (an update may give any of them; the rest carry over). */
export interface SkillInput {
  readonly description?: string | undefined
  readonly parameters?: Record<string, unknown> | undefined
  readonly instructions?: string | undefined
  readonly from_run_id?: RunId | undefined
  readonly parameter_values?: Record<string, string> | undefined
}

/** A placeholder already in a text ({{secret:...}}, {{param:...}}): literals are not replaced inside one. */
const PLACEHOLDER_SPLIT = /(\{\{[^{}]*\}\})/

/**
 * Replaces every occurrence of each literal in the string values of the steps' params (deep) with
 * `{{param:<name>}}`, longer literals first (a "Jane Doe" is replaced before a "Jane" of another
 * parameter, and a placeholder once inserted is not split by a later literal). `found`: the names
 * whose literal occurred.
 */
export const substituteLiterals = (steps: ReadonlyArray<CachedStep>, values: Record<string, string>) => {
  const found = new Set<string>()
  const entries = Object.entries(values).sort(([, a], [, b]) => b.length - a.length)
  const replace = (text: string) =>
    entries.reduce((acc, [name, literal]) =>
      acc.split(PLACEHOLDER_SPLIT).map((part, index) => {
        if (index % 2 === 1 || !part.includes(literal)) return part
        found.add(name)
        return part.split(literal).join(`{{param:${name}}}`)
      }).join(""), text)
  return { steps: steps.map((step) => ({ ...step, params: mapStrings(step.params, replace) as Record<string, unknown> })), found }
}

export class Skills extends Context.Service<Skills, {
  readonly create: (projectId: ProjectId, name: string, input: SkillInput & { readonly description: string }) => Effect.Effect<Skill, SkillNameTaken | SkillRefused>
  /** Saves a new version: the given fields, the others as the current version has them. */
  readonly update: (projectId: ProjectId, idOrName: string, input: SkillInput) => Effect.Effect<Skill, SkillNotFound | SkillRefused>
  /** The project's skills, newest first, before `beforeId` (a cursor page loads `limit + 1`). */
  readonly list: (projectId: ProjectId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<Skill>>
  /** A skill by id (sk_...) or name, with its versions newest first. */
  readonly get: (projectId: ProjectId, idOrName: string) => Effect.Effect<SkillDetail, SkillNotFound>
  readonly remove: (projectId: ProjectId, idOrName: string) => Effect.Effect<void, SkillNotFound>
}>()("wa/do-anything/Skills") {
  static readonly layer = Layer.effect(
    Skills,
    Effect.gen(function*() {
      const store = yield* SkillStore
      const runs = yield* RunStore
      const ajv = new Ajv({ strict: false })

      const invalid = (loc: ReadonlyArray<string>, detail: string, code = "validation_error", extra: Record<string, unknown> = {}) =>
        new SkillRefused({ status: 422, code, detail, extra, loc: [...loc] })

      /** The parameter names of a `parameters` schema, once it is checked to be a JSON Schema of type object. */
      const checkParameters = Effect.fnUntraced(function*(parameters: Record<string, unknown>) {
        if (parameters["type"] !== "object") {
          return yield* invalid(["parameters", "type"], "parameters must be a JSON Schema of type \"object\" (the tool's arguments)")
        }
        if (Buffer.byteLength(JSON.stringify(parameters)) > MAX_SKILL_PARAMETERS_BYTES) {
          return yield* invalid(["parameters"], `parameters must be at most ${MAX_SKILL_PARAMETERS_BYTES} bytes of JSON`)
        }
        const properties = parameters["properties"] ?? {}
        if (typeof properties !== "object" || properties === null || Array.isArray(properties)) {
          return yield* invalid(["parameters", "properties"], "parameters.properties must be an object of property schemas")
        }
        const names = Object.keys(properties)
        const badName = names.find((name) => !PARAMETER_NAME.test(name))
        if (badName !== undefined) {
          return yield* invalid(["parameters", "properties", badName], `parameter name ${JSON.stringify(badName)}: 1 to 64 letters, digits or _ (what {{param:name}} can name)`)
        }
        const required = parameters["required"]
        if (required !== undefined && (!Array.isArray(required) || required.some((name) => typeof name !== "string" || !names.includes(name)))) {
          return yield* invalid(["parameters", "required"], "parameters.required must list names of parameters.properties")
        }
        const compiled = yield* Effect.try({ try: () => ajv.compile(parameters), catch: (cause) => cause })
          .pipe(Effect.as(undefined), Effect.catch((cause) => Effect.succeed(cause instanceof Error ? cause.message : String(cause))))
        if (compiled !== undefined) return yield* invalid(["parameters"], `parameters is not a valid JSON Schema: ${compiled}`)
        return names
      })

      /** Every `{{param:name}}` of the text names a parameter. */
      const checkPlaceholders = Effect.fnUntraced(function*(texts: ReadonlyArray<string>, names: ReadonlyArray<string>, loc: ReadonlyArray<string>) {
        const used = new Set(texts.flatMap((text) => [...text.matchAll(PARAM_PLACEHOLDER)].map((match) => match[1]!)))
        const unknown = [...used].filter((name) => !names.includes(name))
        if (unknown.length > 0) {
          return yield* invalid(loc, `{{param:${unknown[0]}}} names no property of parameters (parameters: ${names.join(", ") || "none"})`, "unknown_parameters", { names: unknown })
        }
      })

      /** The steps of a script skill made from a run: its cached script, done steps dropped, literals made placeholders. */
      const stepsOfRun = Effect.fnUntraced(function*(projectId: ProjectId, runId: RunId, parameterValues: Record<string, string>, names: ReadonlyArray<string>) {
        const run = yield* runs.findRun(projectId, runId, "do_anything").pipe(
          Effect.catchTag("RunNotFound", () =>
            Effect.fail(new SkillRefused({ status: 404, code: "run_not_found", detail: `no DoAnything run ${runId} in this project`, extra: { run_id: runId } })))
        )
        if (run.status !== "done") {
          return yield* new SkillRefused({
            status: 409,
            code: "run_not_done",
            detail: `run ${runId} is ${run.status}; a skill is saved from a run that ended done`,
            extra: { run_id: runId, status: run.status }
          })
        }
        const script = yield* store.scriptOfRun(projectId, runId)
        const steps = (script ?? []).filter((step) => step.tool !== "done")
        if (steps.length === 0) {
          return yield* invalid(
            ["from_run_id"],
            script === undefined
              ? `run ${runId} saved no script: run the task with cache_script: true, then save that run as a skill`
              : `the script run ${runId} saved has no steps besides done`,
            "run_has_no_script",
            { run_id: runId }
          )
        }
        const unknown = Object.keys(parameterValues).filter((name) => !names.includes(name))
        if (unknown.length > 0) {
          return yield* invalid(["parameter_values", unknown[0]!], `parameter_values names ${unknown.join(", ")}, not properties of parameters`, "unknown_parameters", { names: unknown })
        }
        const substituted = substituteLiterals(steps, parameterValues)
        const missing = Object.keys(parameterValues).filter((name) => !substituted.found.has(name))
        if (missing.length > 0) {
          return yield* invalid(
            ["parameter_values", missing[0]!],
            `no step of run ${runId} has the text given for ${missing.join(", ")} in its parameters: give the literal text the run typed`,
            "parameter_value_not_found",
            { names: missing }
          )
        }
        return substituted.steps
      })

      /** The content of a new version: the input over `current` (nothing for a create). */
      const contentOf = Effect.fnUntraced(function*(projectId: ProjectId, input: SkillInput, current: SkillContent | undefined) {
        if (input.instructions !== undefined && input.from_run_id !== undefined) {
          return yield* invalid(["from_run_id"], "give instructions or from_run_id, not both")
        }
        if (current === undefined && input.instructions === undefined && input.from_run_id === undefined) {
          return yield* invalid(["instructions"], "give instructions (what the agent does) or from_run_id (a run whose script the skill replays)")
        }
        if (input.parameter_values !== undefined && input.from_run_id === undefined) {
          return yield* invalid(["parameter_values"], "parameter_values goes with from_run_id (the literals that run typed)")
        }
        const description = input.description ?? current!.description
        const parameters = input.parameters ?? current?.parameters ?? DEFAULT_SKILL_PARAMETERS
        const names = yield* checkParameters(parameters)
        if (input.instructions !== undefined) {
          yield* checkPlaceholders([input.instructions], names, ["instructions"])
          return { description, parameters, kind: "instructions", instructions: input.instructions, steps: null, sourceRunId: null } satisfies SkillContent
        }
        if (input.from_run_id !== undefined) {
          const steps = yield* stepsOfRun(projectId, input.from_run_id, input.parameter_values ?? {}, names)
          return { description, parameters, kind: "script", instructions: null, steps, sourceRunId: input.from_run_id } satisfies SkillContent
        }
        // Neither: the current instructions or steps, still naming only parameters it has.
        const kept = current!
        yield* checkPlaceholders(
          kept.kind === "instructions" ? [kept.instructions ?? ""] : [JSON.stringify(kept.steps ?? [])],
          names,
          ["parameters"]
        )
        return { ...kept, description, parameters } satisfies SkillContent
      })

      const create = Effect.fn("Skills.create")(function*(projectId: ProjectId, name: string, input: SkillInput & { readonly description: string }) {
        const content = yield* contentOf(projectId, input, undefined)
        return yield* store.create(projectId, name, content, MAX_SKILLS).pipe(Effect.catchTag("SkillLimitReached", ({ count }) =>
          Effect.fail(new SkillRefused({
            status: 409,
            code: "skill_limit_reached",
            detail: `this project has ${count} skills, the most it may have (${MAX_SKILLS}); delete one first`,
            extra: { limit: MAX_SKILLS }
          }))))
      })

      const update = Effect.fn("Skills.update")(function*(projectId: ProjectId, idOrName: string, input: SkillInput) {
        const current = yield* store.get(projectId, idOrName)
        const content = yield* contentOf(projectId, input, {
          description: current.description,
          parameters: current.parameters,
          kind: current.kind,
          instructions: current.instructions,
          steps: current.steps,
          sourceRunId: current.source_run_id
        })
        return yield* store.update(projectId, current.id, content)
      })

      return Skills.of({
        create,
        update,
        list: Effect.fn("Skills.list")(function*(projectId, limit, beforeId) {
          return yield* store.list(projectId, limit, beforeId)
        }),
        get: Effect.fn("Skills.get")(function*(projectId, idOrName) {
          return yield* store.get(projectId, idOrName)
        }),
        remove: Effect.fn("Skills.remove")(function*(projectId, idOrName) {
          yield* store.remove(projectId, idOrName)
        })
      })
    })
  ).pipe(Layer.provide(SkillStore.layer))
}
