/**
 * The trigger and stop-condition language of Track monitors: small JSON rules, parsed once at
 * create/refine (errors name the bad path) and evaluated after every successful tick (the
 * evaluation: src/track/rules.ts).
 *
 * A parsed {@link Rule} has exactly the JSON shape the user wrote (so it is stored and shown
 * as is). Parsing is written by hand rather than as a `Schema.Union`: a union failure reports
 * every member's mismatch at the union's path, while a rule error must point at the one bad key
 * (`["all", 1, "op"]`). {@link TriggerDsl} and {@link StopConditionDsl} wrap the parser as
 * Schemas for request bodies, so a bad rule is a 422 at `body.trigger_dsl.all.1.op`.
 *
 * Results are effect's `Result`: `Result.succeed(rule)` or `Result.fail(errors)`.
 */
import { Result, Schema } from "effect"

/** Only whitespace and invisible characters: what Track's text normalisation reduces to nothing. */
const isBlank = (text: string): boolean => /^[\s\u200B\u2060\uFEFF]*$/u.test(text)

// ---------------------------------------------------------------------------------------------
// The language
// ---------------------------------------------------------------------------------------------

export const COMPARISON_OPS = ["<", "<=", ">", ">=", "==", "!="] as const
export type ComparisonOp = typeof COMPARISON_OPS[number]
export const FIELD_OPS = [...COMPARISON_OPS, "changed"] as const
export type FieldOp = typeof FIELD_OPS[number]

export type OnRule = { readonly on: "change" | "always" }
export type CompareRule = { readonly field: string; readonly op: ComparisonOp; readonly value: unknown }
export type FieldChangedRule = { readonly field: string; readonly op: "changed" }
export type ContainsRule = { readonly contains: string }
export type NotContainsRule = { readonly not_contains: string }
export type AllRule = { readonly all: ReadonlyArray<Rule> }
export type AnyRule = { readonly any: ReadonlyArray<Rule> }
export type NotRule = { readonly not: Rule }
/** Stop conditions only. */
export type MaxTicksRule = { readonly max_ticks: number }
/** Stop conditions only: an RFC 3339 date-time with an offset. */
export type UntilRule = { readonly until: string }

export type Rule =
  | OnRule
  | CompareRule
  | FieldChangedRule
  | ContainsRule
  | NotContainsRule
  | AllRule
  | AnyRule
  | NotRule
  | MaxTicksRule
  | UntilRule

export const DEFAULT_TRIGGER: Rule = { on: "change" }

/** Limits of a rule; beyond them a rule is refused, never cut. */
export const RULE_LIMITS = {
  /** Items of one `all` / `any`. */
  maxItems: 20,
  /** Nesting: the root is level 1, each `all` / `any` / `not` adds one. */
  maxDepth: 8,
  /** Rule objects in the whole tree (combinators included). */
  maxRules: 100,
  /** Characters of a `field` path. */
  maxFieldLength: 256,
  /** Characters of a `contains` / `not_contains` text. */
  maxTextLength: 1000,
  /** Characters of a comparison `value` written as JSON. */
  maxValueLength: 4000
} as const

export interface RuleError {
  /** Relative to the rule's root, e.g. `["all", 1, "op"]`; `[]` is the rule itself. */
  readonly path: ReadonlyArray<string | number>
  readonly message: string
}

export type RuleResult = Result.Result<Rule, ReadonlyArray<RuleError>>

