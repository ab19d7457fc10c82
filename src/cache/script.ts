/**
 * Recording a run's actions as a cached script, and planning the replay of a saved one.
 *
 * Recording: every browser action that succeeds (and `done`) becomes a step, with its parameters
 * as the model wrote them (secret placeholders, never values: the run's redaction has been applied)
 * and its elements described by src/cache/targets.ts from the snapshot the model acted on. Tools
 * that only read (read_page, extract, screenshot) and those that reach outside the browser
 * (ask_human, files, mail) are not steps: what they brought shows up in the steps that follow.
 *
 * Replay: before each step its page is checked (the active tab's origin and path must be the
 * recorded ones, except before a navigation) and its elements are found in the live snapshot; a
 * saved `done` is given only while the page still shows the output's values. Anything else is a
 * miss, which the agent loop hands to the model.
 */
import { Effect } from "effect"
import type { Page } from "playwright-core"
import type { ContextLease } from "../browser/pool.ts"
import type { CachedStep, CachedTarget, StepPrecondition } from "../domain/cache-script.ts"
import { cssPathOfRef, describeRef, findRef, refForCss } from "./targets.ts"

/** The tools a script replays. */
export const RECORDED_TOOLS: ReadonlySet<string> = new Set([
  "navigate", "click", "type", "press_key", "select_option", "scroll", "hover", "drag",
  "click_at", "type_at", "go_back", "wait_for", "switch_tab", "done"
])

/** Origin and path of a URL (no query, no fragment); the URL itself when it has no origin (about:blank). */
export const originPath = (url: string): string => {
  try {
    const parsed = new URL(url)
    return parsed.origin === "null" ? url : `${parsed.origin}${parsed.pathname}`
  } catch {
    return url
  }
}

/** The origin a run starts at (the key of its script), or null on a blank tab. */
export const startOriginOf = (lease: ContextLease): string | null => {
  const url = lease.page()?.url()
  if (url === undefined) return null
  try {
    const origin = new URL(url).origin
    return origin === "null" ? null : origin
  } catch {
    return null
  }
}

/** The page's content in an observation (after its url, title and tabs header). */
const contentOf = (snapshot: string): string => {
  const at = snapshot.indexOf("\n---\n")
  return at === -1 ? snapshot : snapshot.slice(at + 5)
}

/** Whether the page content shows `value` as a whole word (an "M" inside "Medium" does not count). */
export const showsValue = (snapshot: string, value: string): boolean =>
  new RegExp(`(^|[^\\p{L}\\p{N}])${value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}($|[^\\p{L}\\p{N}])`, "u").test(contentOf(snapshot))

/** Every text and number leaf of a value, as text. */
const leavesOf = (value: unknown): Array<string> => {
  if (typeof value === "string") return value.trim() === "" ? [] : [value.trim()]
  if (typeof value === "number" || typeof value === "bigint") return [String(value)]
  if (Array.isArray(value)) return value.flatMap(leavesOf)
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(leavesOf)
  return []
}

const preconditionOf = async (page: Page | undefined): Promise<StepPrecondition> => ({
  url: page === undefined ? "about:blank" : originPath(page.url()),
  title: page === undefined ? "" : await page.title().catch(() => "")
})

const targetOf = async (page: Page | undefined, snapshot: string, ref: unknown): Promise<CachedTarget | null> => {
  if (typeof ref !== "string" || page === undefined) return null
  const described = describeRef(snapshot, ref)
  const css = await cssPathOfRef(page, ref)
  if (described === undefined && css === null) return null
  return described === undefined ? { role: "", name: "", containers: [], ordinal: 0, css } : { ...described, css }
}

export interface PendingStep {
  readonly step: CachedStep
}

/**
 * The steps of one execution of a run. `observed` is the snapshot the next action's refs come
 * from (the agent loop sets it each step); `before` describes an action before it runs (its
 * element may be gone after), `succeeded` keeps it.
 */
