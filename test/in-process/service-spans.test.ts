/**
 * Every method of every service of ours has a span named `Service.method` (issue 26 §2).
 *
 * - Structural: scans src/ for `Context.Service<` declarations and, for each, the `X.of(...)` that
 *   builds it (in its own module or a module importing it). The implementation passes if it is
 *   `X.of(withMethodSpans("X", ...))`, or if every field of its object literal is covered: declared
 *   with `Effect.fn("X.field")` (inline or through a local const; an Effect-valued field may be
 *   such a function called once, `field: field()`), or spread from `...withMethodSpans("X", {...})`.
 *   An inline `.pipe(Effect.withSpan("X.field"))` does not count: it is the third tracing style the
 *   issue removes (built even with tracing off), and no module of src/ but spans.ts calls
 *   Effect.withSpan (an inner operation's span is spans.ts withSpanIfTracing). The services that
 *   are not ours-with-methods, and fields that are not Effect-returning methods, are allow-listed
 *   below with their reason. The analysis is also run on copies of src/ with a wrapper removed, an
 *   Effect.fn unnamed, and a method spanned inline, to show it fails.
 * - Runtime: a few real layers on a database of this file, under a tracer recording span names;
 *   calling a method yields its `Service.method` span (a removed wrapper fails this too).
 */
import { expect, it, layer } from "@effect/vitest"
import { Effect, Layer, Option, References, Tracer } from "effect"
import { readdirSync, readFileSync, statSync } from "node:fs"
import * as path from "node:path"
import ts from "typescript"
import { Projects } from "../../src/auth/projects.ts"
import { Ledger } from "../../src/billing/ledger.ts"
import { AppConfig } from "../../src/config/config.ts"
import { withSpanIfTracing } from "../../src/observability/spans.ts"
import { SafetyPolicies } from "../../src/safety/service.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { SkillStore } from "../../src/store/skills.ts"
import type { ProjectId } from "../../src/domain/run.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"

const SRC = path.resolve(import.meta.dirname, "../../src")

/** Services without method spans, and why. */
const NOT_SPANNED: Record<string, string> = {
  // Configuration and context values, not services with methods.
  AppConfig: "configuration values",
  AgentModel: "an Option of the configured model, no methods",
  DatabaseInfo: "where the database is (plain values)",
  RequestBase: "a captured Context of the request services",
  // The logger: spans around every log line would be noise (and recursive with log export).
  LogLines: "the logger's line buffer",
  // Per-request values the HttpApi middlewares of src/http/api provide.
  CurrentKey: "HttpApi middleware tag (the authenticated API key)",
  CurrentCaller: "HttpApi middleware tag (the authenticated caller)",
  CurrentAccessKey: "HttpApi middleware tag (the signed delegation caller)",
  CurrentUser: "HttpApi middleware tag (the console session)",
  // The SDK must not import server modules (src/observability).
  WebAgentApi: "the client SDK (src/client)",
  // Per-run bags the agent loop builds for its tools (src/agent/run-agent.ts): closures over one run,
  // called per tool step and event; the tools' own spans cover them.
  RunContext: "per-run tool context built in run-agent.ts",
  FileToolContext: "per-run tool context built in run-agent.ts",
  MailToolContext: "per-run tool context built in run-agent.ts",
  // Effect values, not methods (withMethodSpans passes non-functions through).
  RunnerLifecycle: "two Effect-valued fields (draining, startDraining), no methods"
}

/** Fields of spanned services that are not Effect-returning methods. */
const NOT_METHODS = new Set([
  "WebSearch.engines", // engine names
  "WebSearch.defaultEngines",
  "Sso.providers", // the configured providers
  "Ledger.enabled", // config flag
  "Ledger.minBalanceMicros", // config number
  "Plans.table", // the plan table
  "Plans.capsOf", // a pure function of a plan
  "Schedules.wake", // Effect values (the wake loop, one due pass)
  "Schedules.runDue",
  "NotificationChannels.wake" // an Effect value (the two wake-ups above), as Callbacks.wake
])

const walk = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name)
    return statSync(p).isDirectory() ? walk(p) : p.endsWith(".ts") ? [p] : []
  })

interface Module {
  readonly file: string
  readonly source: ts.SourceFile
}

