/**
 * The agent's tools. Their names are the vocabulary of `allowed_actions`; a tool outside the list
 * is never offered to the model. Every tool reports `run.action.started` and then
 * `run.action.completed` or `run.action.failed`; a failure goes back to the model as the tool's
 * result so it can retry, switch tool or give up.
 */
import type { Recorder } from "../cache/script.ts"
import { Context, Effect, Option, Schema } from "effect"
import { type AiError, LanguageModel, Toolkit } from "effect/ai"
import { tool, type ToolFailure } from "./tool-def.ts"
import * as actions from "../browser/actions.ts"
import type { ActionError } from "../browser/errors.ts"
import { observe } from "../browser/observe.ts"
import type { ContextLease } from "../browser/pool.ts"
import { type ExtractionError, extractFromPage } from "../reader/extract-in-page.ts"
import { fileTools } from "./file-tools.ts"
import { mailTools } from "./mail-tools.ts"
import { type ClickDecision, confirmClick, type SubmitGate, submitGate } from "../safety/confirm.ts"
import type { RunSafety } from "../safety/service.ts"
import { submitTargetOf, targetAt, targetOfRef } from "../safety/target.ts"
import type { EventData, RunEventType } from "../domain/events.ts"
import type { ProjectId, RunId } from "../domain/run.ts"

const Ref = Schema.String.annotate({ description: "element ref from the page snapshot, e.g. e12 or f1e3" })

export const Navigate = tool("navigate", "Open a URL in the current tab.", { url: Schema.String })
export const Click = tool("click", "Click the element with this ref.", { ref: Ref })
export const Type = tool("type", "Type text into the input with this ref (replacing its value); submit presses Enter after.", {
  ref: Ref,
  text: Schema.String,
  submit: Schema.optional(Schema.Boolean)
})
export const PressKey = tool("press_key", "Press a key in the current tab, e.g. Enter, Escape, ArrowDown, Control+A.", { key: Schema.String })
export const SelectOption = tool("select_option", "Choose option(s) of the select with this ref, by label or value.", {
  ref: Ref,
  values: Schema.Array(Schema.String)
})
export const Scroll = tool("scroll", "Scroll the page up or down (amount in pixels, default one screen), or bring a ref into view.", {
  direction: Schema.optional(Schema.Literals(["up", "down"])),
  amount: Schema.optional(Schema.Number),
  ref: Schema.optional(Ref)
})
export const Hover = tool("hover", "Move the mouse over the element with this ref.", { ref: Ref })
export const Drag = tool(
  "drag",
  "Drag the element with this ref (a `draggable` item, a slider's handle, a card) and drop it on the element of to_ref, " +
    "or move it by dx/dy CSS pixels (a handle's line shows its track=... and at=... position). Works for sortable lists, kanban boards and div sliders.",
  {
    ref: Ref,
    to_ref: Schema.optional(Ref),
    dx: Schema.optional(Schema.Number),
    dy: Schema.optional(Schema.Number)
  }
)
export const ClickAt = tool("click_at", "Click at a point of the visible page: x, y in CSS pixels from the viewport's top-left corner (as in a screenshot). Prefer click with a ref when the element has one.", {
  x: Schema.Number,
  y: Schema.Number
})
export const TypeAt = tool("type_at", "Click at a point of the visible page (x, y in CSS pixels from the viewport's top-left) and type text there, replacing a field's value; submit presses Enter after.", {
  x: Schema.Number,
  y: Schema.Number,
  text: Schema.String,
  submit: Schema.optional(Schema.Boolean)
})
export const GoBack = tool("go_back", "Go back to the previous page in the current tab.", {})
export const WaitFor = tool("wait_for", "Wait until a text appears, a ref is visible, or a number of milliseconds passed (max 30000).", {
  text: Schema.optional(Schema.String),
  ref: Schema.optional(Ref),
  timeout_ms: Schema.optional(Schema.Number)
})
export const SwitchTab = tool("switch_tab", "Make the tab with this index (from the tab list) the current one.", { index: Schema.Number })
export const ReadPage = tool("read_page", "Read the main content of the current page as Markdown.", {})
export const Extract = tool("extract", "Extract fields from the current page as JSON matching a JSON schema.", {
  schema: Schema.Record(Schema.String, Schema.Unknown).annotate({ description: "a JSON Schema object" }),
  instruction: Schema.optional(Schema.String)
})
export const Screenshot = tool("screenshot", "Take a screenshot of the current tab (shared with the user as a run.screenshot event).", {})
export const AskHuman = tool("ask_human", "Ask the user a question and wait for the answer (captcha, 2FA code, a decision you cannot make).", {
  prompt: Schema.String,
  schema: Schema.optional(Schema.Record(Schema.String, Schema.Unknown))
})
const doneDescription = "Finish the task with its final output (matching the output schema when one is given)."

