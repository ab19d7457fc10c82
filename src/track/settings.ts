/**
 * The checks a monitor's settings pass wherever they come from (create, refine, the end of
 * alignment) that the wire schema cannot make: the rule languages (with the bad path), the
 * schedule against the operator's minimum interval. (The channel is checked by NotificationChannels.)
 */
import { Effect, Result } from "effect"
import { InvalidField } from "../domain/errors.ts"
import { canonicalSchedule, type ScheduleSpec, validateSchedule } from "../domain/schedule-spec.ts"
import { parseStopCondition, parseTrigger } from "../domain/track-rules.ts"

const ruleProblem = (field: "trigger_dsl" | "stop_condition_dsl", input: Record<string, unknown> | null | undefined) => {
  if (input === null || input === undefined) return Effect.void
  const parsed = (field === "trigger_dsl" ? parseTrigger : parseStopCondition)(input)
  if (Result.isSuccess(parsed)) return Effect.void
  const first = parsed.failure[0]!
  return Effect.fail(new InvalidField({
    field: [field, ...first.path.map(String)],
    detail: `${field} is not a valid rule: ${parsed.failure.map((error) => `${[field, ...error.path].join(".")}: ${error.message}`).join("; ")}`,
    msg: first.message,
    type: "value_error"
  }))
}

export const checkRules = (input: { readonly trigger_dsl?: Record<string, unknown> | null | undefined; readonly stop_condition_dsl?: Record<string, unknown> | null | undefined }) =>
  Effect.andThen(ruleProblem("trigger_dsl", input.trigger_dsl), ruleProblem("stop_condition_dsl", input.stop_condition_dsl))

/** The schedule in its stored (canonical) form, or InvalidField on `schedule.<field>`. */
export const checkSchedule = (spec: ScheduleSpec, minimumSeconds: number) => {
  const problem = validateSchedule(spec, minimumSeconds)
  return problem === undefined
    ? Effect.succeed(canonicalSchedule(spec))
    : Effect.fail(new InvalidField({ field: ["schedule", ...problem.path], detail: `schedule: ${problem.message}`, msg: problem.message, type: "value_error" }))
}