/** The problems of the services declared in `modules` (source text by file), empty when every method has its span. */
export const spanProblems = (modules: ReadonlyArray<{ readonly file: string; readonly text: string }>): Array<string> => {
  const parsed: Array<Module> = modules.map(({ file, text }) => ({ file, source: ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true) }))
  const declared: Array<{ name: string; file: string }> = []
  for (const m of parsed) {
    for (const statement of m.source.statements) {
      if (ts.isClassDeclaration(statement) && statement.name && statement.heritageClauses?.some((h) => h.getText().includes("Context.Service<"))) {
        declared.push({ name: statement.name.text, file: m.file })
      }
    }
  }
  const problems: Array<string> = []
  for (const service of declared) {
    if (service.name in NOT_SPANNED) continue
    const base = path.basename(service.file)
    const where = parsed.filter((m) => m.file === service.file || new RegExp(`import \\{[^}]*\\b${service.name}\\b[^}]*\\} from "[^"]*/${base.replace(".", "\\.")}"`).test(m.source.text))
    let found = 0
    for (const m of where) {
      const consts = new Map<string, ts.Expression>()
      const calls: Array<ts.CallExpression> = []
      const visit = (n: ts.Node) => {
        if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.initializer) consts.set(n.name.text, n.initializer)
        if (
          ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && n.expression.name.text === "of" &&
          ts.isIdentifier(n.expression.expression) && n.expression.expression.text === service.name && n.arguments.length === 1
        ) calls.push(n)
        ts.forEachChild(n, visit)
      }
      visit(m.source)
      for (const call of calls) {
        found++
        const at = `${path.relative(SRC, m.file)}: ${service.name}`
        let arg = call.arguments[0]!
        while (ts.isParenthesizedExpression(arg)) arg = arg.expression
        const wrapper = (e: ts.Expression) =>
          ts.isCallExpression(e) && e.expression.getText() === "withMethodSpans" ? e : undefined
        const whole = wrapper(arg)
        if (whole) {
          const name = whole.arguments[0]
          if (!name || !ts.isStringLiteral(name) || name.text !== service.name) problems.push(`${at}: withMethodSpans names it ${name?.getText()}`)
          continue
        }
        if (!ts.isObjectLiteralExpression(arg)) {
          problems.push(`${at}: ${service.name}.of(...) is neither withMethodSpans nor an object literal`)
          continue
        }
        const covered = (field: string, init: ts.Expression | undefined, depth = 0): boolean => {
          if (init === undefined || depth > 3) return false
          // A local const: `field: make` (or shorthand), or an Effect-valued field `field: make()`.
          if (ts.isIdentifier(init)) return covered(field, consts.get(init.text), depth + 1)
          if (ts.isCallExpression(init) && init.arguments.length === 0 && ts.isIdentifier(init.expression)) {
            return covered(field, consts.get(init.expression.text), depth + 1)
          }
          if (ts.isCallExpression(init) && ts.isCallExpression(init.expression) && init.expression.expression.getText() === "Effect.fn") {
            const name = init.expression.arguments[0]
            return name !== undefined && ts.isStringLiteral(name) && name.text === `${service.name}.${field}`
          }
          return false
        }
        for (const p of arg.properties) {
          if (ts.isSpreadAssignment(p)) {
            const spread = wrapper(p.expression)
            const name = spread?.arguments[0]
            if (!spread || !name || !ts.isStringLiteral(name) || name.text !== service.name) problems.push(`${at}: spread ${p.expression.getText().slice(0, 60)} is not withMethodSpans("${service.name}", ...)`)
            continue
          }
          const field = p.name?.getText() ?? "?"
          if (NOT_METHODS.has(`${service.name}.${field}`)) continue
          const init = ts.isShorthandPropertyAssignment(p) ? p.name : ts.isPropertyAssignment(p) ? p.initializer : undefined
          if (!covered(field, init)) problems.push(`${at}.${field} has no span named ${service.name}.${field} (Effect.fn, or withMethodSpans)`)
        }
      }
    }
    if (found === 0) problems.push(`${path.relative(SRC, service.file)}: ${service.name}: no ${service.name}.of(...) found; build it with .of or allow-list it`)
  }
  return problems
}

const sources = () => walk(SRC).map((file) => ({ file, text: readFileSync(file, "utf8") }))

it("every service method of src/ has a span named Service.method", () => {
  expect(spanProblems(sources())).toEqual([])
})

it("one tracing style: no module of src/ but spans.ts calls Effect.withSpan", () => {
  const inline = sources()
    .filter((m) => !m.file.endsWith("/observability/spans.ts") && m.text.includes("Effect.withSpan("))
    .map((m) => path.relative(SRC, m.file))
  expect(inline).toEqual([])
})