export const makeRecorder = (lease: ContextLease) => {
  const steps: Array<CachedStep> = []
  let snapshot = ""
  let replaying: CachedStep | undefined
  return {
    observed: (text: string) => {
      snapshot = text
      replaying = undefined
    },
    /**
     * The next action replays this cached step, found in the page by its own description: the
     * step is recorded as it was saved, without describing its element again (a page round trip
     * per step of a replay).
     */
    replays: (step: CachedStep) => {
      replaying = step
    },
    before: (tool: string, params: unknown): Effect.Effect<PendingStep | undefined> =>
      !RECORDED_TOOLS.has(tool) || params === null || typeof params !== "object"
        ? Effect.succeed(undefined)
        : replaying !== undefined && replaying.tool === tool
        ? Effect.sync(() => {
          const step = replaying!
          replaying = undefined
          return { step }
        })
        : Effect.promise(async () => {
          const page = lease.page()
          const { ref, to_ref, ...rest } = params as Record<string, unknown>
          return {
            step: {
              tool,
              params: rest,
              target: await targetOf(page, snapshot, ref),
              to_target: await targetOf(page, snapshot, to_ref),
              expects: await preconditionOf(page),
              output_on_page: tool === "done" ? leavesOf(rest.output).filter((leaf) => showsValue(snapshot, leaf)) : []
            }
          }
        }),
    succeeded: (pending: PendingStep) => {
      steps.push(pending.step)
    },
    steps: (): ReadonlyArray<CachedStep> => steps
  }
}
export type Recorder = ReturnType<typeof makeRecorder>

/** What the replay does next: the tool call, or why the step cannot be replayed. */
export type ReplayPlan =
  | {
    readonly _tag: "act"
    readonly tool: string
    readonly params: Record<string, unknown>
    /** An element was found by its CSS path only: its role or name changed, so the step is healed. */
    readonly byCss: boolean
  }
  | { readonly _tag: "miss"; readonly reason: string }

const describe = (target: CachedTarget) => target.role === "" ? `the element at ${target.css}` : `${target.role} ${JSON.stringify(target.name)}`

const locate = async (page: Page, snapshot: string, target: CachedTarget): Promise<{ readonly ref: string; readonly byCss: boolean } | undefined> => {
  const ref = findRef(snapshot, target)
  if (ref !== undefined) return { ref, byCss: false }
  const byCss = target.css === null ? null : await refForCss(page, target.css)
  return byCss === null ? undefined : { ref: byCss, byCss: true }
}

/** The tool call that replays `step` on the live page (its snapshot `snapshot`), or the miss. */
export const planStep = (lease: ContextLease, step: CachedStep, snapshot: string): Effect.Effect<ReplayPlan> =>
  Effect.promise(async (): Promise<ReplayPlan> => {
    const page = lease.page()
    const here = page === undefined ? "about:blank" : originPath(page.url())
    if (step.tool !== "navigate" && here !== step.expects.url) {
      return { _tag: "miss", reason: `the page is ${here}; the script's step was taken on ${step.expects.url}` }
    }
    const params: Record<string, unknown> = { ...step.params }
    let byCss = false
    if (step.target !== null) {
      const found = page === undefined ? undefined : await locate(page, snapshot, step.target)
      if (found === undefined) return { _tag: "miss", reason: `the page has no ${describe(step.target)}` }
      params.ref = found.ref
      byCss = found.byCss
    }
    if (step.to_target !== null) {
      const found = page === undefined ? undefined : await locate(page, snapshot, step.to_target)
      if (found === undefined) return { _tag: "miss", reason: `the page has no ${describe(step.to_target)} to drop on` }
      params.to_ref = found.ref
      byCss = byCss || found.byCss
    }
    if (step.tool === "done") {
      const gone = step.output_on_page.filter((value) => !showsValue(snapshot, value))
      if (gone.length > 0) return { _tag: "miss", reason: `the page no longer shows ${gone.slice(0, 3).map((v) => JSON.stringify(v)).join(", ")} of the saved output` }
    }
    return { _tag: "act", tool: step.tool, params, byCss }
  })

/** The step as the events show it: tool and element, no parameters (they may hold placeholders the user gave). */
export const stepSummary = (step: Pick<CachedStep, "tool" | "target">) => ({
  tool: step.tool,
  target: step.target === null ? null : { role: step.target.role, name: step.target.name, css: step.target.css }
})