export const RULES_DOCUMENTATION = `### Trigger and stop-condition rules

\`trigger_dsl\` decides after each successful tick whether to notify (default \`{"on": "change"}\`).
\`stop_condition_dsl\` decides whether the monitor is done (\`completed\`); \`null\` runs forever.
A rule is a JSON object with exactly one of these forms (unknown keys are errors):

| rule | true when |
|---|---|
| \`{"on": "change"}\` | this tick's snapshot differs from the previous one (never on the first, baseline tick) |
| \`{"on": "always"}\` | every successful tick |
| \`{"field": "price", "op": "<", "value": 100}\` | the extracted JSON's field compares so; \`op\` is one of \`<\` \`<=\` \`>\` \`>=\` \`==\` \`!=\` |
| \`{"field": "items.0.price", "op": "changed"}\` | the field's value differs from the previous snapshot's (not on the first tick; a field that appears counts) |
| \`{"contains": "sold out"}\` | the page text contains it (case-insensitive, whitespace-normalized) |
| \`{"not_contains": "sold out"}\` | the page text does not contain it |
| \`{"all": [rule, ...]}\` / \`{"any": [rule, ...]}\` | every / at least one rule is true (1..${RULE_LIMITS.maxItems} rules) |
| \`{"not": rule}\` | the rule is false |
| \`{"max_ticks": 10}\` | stop conditions only: the monitor has run at least this many ticks (integer ≥ 1) |
| \`{"until": "2026-12-31T23:59:59Z"}\` | stop conditions only: now is at or after this RFC 3339 date-time (offset required) |

- \`field\` is a dot path into the extracted JSON (\`items.0.price\`; a number selects an array
  element) or, when it starts with \`/\`, an RFC 6901 JSON pointer (for keys containing dots).
- A missing field (or a monitor without extraction) never satisfies a comparison, \`!=\` included.
- \`<\` \`<=\` \`>\` \`>=\` compare numerically when both sides are numbers or numeric strings: a string
  such as \`"$1,299.00"\`, \`"1 299,50 €"\` or \`"Only 3 left"\` holding exactly one number is read
  as that number (the text around it and thousands separators are ignored; with both \`,\` and \`.\`
  the last one is the decimal mark; a single \`,\` followed by exactly three digits groups thousands).
  Two non-numeric strings compare by code point (ISO dates order correctly); anything else is false.
- \`==\` and \`!=\` compare JSON values deeply; a number equals a numeric string of the same value.
- Field comparisons hold on every tick where they are true; for "notify when the price drops
  below 100" once per change, combine: \`{"all": [{"on": "change"}, {"field": "price", "op": "<", "value": 100}]}\`.
- Rules nest at most ${RULE_LIMITS.maxDepth} levels and hold at most ${RULE_LIMITS.maxRules} rule objects in all.
`

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

type Mode = "trigger" | "stop"
type Path = ReadonlyArray<string | number>

/** The key that names each form. `op` and `value` belong to `field`. */
const FORM_KEYS = ["on", "field", "contains", "not_contains", "all", "any", "not", "max_ticks", "until"] as const
type FormKey = typeof FORM_KEYS[number]
const STOP_ONLY: ReadonlySet<string> = new Set(["max_ticks", "until"])
const FORM_ALLOWED: Record<FormKey, ReadonlyArray<string>> = {
  on: ["on"],
  field: ["field", "op", "value"],
  contains: ["contains"],
  not_contains: ["not_contains"],
  all: ["all"],
  any: ["any"],
  not: ["not"],
  max_ticks: ["max_ticks"],
  until: ["until"]
}

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value)

const describe = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "object" ? "an object" : `${typeof value} ${JSON.stringify(value)}`

const formList = (mode: Mode) =>
  FORM_KEYS.filter((key) => mode === "stop" || !STOP_ONLY.has(key)).join(", ")

/** RFC 3339 date-time with a required offset (`T`, `t` or a space between date and time). */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|([+-])(\d{2}):(\d{2}))$/

/** Milliseconds since the epoch of an RFC 3339 date-time, or undefined when it is not one (Feb 30 included). */
export const parseRfc3339 = (text: string): number | undefined => {
  const m = RFC3339.exec(text)
  if (m === null) return undefined
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate()
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 60) return undefined
  if (m[9] !== undefined && (Number(m[10]) > 23 || Number(m[11]) > 59)) return undefined
  // A leap second is read as the last second of its minute.
  const millis = Date.parse(`${m.slice(1, 4).join("-")}T${m[4]}:${m[5]}:${Math.min(second, 59).toString().padStart(2, "0")}${m[7] ?? ""}${m[8]!.toUpperCase()}`)
  return Number.isFinite(millis) ? millis : undefined
}