/**
 * `next_run_at` of `done`, offered only to a run of an autonomous schedule
 * (src/do-anything/schedules.ts): when the session should run again, clamped by the server to
 * the schedule's bounds.
 */
const nextRunAt = {
  next_run_at: Schema.optional(Schema.String.annotate({
    description: "ISO 8601 date-time (with Z or an offset) of the next run of this scheduled task; the server clamps it to the schedule's bounds"
  }))
}

// Schema.Any rather than Unknown: Unknown drops its annotations from the JSON schema the model sees.
const plainDone = tool("done", doneDescription, {
  output: Schema.Any.annotate({ description: "the final result of the task" })
})

/** `done` as the handlers see it: `next_run_at` is only offered to an autonomous schedule's runs (toolkitFor). */
export const Done = tool("done", doneDescription, {
  output: Schema.Any.annotate({ description: "the final result of the task" }),
  ...nextRunAt
})

/**
 * `done` for a run with an `output_schema`: its `output` parameter carries that schema as its JSON
 * schema, as structured-output APIs do, so a model that follows tool schemas gets the shape right
 * the first time. The value is still validated when the run finishes (with a repair loop), so the
 * parameter itself accepts anything.
 */
const doneWithOutputSchema = (outputSchema: Record<string, unknown>, autonomous: boolean) =>
  tool("done", doneDescription, {
    output: Schema.Any.check(Schema.makeFilter(() => true, { toJsonSchema: () => [outputSchema, true] })).annotate({
      description: "the final result of the task, matching the output schema"
    }),
    ...(autonomous ? nextRunAt : {})
  })

const browserTools = [
  Navigate, Click, Type, PressKey, SelectOption, Scroll, Hover, Drag, ClickAt, TypeAt, GoBack, WaitFor, SwitchTab,
  ReadPage, Extract, Screenshot, AskHuman, Done
] as const

/** Every tool: the browser's, the workspace's (file-tools.ts, FileToolkitHandlers) and the inbox's (mail-tools.ts, MailToolkitHandlers). */
export const allTools = [...browserTools, ...fileTools, ...mailTools] as const

export const toolNames: ReadonlyArray<string> = allTools.map((t) => t.name)

export const AgentToolkit = Toolkit.make(...browserTools)

/** What a tool handler needs from the run it serves. */
export class RunContext extends Context.Service<RunContext, {
  readonly runId: RunId
  readonly lease: ContextLease
  /** Emits an event on the run's log. */
  readonly emit: <T extends RunEventType>(type: T, data: EventData<T>) => Effect.Effect<void>
  /** Stores a screenshot and announces it with a signed URL. */
  readonly publishScreenshot: (jpeg: Uint8Array) => Effect.Effect<string>
  /** Raises an input request and waits for the answer. */
  readonly askHuman: (prompt: string, schema: unknown) => Effect.Effect<unknown>
  /** Validates and records the final output; a string explains why it was refused. */
  readonly finish: (output: unknown, nextRunAt?: string) => Effect.Effect<string | undefined>
  readonly allowPrivateNetworks: boolean
  /** The secrets the run named (noSecrets when none): what type and type_at substitute, what redact hides. */
  readonly secrets: RunSecrets
  /** The project's safety boundary (src/safety/): clicks in its confirm categories ask a person first. */
  readonly safety: RunSafety
  /** With cache_script: the run's actions, recorded as a cached script's steps (src/cache/script.ts). */
  readonly recorder?: Recorder | undefined
}>()("wa/agent/RunContext") {}

