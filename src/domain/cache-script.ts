/**
 * Cached scripts (`cache_script: true` on a DoAnything run): the actions of a run that ended `done`,
 * saved so the next run of the same task replays them without the model (src/cache/).
 *
 * A step keeps its tool, its parameters (secret placeholders as written, never a value) and, for a
 * tool that acts on an element, a description of that element which outlives its ref: role,
 * accessible name, the landmark containers around it, its place among elements of the same role
 * and name, and a CSS path as the last resort. `expects` is the page the step was taken on.
 */
import { Schema } from "effect"

/** An element as the replay finds it again in a later page. */
export const CachedTarget = Schema.Struct({
  role: Schema.String,
  name: Schema.String,
  /** Landmark containers around it, outermost first ("form", "dialog \"Sign in\"", "nav"). */
  containers: Schema.Array(Schema.String),
  /** Its index among the elements of the page with the same role and name (0: the first). */
  ordinal: Schema.Int,
  /** A CSS path to it in the main frame, when it was in the main frame. */
  css: Schema.NullOr(Schema.String)
})
export type CachedTarget = typeof CachedTarget.Type

/** Where a step was taken: the replay checks it before acting. */
export const StepPrecondition = Schema.Struct({
  /** Origin and path of the active tab (no query or fragment). */
  url: Schema.String,
  /** The page's title. */
  title: Schema.String
})
export type StepPrecondition = typeof StepPrecondition.Type

export const CachedStep = Schema.Struct({
  tool: Schema.String,
  /** The tool's parameters, without element refs (their elements are `target`, `to_target`). */
  params: Schema.Record(Schema.String, Schema.Unknown),
  target: Schema.NullOr(CachedTarget),
  /** drag: the element dropped on. */
  to_target: Schema.NullOr(CachedTarget),
  expects: StepPrecondition,
  /**
   * done: the text values of the output that the page showed when it was given. A replay gives
   * the saved output only while the page still shows them; otherwise the model writes it again.
   */
  output_on_page: Schema.Array(Schema.String)
})
export type CachedStep = typeof CachedStep.Type

export const CachedSteps = Schema.Array(CachedStep)
