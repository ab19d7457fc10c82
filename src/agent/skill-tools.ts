/**
 * Skills as tools (`skills: [name, ...]` on a DoAnything run; the resource is src/do-anything/
 * skills.ts). Each skill the run lists is offered as a tool `skill_<name>` whose parameters are the
 * skill's JSON Schema properties.
 *
 * - An instructions skill answers with its instructions, the call's arguments filled in where they
 *   say `{{param:name}}`: the run's own agent carries them out as its next steps, in the same
 *   browser, within the run's step budget and with its conversation (a decision: one conversation
 *   and one budget per run, rather than a nested model loop).
 * - A script skill replays its steps (a run's cached script) without the model, the arguments put
 *   where the steps say `{{param:name}}`, through the run's own tools (events, secrets, the safety
 *   boundary apply). A step that cannot be replayed stops the skill: the tool fails with what was
 *   done and why, and the agent finishes the skill's work itself.
 *
 * Events: `run.skill.called` {skill, version, kind, arguments}, `run.skill.completed` {skill,
 * steps} or `run.skill.failed` {skill, step, reason}.
 */
import { Effect, Layer, Schema } from "effect"
import { Toolkit } from "effect/ai"
import { planStep } from "../cache/script.ts"
import type { ContextLease } from "../browser/pool.ts"
import type { CachedStep } from "../domain/cache-script.ts"
import { mapStrings } from "../domain/json-strings.ts"
import { PARAM_PLACEHOLDER, type SkillKind } from "../domain/skill.ts"
import { tool } from "./tool-def.ts"
import type { EventData, RunEventType } from "../domain/events.ts"
import type { SkillId } from "../domain/id-schemas.ts"

/** A skill as a run gets it (its current version). */
export interface RunSkill {
  readonly id: SkillId
  readonly name: string
  readonly version: number
  readonly description: string
  readonly parameters: Record<string, unknown>
  readonly kind: SkillKind
  readonly instructions: string | null
  readonly steps: ReadonlyArray<CachedStep> | null
}

export interface SkillToolContext {
  readonly lease: ContextLease
  readonly emit: <T extends RunEventType>(type: T, data: EventData<T>) => Effect.Effect<void>
  /** The page's snapshot text as the model would see it (redacted). */
  readonly observe: Effect.Effect<string, unknown>
  /** Runs one of the run's tools; its failure message, if it failed. */
  readonly runTool: (name: string, params: Record<string, unknown>) => Effect.Effect<string | undefined>
  readonly recordCall: (skillId: SkillId) => Effect.Effect<void>
}

export const skillToolName = (name: string) => `skill_${name}`

/** The text of `{{param:name}}` placeholders with the call's arguments (an argument not given stays a placeholder). */
const fill = (text: string, args: Record<string, unknown>): string =>
  text.replace(new RegExp(PARAM_PLACEHOLDER.source, "g"), (whole, name: string) =>
    args[name] === undefined ? whole : typeof args[name] === "string" ? (args[name] as string) : JSON.stringify(args[name]))

/** The tool of a skill: one parameter per property of its JSON Schema, as the schema describes it. */
const toolOf = (skill: RunSkill) => {
  const properties = (skill.parameters.properties ?? {}) as Record<string, Record<string, unknown>>
  const required = new Set(Array.isArray(skill.parameters.required) ? skill.parameters.required as Array<string> : [])
  const fields: Record<string, Schema.Top> = {}
  for (const [name, schema] of Object.entries(properties)) {
    const field = Schema.Any.check(Schema.makeFilter(() => true, { toJsonSchema: () => [schema, true] }))
    fields[name] = required.has(name) ? field : Schema.optional(field)
  }
  return tool(skillToolName(skill.name), `Skill "${skill.name}": ${skill.description}`, fields as Schema.Struct.Fields)
}

/** The skills' tools and their handlers, bound to one run. */
export const skillToolkit = (skills: ReadonlyArray<RunSkill>, ctx: SkillToolContext) => {
  const tools = skills.map(toolOf)
  const toolkit = Toolkit.make(...tools)
  const call = (skill: RunSkill, args: Record<string, unknown>) =>
    Effect.gen(function*() {
      yield* ctx.emit("run.skill.called", { skill: skill.name, version: skill.version, kind: skill.kind, arguments: args })
      yield* ctx.recordCall(skill.id)
      if (skill.kind === "instructions") {
        yield* ctx.emit("run.skill.completed", { skill: skill.name, steps: 0 })
        return {
          skill: skill.name,
          instructions: fill(skill.instructions ?? "", args),
          note: "Carry out these instructions now, on the current page, then go on with the task."
        }
      }
      const steps = (skill.steps ?? []).filter((step) => step.tool !== "done")
      for (const [index, step] of steps.entries()) {
        const filled = { ...step, params: mapStrings(step.params, (text) => fill(text, args)) as Record<string, unknown> }
        const snapshot = yield* ctx.observe.pipe(Effect.orElseSucceed(() => ""))
        const plan = yield* planStep(ctx.lease, filled, snapshot)
        const failure = plan._tag === "miss" ? plan.reason : yield* ctx.runTool(plan.tool, plan.params)
        if (failure !== undefined) {
          yield* ctx.emit("run.skill.failed", { skill: skill.name, step: index + 1, reason: failure })
          return yield* Effect.fail({
            code: "SkillStepFailed",
            error: `the skill did ${index} of its ${steps.length} steps; step ${index + 1} (${step.tool}` +
              `${step.target === null ? "" : ` on ${step.target.role} ${JSON.stringify(step.target.name)}`}) could not be replayed: ${failure}. ` +
              "Finish what the skill does yourself."
          })
        }
      }
      yield* ctx.emit("run.skill.completed", { skill: skill.name, steps: steps.length })
      return { skill: skill.name, done: true, steps: steps.length, url: ctx.lease.page()?.url() ?? null }
    })
  const handlers = Object.fromEntries(skills.map((skill) => [skillToolName(skill.name), (args: Record<string, unknown>) => call(skill, args)]))
  return {
    toolkit,
    // The tools are made at run time, so their handlers' types are too: the layer needs nothing and
    // provides the handlers the merged toolkit looks up by name.
    layer: (toolkit.toLayer as unknown as (handlers: Record<string, unknown>) => Layer.Layer<never>)(handlers)
  }
}