// --- Secrets ---------------------------------------------------------------------------------

export type SecretKind = "secret" | "totp"

/**
 * The secrets of one run (src/secrets/ implements it). The model sees only placeholders,
 * `{{secret:name}}` for a value and `{{totp:name}}` for a TOTP secret's current code; type and
 * type_at put the value into the field, on the secret's origins only, and everything the model,
 * the events and the logs get passes through `redact`.
 */
export interface RunSecrets {
  /** For the prompt: never a value. */
  readonly listed: ReadonlyArray<{
    readonly name: string
    readonly kind: SecretKind
    readonly origins: ReadonlyArray<string>
    readonly description: string | null
  }>
  /** The value of a placeholder typed into a field whose document has `origin`, or why not. */
  readonly reveal: (kind: SecretKind, name: string, origin: string) => { readonly value: string } | { readonly refused: string }
  /** `text` with every value of the run's secrets (and every code they gave out) replaced by its placeholder. */
  readonly redact: (text: string) => string
}

export const noSecrets: RunSecrets = {
  listed: [],
  reveal: (kind, name) => ({
    refused: `{{${kind}:${name}}} is not available: this run names no secrets (a run lists the project secrets it may use in its secrets field)`
  }),
  redact: (text) => text
}

/** The run names a secret the project does not have, or one that does not open. */
export class SecretsUnavailable extends Schema.TaggedError<SecretsUnavailable>()("SecretsUnavailable", { detail: Schema.String }) {}

/** Where a run's secrets come from (src/secrets/service.ts SecretVaultLive). */
export class SecretVault extends Context.Service<SecretVault, {
  readonly forRun: (projectId: ProjectId, names: ReadonlyArray<string>) => Effect.Effect<RunSecrets, SecretsUnavailable>
}>()("wa/agent/SecretVault") {}

const placeholderPattern = /\{\{\s*(secret|totp)\s*:\s*([A-Za-z0-9_-]{1,64})\s*\}\}/g

export const hasPlaceholder = (text: string): boolean => new RegExp(placeholderPattern.source).test(text)

/** `text` with its placeholders replaced by their values for a field on `origin`; the first refusal otherwise. */
export const substituteSecrets = (secrets: RunSecrets, text: string, origin: string): { readonly text: string } | { readonly refused: string } => {
  let refused: string | undefined
  const substituted = text.replace(new RegExp(placeholderPattern.source, "g"), (_match, kind: SecretKind, name: string) => {
    if (refused !== undefined) return ""
    const revealed = secrets.reveal(kind, name, origin)
    if ("refused" in revealed) {
      refused = revealed.refused
      return ""
    }
    return revealed.value
  })
  return refused === undefined ? { text: substituted } : { refused }
}

/** Every string inside `value` (object keys and values, array items) passed through `redact`. */
export const redactDeep = (value: unknown, redact: (text: string) => string): unknown => {
  if (typeof value === "string") return redact(value)
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, redact))
  if (value !== null && typeof value === "object" && !(value instanceof Uint8Array)) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [redact(key), redactDeep(item, redact)]))
  }
  return value
}

/** A tool's own refusal (no tab, no model, output refused, ...), with the code the model sees. */
export class ToolRefused extends Schema.TaggedError<ToolRefused>()("ToolRefused", {
  code: Schema.String,
  message: Schema.String
}) {}

/** Everything a tool body can fail with; each carries a message written for the model. */
type ToolError = ToolRefused | ActionError | ExtractionError | AiError.AiError

/** What the model reads of a failure: the refusal's own code, else the error's tag, and its message. */
const describeError = (error: ToolError): ToolFailure =>
  error._tag === "ToolRefused" ? { code: error.code, error: error.message } : { code: error._tag, error: error.message }

