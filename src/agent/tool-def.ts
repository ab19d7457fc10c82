/**
 * The shape every agent tool shares (browser, file and mail tools): parameters as a struct, any
 * success, and a failure `{error, code}` returned to the model rather than raised, so a failed
 * step is something the agent reads and acts on.
 */
import { Schema } from "effect"
import { Tool } from "effect/ai"

export const ToolFailure = Schema.Struct({ error: Schema.String, code: Schema.String })
export type ToolFailure = typeof ToolFailure.Type

export const tool = <const Name extends string, P extends Schema.Struct.Fields>(name: Name, description: string, parameters: P) =>
  Tool.make(name, {
    description,
    parameters: Schema.Struct(parameters),
    success: Schema.Unknown,
    failure: ToolFailure,
    failureMode: "return"
  })
