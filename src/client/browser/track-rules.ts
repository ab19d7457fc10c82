/**
 * src/domain/track-rules.ts as the browser SDK reads it (vite.client.config.ts): a trigger or a
 * stop condition is checked for its shape only (a JSON object), and the rule language is the
 * server's, which answers a bad rule with a 422 `validation_error` at the rule's path. Only what
 * the SDK's part of the contract imports from that module is here (the build fails on a missing
 * name); the rules' documentation is the OpenAPI document's, which the server serves.
 */
import { Schema } from "effect"
import type * as Rules from "../../domain/track-rules.ts"

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

export const TriggerDsl: typeof Rules.TriggerDsl = JsonObject

export const StopConditionDsl: typeof Rules.StopConditionDsl = JsonObject

export const RULES_DOCUMENTATION: typeof Rules.RULES_DOCUMENTATION = ""