/** Wraps a tool body with its events; failures become the tool's returned failure. */
const instrumented = <A>(ctx: RunContext["Service"], name: string, rawParams: unknown, body: Effect.Effect<A, ToolError, RunContext>) =>
  Effect.gen(function*() {
    // What the events and the model get passes through the run's secrets' redaction (a value a
    // page shows back, a field's content in an error), before anything is cut short.
    const redact = ctx.secrets.redact
    const withSecrets = ctx.secrets.listed.length > 0
    const params = withSecrets ? redactDeep(rawParams, redact) : rawParams
    yield* ctx.emit("run.action.started", { action: name, params })
    // Described before it runs: a click can take its element away.
    const pending = ctx.recorder === undefined ? undefined : yield* ctx.recorder.before(name, params)
    const result = yield* Effect.result(Effect.provideService(body, RunContext, ctx))
    if (result._tag === "Failure") {
      const described = describeError(result.failure)
      const failure = { code: described.code, error: redact(described.error) }
      yield* ctx.emit("run.action.failed", { action: name, params, ...failure })
      return yield* Effect.fail(failure)
    }
    const success = withSecrets ? redactDeep(result.success, redact) : result.success as unknown
    if (pending !== undefined) ctx.recorder?.succeeded(pending)
    yield* ctx.emit("run.action.completed", { action: name, result: summarize(success) })
    return success
  })

const summarize = (value: unknown): unknown => {
  const text = typeof value === "string" ? value : JSON.stringify(value)
  return text !== undefined && text.length > 500 ? `${text.slice(0, 500)}…` : value
}

const withLease = <A, E>(f: (lease: ContextLease) => Effect.Effect<A, E>) => Effect.flatMap(RunContext, (ctx) => f(ctx.lease))

const page = withLease((lease) =>
  Effect.fromNullishOr(lease.page()).pipe(Effect.mapError(() => new ToolRefused({ code: "NoPage", message: "no tab is open" })))
)

/** Asks the model for JSON matching a JSON schema from the page's content. */
const extractJson = (pageMarkdown: string, schema: unknown, instruction: string | undefined) =>
  Effect.gen(function*() {
    // The extraction is a model request of its own: the page goes to it without the run's secrets.
    const markdown = (yield* RunContext).secrets.redact(pageMarkdown)
    const model = yield* Effect.serviceOption(LanguageModel.LanguageModel)
    if (Option.isNone(model)) return yield* new ToolRefused({ code: "NoModel", message: "no model is configured" })
    const response = yield* LanguageModel.generateText({
      prompt: [
        { role: "system", content: "You extract data from web pages. Answer with JSON only, no prose, no code fences." },
        {
          role: "user",
          content: `JSON schema:\n${JSON.stringify(schema)}\n${instruction ? `Instruction: ${instruction}\n` : ""}Page:\n${markdown.slice(0, 40_000)}`
        }
      ]
    }).pipe(Effect.provideService(LanguageModel.LanguageModel, model.value))
    const text = response.text.trim().replace(/^```(?:json)?\s*|\s*```$/g, "")
    try {
      return JSON.parse(text) as unknown
    } catch {
      return yield* new ToolRefused({ code: "InvalidJson", message: "the model did not return JSON" })
    }
  })

/** The text to type for a field on `origin`, or the step fails with the reason (an unbound origin, an unknown name). */
const revealFor = (secrets: RunSecrets, text: string, origin: string) => {
  const substituted = substituteSecrets(secrets, text, origin)
  return "refused" in substituted
    ? Effect.fail(new ToolRefused({ code: "SecretRefused", message: substituted.refused }))
    : Effect.succeed(substituted.text)
}

/** The page-submission gate of each run (src/safety/confirm.ts), by its RunContext. */
const submitGates = new WeakMap<RunContext["Service"], SubmitGate>()