/** The segments of a `field`: a dot path, or an RFC 6901 pointer when it starts with "/". Undefined when malformed. */
export const fieldSegments = (field: string): ReadonlyArray<string> | undefined => {
  if (field.startsWith("/")) {
    const raw = field.slice(1).split("/")
    if (raw.some((segment) => /~(?![01])/.test(segment))) return undefined
    return raw.map((segment) => segment.replace(/~1/g, "/").replace(/~0/g, "~"))
  }
  const segments = field.split(".")
  return segments.some((segment) => segment.trim() === "") ? undefined : segments
}

interface ParseState {
  readonly mode: Mode
  readonly errors: Array<RuleError>
  rules: number
  tooMany: boolean
}

const parseRule = (input: unknown, path: Path, depth: number, state: ParseState): Rule | undefined => {
  const fail = (at: Path, message: string): undefined => {
    state.errors.push({ path: at, message })
    return undefined
  }
  if (!isPlainObject(input)) return fail(path, `a rule must be a JSON object, got ${describe(input)}`)
  if (depth > RULE_LIMITS.maxDepth) return fail(path, `rules nest at most ${RULE_LIMITS.maxDepth} levels deep`)
  state.rules++
  if (state.rules > RULE_LIMITS.maxRules) {
    if (state.tooMany) return undefined
    state.tooMany = true
    return fail(path, `a rule holds at most ${RULE_LIMITS.maxRules} rule objects in all`)
  }

  const keys = Object.keys(input)
  const forms = FORM_KEYS.filter((key) => Object.hasOwn(input, key))
  if (forms.length === 0) {
    if (Object.hasOwn(input, "op") || Object.hasOwn(input, "value")) return fail([...path, "field"], "field is required with op and value")
    const unknown = keys[0]
    if (unknown === undefined) return fail(path, `an empty rule; expected exactly one of: ${formList(state.mode)}`)
    return fail([...path, unknown], `unknown key "${unknown}"; a rule is exactly one of: ${formList(state.mode)}`)
  }
  if (forms.length > 1) {
    return fail([...path, forms[1]!], `a rule has exactly one form, but "${forms[0]}" and "${forms[1]}" are both given; combine rules with "all" or "any"`)
  }
  const form = forms[0]!
  if (state.mode === "trigger" && STOP_ONLY.has(form)) {
    return fail([...path, form], `"${form}" is allowed only in a stop condition (stop_condition_dsl)`)
  }
  let ok = true
  for (const key of keys) {
    if (!FORM_ALLOWED[form].includes(key)) {
      fail([...path, key], `unknown key "${key}" in a "${form}" rule; it takes only ${FORM_ALLOWED[form].map((k) => `"${k}"`).join(", ")}`)
      ok = false
    }
  }
  const at = (...rest: ReadonlyArray<string | number>): Path => [...path, ...rest]
  const value = input[form]

  switch (form) {
    case "on":
      if (value !== "change" && value !== "always") return fail(at("on"), `must be "change" or "always", got ${describe(value)}`)
      return ok ? { on: value } : undefined

    case "field": {
      let fieldOk = true
      if (typeof value !== "string" || value === "") {
        fieldOk = false
        fail(at("field"), `must be a non-empty string (a dot path like "items.0.price" or a JSON pointer), got ${describe(value)}`)
      } else if (value.length > RULE_LIMITS.maxFieldLength) {
        fieldOk = false
        fail(at("field"), `must be at most ${RULE_LIMITS.maxFieldLength} characters`)
      } else if (fieldSegments(value) === undefined) {
        fieldOk = false
        fail(at("field"), value.startsWith("/")
          ? "is not a valid JSON pointer (\"~\" must be escaped as \"~0\")"
          : "is not a valid dot path: no empty segments (\"a..b\", a leading or trailing dot)")
      }
      const op = input.op
      if (!Object.hasOwn(input, "op")) return fail(at("op"), `op is required: one of ${FIELD_OPS.join(" ")}`)
      if (typeof op !== "string" || !(FIELD_OPS as ReadonlyArray<string>).includes(op)) {
        return fail(at("op"), `must be one of ${FIELD_OPS.map((o) => `"${o}"`).join(", ")}, got ${describe(op)}`)
      }
      const hasValue = Object.hasOwn(input, "value")
      if (op === "changed") {
        if (hasValue) return fail(at("value"), `"changed" takes no value (it compares with the previous snapshot)`)
        return ok && fieldOk ? { field: value as string, op: "changed" } : undefined
      }
      if (!hasValue) return fail(at("value"), `value is required with op "${op}"`)
      const operand = input.value
      const isOrdering = op !== "==" && op !== "!="
      if (isOrdering && typeof operand !== "string" && !(typeof operand === "number" && Number.isFinite(operand))) {
        return fail(at("value"), `must be a number or a string for "${op}", got ${describe(operand)}`)
      }
      if (operand === undefined || JSON.stringify(operand).length > RULE_LIMITS.maxValueLength) {
        return fail(at("value"), `must be a JSON value of at most ${RULE_LIMITS.maxValueLength} characters`)
      }
      return ok && fieldOk ? { field: value as string, op: op as ComparisonOp, value: operand } : undefined
    }

    case "contains":
    case "not_contains": {
      if (typeof value !== "string" || isBlank(value)) return fail(at(form), `must be a non-empty string, got ${describe(value)}`)
      if (value.length > RULE_LIMITS.maxTextLength) return fail(at(form), `must be at most ${RULE_LIMITS.maxTextLength} characters`)
      if (!ok) return undefined
      return form === "contains" ? { contains: value } : { not_contains: value }
    }

    case "all":
    case "any": {
      if (!Array.isArray(value)) return fail(at(form), `must be an array of rules, got ${describe(value)}`)
      if (value.length === 0) return fail(at(form), "must hold at least one rule")
      if (value.length > RULE_LIMITS.maxItems) return fail(at(form), `must hold at most ${RULE_LIMITS.maxItems} rules, got ${value.length}`)
      const items: Array<Rule> = []
      for (let i = 0; i < value.length; i++) {
        const item = parseRule(value[i], at(form, i), depth + 1, state)
        if (item === undefined) ok = false
        else items.push(item)
      }
      if (!ok) return undefined
      return form === "all" ? { all: items } : { any: items }
    }

    case "not": {
      const inner = parseRule(value, at("not"), depth + 1, state)
      return ok && inner !== undefined ? { not: inner } : undefined
    }

    case "max_ticks":
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
        return fail(at("max_ticks"), `must be an integer ≥ 1, got ${describe(value)}`)
      }
      return ok ? { max_ticks: value } : undefined

    case "until":
      if (typeof value !== "string" || parseRfc3339(value) === undefined) {
        return fail(at("until"), `must be an RFC 3339 date-time with an offset, e.g. "2026-12-31T23:59:59Z", got ${describe(value)}`)
      }
      return ok ? { until: value } : undefined
  }
}

