/**
 * Cached scripts on the wire: a script with its steps and versions, and their list
 * (src/http/api/cache-scripts.ts).
 */
import { Schema } from "effect"
import { CachedStep, CachedTarget, StepPrecondition } from "../cache-script.ts"
import { Timestamp } from "../schemas.ts"

/** The domain's schemas (what the store decodes), with the descriptions the document shows. */
const TargetResponse = Schema.Struct({
  ...CachedTarget.fields,
  role: CachedTarget.fields.role.annotate({ description: "the element's ARIA role (button, textbox, link, ...)" }),
  name: CachedTarget.fields.name.annotate({ description: "the element's accessible name" }),
  containers: CachedTarget.fields.containers.annotate({
    description: "the landmark containers around it, outermost first (form, dialog \"Sign in\", nav)"
  }),
  ordinal: CachedTarget.fields.ordinal.annotate({ description: "its index among the page's elements of the same role and name (0: the first)" }),
  css: CachedTarget.fields.css.annotate({ description: "a CSS path to it in the main frame (the last resort of a replay); null when it was in a frame" })
}).annotate({ description: "the element the step acted on, as a replay finds it again in a later page" })

const PreconditionResponse = Schema.Struct({
  ...StepPrecondition.fields,
  url: StepPrecondition.fields.url.annotate({ description: "origin and path of the active tab (no query or fragment)" }),
  title: StepPrecondition.fields.title.annotate({ description: "the page's title" })
}).annotate({ description: "the page the step was taken on; a replay checks it before acting" })

export const CacheScriptStepResponse = Schema.Struct({
  ...CachedStep.fields,
  tool: CachedStep.fields.tool.annotate({ description: "the browser tool of the step (click, type, navigate, done, ...)" }),
  params: CachedStep.fields.params.annotate({
    description: "the tool's parameters without element refs (their elements are target and to_target); secret placeholders as written, never a value"
  }),
  target: Schema.NullOr(TargetResponse).annotate({ description: "the element the tool acted on; null for a tool that acts on none" }),
  to_target: Schema.NullOr(TargetResponse).annotate({ description: "drag: the element dropped on; null otherwise" }),
  expects: PreconditionResponse,
  output_on_page: CachedStep.fields.output_on_page.annotate({
    description: "done: the text values of the output the page showed; a replay gives the saved output only while the page still shows them"
  })
})

export const CacheScriptVersionResponse = Schema.Struct({
  version: Schema.Int.annotate({ description: "1: the first recording; a later version is saved by a replay in which the model took steps again" }),
  source_run_id: Schema.NullOr(Schema.String).annotate({ description: "the run whose steps this version holds (run_...)" }),
  healed_steps: Schema.Int.annotate({ description: "steps the model took again in the replay that made this version (0: a first recording)" }),
  created_at: Timestamp
})

const scriptFields = {
  id: Schema.String.annotate({ description: "cs_..." }),
  instructions: Schema.String.annotate({
    description: "the task's instructions as the cache key reads them: lower case, spacing collapsed, trailing punctuation dropped"
  }),
  start_origin: Schema.NullOr(Schema.String).annotate({ description: "the origin the runs of the task start on (part of the key); null when none was given" }),
  output_schema: Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)).annotate({
    description: "the output_schema (a JSON Schema) of the runs of the task (part of the key); null when they gave none"
  }),
  version: Schema.Int.annotate({ description: "the current version: the one a replay uses and whose steps are shown" }),
  steps: Schema.Array(CacheScriptStepResponse).annotate({ description: "the steps of the current version, in order" }),
  hit_count: Schema.Int.annotate({ description: "replays that used the script" }),
  heal_count: Schema.Int.annotate({ description: "replays that healed a step: found its element by the CSS path only, or handed it to the model" }),
  last_used_at: Schema.NullOr(Timestamp).annotate({ description: "when a replay last used it; null when none has" }),
  created_at: Timestamp,
  updated_at: Timestamp.annotate({ description: "when its last version was saved" })
}

/** A script in a list: without its versions. */
export const CacheScriptSummaryResponse = Schema.Struct(scriptFields)

export const CacheScriptResponse = Schema.Struct({
  ...scriptFields,
  versions: Schema.Array(CacheScriptVersionResponse).annotate({ description: "every version, newest first" })
})

export const CacheScriptListResponse = Schema.Struct({
  items: Schema.Array(CacheScriptSummaryResponse),
  next_cursor: Schema.NullOr(Schema.String)
})