/** Handlers bound to one run: the toolkit layer is built per run with its RunContext. */
export const AgentToolkitHandlers = AgentToolkit.toLayer(Effect.gen(function*() {
  const ctx = yield* RunContext
  const instrumented_ = <A>(name: string, params: unknown, body: Effect.Effect<A, ToolError, RunContext>) =>
    instrumented(ctx, name, params, Effect.suspend(() => {
      // A navigation outside the safety boundary ends the run after this step: nothing more is done.
      const violation = ctx.lease.guard.violation()
      return violation === undefined ? body : Effect.fail(new ToolRefused({ code: "safety_boundary_violated", message: `the run is stopping: ${violation.reason}` }))
    }))
  // Submissions the page makes by itself (src/safety/page-submits.ts): stopped in the page when
  // their category needs a person's confirmation; after the action the tool asks and says so.
  // The layer may be built more than once in a run: one gate per run (it keeps the confirmations).
  const gate = submitGates.get(ctx) ?? submitGate(ctx.safety, ctx.lease, ctx.askHuman)
  submitGates.set(ctx, gate)
  /** A tool that acts on the page: the page's own submissions during it are checked. */
  const acting = <A>(name: string, params: unknown, body: Effect.Effect<A, ToolError, RunContext>) =>
    instrumented_(name, params, Effect.gen(function*() {
      yield* gate.before
      const result = yield* Effect.result(body)
      const stopped = yield* gate.after(name)
      if (stopped !== undefined) return yield* new ToolRefused({ code: stopped.code, message: stopped.message })
      return result._tag === "Success" ? result.success : yield* Effect.fail(result.failure)
    }))
  /** The action, after a person's yes when the click falls in a confirm category of the boundary. */
  const confirmed = <A>(check: Effect.Effect<ClickDecision>, action: Effect.Effect<A, ToolError>) =>
    Effect.flatMap(check, (decision) =>
      decision.declined !== undefined
        ? Effect.fail(new ToolRefused({ code: "UserDeclined", message: decision.declined }))
        : decision.approved !== undefined
        ? Effect.andThen(gate.approve(decision.approved), action)
        : action)
  return AgentToolkit.of({
  navigate: (params) =>
    acting("navigate", params, hasPlaceholder(params.url)
      ? Effect.fail(new ToolRefused({ code: "SecretRefused", message: "secret placeholders are typed into fields only (type, type_at), never put into a URL" }))
      : withLease((lease) => actions.navigate(lease, params.url))),
  click: (params) =>
    acting("click", params, withLease((lease) =>
      confirmed(confirmClick(ctx.safety, targetOfRef(lease, params.ref), ctx.askHuman), actions.click(lease, params.ref)))),
  type: (params) =>
    acting("type", params, withLease((lease) =>
      // Enter after typing submits the field's form: its default button's category asks first.
      confirmed(params.submit === true ? confirmClick(ctx.safety, submitTargetOf(lease, params.ref), ctx.askHuman) : Effect.succeed({}), hasPlaceholder(params.text)
        ? Effect.gen(function*() {
          const origin = yield* actions.fieldOrigin(lease, params.ref)
          const text = yield* revealFor(ctx.secrets, params.text, origin)
          return yield* actions.type(lease, params.ref, text, { submit: params.submit ?? false, secret: { shown: params.text, origin } })
        })
        : actions.type(lease, params.ref, params.text, { submit: params.submit ?? false })))),
  press_key: (params) =>
    acting("press_key", params, withLease((lease) =>
      confirmed(
        /^enter$/i.test(params.key.trim()) ? confirmClick(ctx.safety, submitTargetOf(lease, undefined), ctx.askHuman) : Effect.succeed({}),
        actions.pressKey(lease, params.key)
      ))),
  select_option: (params) => acting("select_option", params, withLease((lease) => actions.selectOption(lease, params.ref, params.values))),
  scroll: (params) =>
    acting("scroll", params, withLease((lease) =>
      actions.scroll(
        lease,
        params.ref !== undefined
          ? { ref: params.ref }
          : { direction: params.direction ?? "down", ...(params.amount !== undefined ? { amount: params.amount } : {}) }
      ))),
  hover: (params) => acting("hover", params, withLease((lease) => actions.hover(lease, params.ref))),
  drag: (params) =>
    acting("drag", params, withLease((lease): Effect.Effect<actions.ActionOutcome, ToolError> =>
      params.to_ref !== undefined
        ? actions.drag(lease, params.ref, { ref: params.to_ref })
        : params.dx !== undefined || params.dy !== undefined
        ? actions.drag(lease, params.ref, { dx: params.dx ?? 0, dy: params.dy ?? 0 })
        : Effect.fail(new ToolRefused({ code: "InvalidParameters", message: "give to_ref, or dx and/or dy, for where to drop" })))),
  click_at: (params) =>
    acting("click_at", params, withLease((lease) =>
      confirmed(confirmClick(ctx.safety, targetAt(lease, params.x, params.y), ctx.askHuman), actions.clickAt(lease, params.x, params.y)))),
  type_at: (params) =>
    acting("type_at", params, withLease((lease) =>
      // Enter after typing submits the form of the field at the point: as `type`, its default button's category asks first.
      confirmed(params.submit === true ? confirmClick(ctx.safety, submitTargetOf(lease, { x: params.x, y: params.y }), ctx.askHuman) : Effect.succeed({}), hasPlaceholder(params.text)
        ? Effect.gen(function*() {
          const origin = yield* actions.pageOrigin(lease)
          const text = yield* revealFor(ctx.secrets, params.text, origin)
          return yield* actions.typeAt(lease, params.x, params.y, text, { submit: params.submit ?? false, secret: { shown: params.text, origin } })
        })
        : actions.typeAt(lease, params.x, params.y, params.text, { submit: params.submit ?? false })))),
  go_back: (params) => acting("go_back", params, withLease((lease) => actions.goBack(lease))),
  wait_for: (params) =>
    acting("wait_for", params, withLease((lease) =>
      actions.waitFor(lease, {
        ...(params.text !== undefined ? { text: params.text } : {}),
        ...(params.ref !== undefined ? { ref: params.ref } : {}),
        timeoutMs: Math.min(params.timeout_ms ?? 10_000, 30_000)
      } as actions.WaitForOptions))),
  switch_tab: (params) => acting("switch_tab", params, withLease((lease) => actions.switchTab(lease, params.index))),
  read_page: (params) =>
    instrumented_("read_page", params, Effect.gen(function*() {
      const current = yield* page
      const extracted = yield* extractFromPage(current)
      return { title: extracted.title, markdown: extracted.markdown.slice(0, 30_000) }
    })),
  extract: (params) =>
    instrumented_("extract", params, Effect.gen(function*() {
      const current = yield* page
      const extracted = yield* extractFromPage(current)
      return yield* extractJson(extracted.markdown, params.schema, params.instruction)
    })),
  screenshot: (params) =>
    instrumented_("screenshot", params, Effect.gen(function*() {
      const ctx = yield* RunContext
      const jpeg = yield* actions.screenshot(ctx.lease)
      const url = yield* ctx.publishScreenshot(jpeg)
      return { url }
    })),
  ask_human: (params) =>
    instrumented_("ask_human", params, Effect.gen(function*() {
      const ctx = yield* RunContext
      return { answer: yield* ctx.askHuman(params.prompt, params.schema) }
    })),
  done: (params) =>
    instrumented_("done", params, Effect.gen(function*() {
      const ctx = yield* RunContext
      const refused = yield* ctx.finish(params.output, params.next_run_at)
      if (refused !== undefined) return yield* new ToolRefused({ code: "InvalidOutput", message: refused })
      return { accepted: true }
    }))
  })
}))