const parse = (input: unknown, mode: Mode): RuleResult => {
  const state: ParseState = { mode, errors: [], rules: 0, tooMany: false }
  const rule = parseRule(input, [], 1, state)
  return rule !== undefined && state.errors.length === 0 ? Result.succeed(rule) : Result.fail(state.errors)
}

/** Parse a `trigger_dsl` (an object; the caller turns null/absent into {@link DEFAULT_TRIGGER}). */
export const parseTrigger = (input: unknown): RuleResult => parse(input, "trigger")

/** Parse a `stop_condition_dsl` (an object; the caller keeps null/absent as "forever"). Adds `max_ticks` and `until`. */
export const parseStopCondition = (input: unknown): RuleResult => parse(input, "stop")

// ---------------------------------------------------------------------------------------------
// Schemas for request bodies
// ---------------------------------------------------------------------------------------------

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

const ruleSchema = (parser: (input: unknown) => RuleResult, description: string) =>
  JsonObject.check(Schema.makeFilter((input: Record<string, unknown>) => {
    const result = parser(input)
    if (Result.isSuccess(result)) return true
    return result.failure.map((error) => ({ path: error.path.map((segment) => segment), issue: error.message }))
  }, { description })).annotate({ description: `${description}\n\n${RULES_DOCUMENTATION}` })

/** A `trigger_dsl` object, validated by {@link parseTrigger}: a bad rule fails at its path. */
export const TriggerDsl = ruleSchema(parseTrigger, "a trigger rule")

/** A `stop_condition_dsl` object, validated by {@link parseStopCondition}. */
export const StopConditionDsl = ruleSchema(parseStopCondition, "a stop-condition rule")