it("the scan finds a service whose wrapper or Effect.fn is removed", () => {
  const all = sources()
  const mutate = (suffix: string, f: (text: string) => string) =>
    all.map((m) => m.file.endsWith(suffix) ? { file: m.file, text: f(m.text) } : m)
  // A store wrapped whole.
  const unwrapped = mutate("/store/skills.ts", (t) => t.replace(`SkillStore.of(withMethodSpans("SkillStore", {`, "SkillStore.of(({"))
  expect(unwrapped).not.toEqual(all)
  expect(spanProblems(unwrapped).some((p) => p.includes("SkillStore.create has no span"))).toBe(true)
  // A product service with Effect.fn methods.
  const unnamed = mutate("/billing/plans.ts", (t) => t.replace(`Effect.fn("Plans.set")(`, "Effect.fnUntraced("))
  expect(unnamed).not.toEqual(all)
  expect(spanProblems(unnamed)).toEqual([expect.stringContaining("Plans.set has no span")])
  // A method spanned inline is not covered.
  const inline = [...all, {
    file: path.join(SRC, "spans-example/inline.ts"),
    text: [
      `import { Context, Effect } from "effect"`,
      `export class Inline extends Context.Service<Inline, { readonly get: () => Effect.Effect<void> }>()("Inline") {}`,
      `export const inline = Inline.of({ get: () => Effect.void.pipe(Effect.withSpan("Inline.get")) })`
    ].join("\n")
  }]
  expect(spanProblems(inline)).toEqual([expect.stringContaining("Inline.get has no span")])
  // A spread naming another service.
  const misnamed = mutate("/billing/plans.ts", (t) => t.replace(`>>("Plans", {`, `>>("Plan", {`))
  expect(misnamed).not.toEqual(all)
  expect(spanProblems(misnamed)).toEqual([expect.stringContaining(`is not withMethodSpans("Plans"`)])
})

// Runtime: the span names a tracer sees when methods of real layers run.
/** A project id no row holds: the spans are recorded whatever the calls find. */
const spansProject = "proj_spans" as ProjectId

const spanNames: Array<string> = []
const recording = Tracer.make({
  span: (options) => {
    spanNames.push(options.name)
    return new Tracer.NativeSpan(options)
  }
})

const ConfigLive = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabase("spans")
  const dataDir = yield* freshDataDir("wa-spans")
  return AppConfig.layerFrom({ DATABASE_URL: url, WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Error" })
}))

const TestLayer = Layer.mergeAll(SkillStore.layer, Projects.layer, SafetyPolicies.layer, Ledger.layer).pipe(
  Layer.provideMerge(databaseLayer("own")),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Error")),
  Layer.provideMerge(ConfigLive)
)

layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })("service method spans at run time", (it) => {
  const spansOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      spanNames.length = 0
      yield* Effect.withTracer(effect, recording)
      return [...spanNames]
    })

  it.effect("a wrapped store's method runs in its Store.method span", () =>
    Effect.gen(function*() {
      const skills = yield* SkillStore
      expect(yield* spansOf(skills.list(spansProject, 10, undefined))).toContain("SkillStore.list")
    }))

  it.effect("a wrapped service calling its store: Service.method and Store.method", () =>
    Effect.gen(function*() {
      const projects = yield* Projects
      const names = yield* spansOf(projects.find(spansProject))
      expect(names).toEqual(expect.arrayContaining(["Projects.find", "ProjectStore.find"]))
    }))

  it.effect("a spread in an Effect.fn service: the spread method and its store have spans", () =>
    Effect.gen(function*() {
      const policies = yield* SafetyPolicies
      const names = yield* spansOf(policies.forRun(spansProject))
      expect(names).toEqual(expect.arrayContaining(["SafetyPolicies.forRun", "SafetyPolicyStore.get"]))
    }))

  it.effect("a store method spread into an Effect.fn service, and an Effect.fn method over its store", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      // The outcome does not matter (no such project): the spans are made when the calls start.
      const charged = yield* spansOf(Effect.exit(ledger.charge({ projectId: spansProject, kind: "charge_search", micros: 1, idempotencyKey: "spans:charge" })))
      expect(charged).toEqual(expect.arrayContaining(["Ledger.charge", "LedgerStore.charge"]))
      const granted = yield* spansOf(Effect.exit(ledger.grant(spansProject, 1, "additional", "spans:grant")))
      expect(granted).toEqual(expect.arrayContaining(["Ledger.grant", "LedgerStore.credit"]))
    }))
})

// An inner operation's span (the scheduler's one dispatch): made with tracing on, with its attributes;
// with tracing off the effect runs as it is and the attributes are not computed.
it.effect("withSpanIfTracing: a span with its attributes with tracing on, none and no attributes computed with it off", () =>
  Effect.gen(function*() {
    let computed = 0
    const traced = Effect.option(Effect.currentSpan).pipe(
      withSpanIfTracing("Schedules.fire", () => {
        computed++
        return { "schedule.owner_id": "sched_1" }
      })
    )
    const off = yield* traced.pipe(Effect.provideService(References.TracerEnabled, false))
    expect(off).toEqual(Option.none())
    expect(computed).toBe(0)
    const on = yield* traced
    expect(Option.map(on, (span) => span.name)).toEqual(Option.some("Schedules.fire"))
    expect(Option.map(on, (span) => span.attributes.get("schedule.owner_id"))).toEqual(Option.some("sched_1"))
    expect(computed).toBe(1)
  }))