/** Observation text for the model: where it is and what it can act on. */
export const observeForModel = withLease((lease) => observe(lease))

/**
 * The subset of the toolkit a run may use (empty list: all), with `done` shaped by the run's
 * `output_schema` when it has one.
 */
export const toolkitFor = (
  allowedActions: ReadonlyArray<string>,
  outputSchema?: Record<string, unknown> | null,
  /** Tools the run cannot have whatever the list says (the file tools without a workspace). */
  unavailable: ReadonlyArray<string> = [],
  /** The run belongs to an autonomous schedule: `done` offers `next_run_at`. */
  autonomous = false
) => {
  const offered = allTools.filter((t) => !unavailable.includes(t.name))
  const allowed = allowedActions.length === 0 ? offered : offered.filter((t) => allowedActions.includes(t.name) || t.name === "done")
  // A schema with $ref points into its own root, which would not resolve once nested under
  // `output`; such a run keeps the plain `done` (the prompt still carries the schema).
  const done = outputSchema && !JSON.stringify(outputSchema).includes("\"$ref\"") ? doneWithOutputSchema(outputSchema, autonomous) : autonomous ? Done : plainDone
  // One handler serves every shape of `done` (next_run_at is optional), so they share Done's type.
  const doneTool = done as unknown as typeof Done
  return Toolkit.make(...allowed.map((t) => t.name === "done" ? doneTool : t))
}
