import { Result, Schema } from "effect"
import { describe, expect, it } from "vitest"
import {
  DEFAULT_TRIGGER,
  parseRfc3339,
  parseStopCondition,
  parseTrigger,
  type Rule,
  type RuleError,
  RULE_LIMITS,
  RULES_DOCUMENTATION,
  StopConditionDsl,
  TriggerDsl
} from "../../src/domain/track-rules.ts"
import { evaluate, getField, type TickFacts, toNumber } from "../../src/track/rules.ts"

const ok = (result: Result.Result<Rule, ReadonlyArray<RuleError>>): Rule => {
  if (Result.isFailure(result)) throw new Error(`expected a rule, got ${JSON.stringify(result.failure)}`)
  return result.success
}
const errors = (result: Result.Result<Rule, ReadonlyArray<RuleError>>): ReadonlyArray<RuleError> => {
  if (Result.isSuccess(result)) throw new Error(`expected errors, got ${JSON.stringify(result.success)}`)
  return result.failure
}
const errorPaths = (result: Result.Result<Rule, ReadonlyArray<RuleError>>) => errors(result).map((error) => error.path)

const facts = (overrides: Partial<TickFacts> = {}): TickFacts => ({
  first: false,
  changed: false,
  extracted: null,
  previousExtracted: null,
  text: "",
  tickN: 2,
  now: new Date("2026-06-01T12:00:00Z"),
  ...overrides
})
const trigger = (input: unknown) => ok(parseTrigger(input))
const stop = (input: unknown) => ok(parseStopCondition(input))

describe("parsing: every valid form keeps its JSON shape", () => {
  it.each([
    [{ on: "change" }],
    [{ on: "always" }],
    [{ field: "price", op: "<", value: 100 }],
    [{ field: "price", op: "<=", value: "100" }],
    [{ field: "price", op: ">", value: 1.5 }],
    [{ field: "price", op: ">=", value: 0 }],
    [{ field: "status", op: "==", value: { a: [1, null] } }],
    [{ field: "status", op: "!=", value: null }],
    [{ field: "items.0.price", op: "changed" }],
    [{ field: "/a.b/c~1d", op: "changed" }],
    [{ contains: "sold out" }],
    [{ not_contains: "sold out" }],
    [{ all: [{ on: "change" }, { contains: "x" }] }],
    [{ any: [{ on: "change" }] }],
    [{ not: { contains: "x" } }]
  ])("trigger %j", (input) => {
    expect(trigger(input)).toEqual(input)
    expect(stop(input)).toEqual(input)
  })
  it("stop conditions also take max_ticks and until, alone or combined", () => {
    expect(stop({ max_ticks: 5 })).toEqual({ max_ticks: 5 })
    expect(stop({ until: "2026-12-31T23:59:59Z" })).toEqual({ until: "2026-12-31T23:59:59Z" })
    expect(stop({ until: "2026-12-31T23:59:59.250+02:00" })).toEqual({ until: "2026-12-31T23:59:59.250+02:00" })
    const combined = { any: [{ max_ticks: 10 }, { until: "2027-01-01 00:00:00z" }, { field: "stock", op: "==", value: 0 }] }
    expect(stop(combined)).toEqual(combined)
  })
  it("DEFAULT_TRIGGER is on change and parses as itself", () => {
    expect(DEFAULT_TRIGGER).toEqual({ on: "change" })
    expect(trigger(DEFAULT_TRIGGER)).toEqual(DEFAULT_TRIGGER)
  })
})

describe("parsing: errors name the bad path", () => {
  it.each<[string, unknown, ReadonlyArray<string | number>]>([
    ["null", null, []],
    ["an array", [{ on: "change" }], []],
    ["a string", "change", []],
    ["an empty object", {}, []],
    ["an unknown form", { when: "change" }, ["when"]],
    ["two forms", { on: "change", contains: "x" }, ["contains"]],
    ["an unknown key beside a form", { on: "change", extra: 1 }, ["extra"]],
    ["a bad on", { on: "changed" }, ["on"]],
    ["on not a string", { on: true }, ["on"]],
    ["op without field", { op: "<", value: 1 }, ["field"]],
    ["an empty field", { field: "", op: "<", value: 1 }, ["field"]],
    ["a field that is not a string", { field: 3, op: "<", value: 1 }, ["field"]],
    ["a field with an empty segment", { field: "items..price", op: "<", value: 1 }, ["field"]],
    ["a field with a trailing dot", { field: "price.", op: "<", value: 1 }, ["field"]],
    ["a bad pointer escape", { field: "/a~2b", op: "<", value: 1 }, ["field"]],
    ["a too long field", { field: "a".repeat(RULE_LIMITS.maxFieldLength + 1), op: "<", value: 1 }, ["field"]],
    ["a missing op", { field: "price", value: 1 }, ["op"]],
    ["an unknown op", { field: "price", op: "=<", value: 1 }, ["op"]],
    ["a missing value", { field: "price", op: "<" }, ["value"]],
    ["a value with changed", { field: "price", op: "changed", value: 1 }, ["value"]],
    ["a boolean value for <", { field: "price", op: "<", value: true }, ["value"]],
    ["an object value for >=", { field: "price", op: ">=", value: { a: 1 } }, ["value"]],
    ["a null value for >", { field: "price", op: ">", value: null }, ["value"]],
    ["a too large value", { field: "price", op: "==", value: "x".repeat(RULE_LIMITS.maxValueLength) }, ["value"]],
    ["an unknown key in a field rule", { field: "price", op: "<", value: 1, unit: "usd" }, ["unit"]],
    ["an empty contains", { contains: "" }, ["contains"]],
    ["a blank contains", { contains: "  \n " }, ["contains"]],
    ["a contains that is not a string", { contains: ["a"] }, ["contains"]],
    ["a too long not_contains", { not_contains: "x".repeat(RULE_LIMITS.maxTextLength + 1) }, ["not_contains"]],
    ["all not an array", { all: { on: "change" } }, ["all"]],
    ["an empty all", { all: [] }, ["all"]],
    ["an empty any", { any: [] }, ["any"]],
    ["too many items", { any: Array.from({ length: RULE_LIMITS.maxItems + 1 }, () => ({ on: "change" })) }, ["any"]],
    ["a bad item", { all: [{ on: "change" }, { field: "price", op: "~", value: 1 }] }, ["all", 1, "op"]],
    ["a bad nested item", { any: [{ not: { all: [{ contains: 1 }] } }] }, ["any", 0, "not", "all", 0, "contains"]],
    ["a not of a non-object", { not: "x" }, ["not"]],
    ["max_ticks in a trigger", { max_ticks: 3 }, ["max_ticks"]],
    ["until in a trigger", { until: "2026-12-31T23:59:59Z" }, ["until"]],
    ["max_ticks nested in a trigger", { any: [{ on: "change" }, { not: { max_ticks: 3 } }] }, ["any", 1, "not", "max_ticks"]]
  ])("trigger with %s", (_name, input, path) => {
    const found = errors(parseTrigger(input))
    expect(found.map((error) => error.path)).toEqual([path])
    expect(found[0]!.message).not.toBe("")
  })

  it.each<[string, unknown, ReadonlyArray<string | number>]>([
    ["max_ticks 0", { max_ticks: 0 }, ["max_ticks"]],
    ["max_ticks negative", { max_ticks: -1 }, ["max_ticks"]],
    ["max_ticks fractional", { max_ticks: 2.5 }, ["max_ticks"]],
    ["max_ticks a string", { max_ticks: "3" }, ["max_ticks"]],
    ["until a date only", { until: "2026-12-31" }, ["until"]],
    ["until without offset", { until: "2026-12-31T23:59:59" }, ["until"]],
    ["until an impossible day", { until: "2026-02-30T00:00:00Z" }, ["until"]],
    ["until an impossible hour", { until: "2026-01-01T24:00:00Z" }, ["until"]],
    ["until a bad offset", { until: "2026-01-01T00:00:00+25:00" }, ["until"]],
    ["until a number", { until: 1767225599 }, ["until"]],
    ["until free text", { until: "next friday" }, ["until"]],
    ["an unknown key beside max_ticks", { max_ticks: 3, min_ticks: 1 }, ["min_ticks"]],
    ["a bad item", { any: [{ max_ticks: 3 }, { until: "soon" }] }, ["any", 1, "until"]]
  ])("stop condition with %s", (_name, input, path) => {
    expect(errorPaths(parseStopCondition(input))).toEqual([path])
  })

  it("reports every error of a rule, each at its own path", () => {
    const input = { all: [{ field: "", op: "<", value: 1 }, { on: "sometimes" }, { contains: "ok" }, { max_ticks: 2 }] }
    expect(errorPaths(parseTrigger(input))).toEqual([["all", 0, "field"], ["all", 1, "on"], ["all", 3, "max_ticks"]])
  })

  it("names the forms it expects and why a key is refused", () => {
    const [unknownForm] = errors(parseTrigger({ when: 1 }))
    expect(unknownForm!.message).toContain("on, field, contains")
    expect(unknownForm!.message).not.toContain("max_ticks")
    const [stopUnknown] = errors(parseStopCondition({ when: 1 }))
    expect(stopUnknown!.message).toContain("max_ticks")
    const [stopOnly] = errors(parseTrigger({ until: "2026-12-31T23:59:59Z" }))
    expect(stopOnly!.message).toContain("only in a stop condition")
    const [op] = errors(parseTrigger({ field: "a", op: "~", value: 1 }))
    expect(op!.message).toContain("\"changed\"")
  })
})

describe("parsing: depth and size limits", () => {
  const nest = (levels: number): unknown => {
    let rule: unknown = { on: "change" }
    for (let i = 1; i < levels; i++) rule = { not: rule }
    return rule
  }
  it(`accepts ${RULE_LIMITS.maxDepth} levels and refuses one more at the deepest rule`, () => {
    expect(RULE_LIMITS.maxDepth).toBe(8)
    ok(parseTrigger(nest(8)))
    expect(errorPaths(parseTrigger(nest(9)))).toEqual([Array.from({ length: 8 }, () => "not")])
  })
  it("counts all and any levels too", () => {
    let rule: unknown = { contains: "x" }
    for (let i = 1; i < 9; i++) rule = i % 2 === 0 ? { all: [rule] } : { any: [{ on: "change" }, rule] }
    // Both items of the innermost `any` sit on level 9.
    const inner = ["all", 0, "any", 1, "all", 0, "any", 1, "all", 0, "any", 1, "all", 0, "any"]
    expect(errorPaths(parseTrigger(rule))).toEqual([[...inner, 0], [...inner, 1]])
    ok(parseTrigger((rule as { all: ReadonlyArray<unknown> }).all[0]))
  })
  it(`accepts ${RULE_LIMITS.maxItems} items in a combinator`, () => {
    expect(RULE_LIMITS.maxItems).toBe(20)
    ok(parseTrigger({ all: Array.from({ length: 20 }, (_, i) => ({ contains: `w${i}` })) }))
  })
  it(`refuses more than ${RULE_LIMITS.maxRules} rule objects in all, once`, () => {
    const wide = { any: Array.from({ length: 20 }, () => ({ all: Array.from({ length: 20 }, () => ({ on: "change" })) })) }
    const found = errors(parseTrigger(wide))
    expect(found).toHaveLength(1)
    expect(found[0]!.message).toContain(`${RULE_LIMITS.maxRules}`)
  })
})

describe("evaluate: on", () => {
  it("change fires on a changed tick, never on the first one", () => {
    const rule = trigger({ on: "change" })
    expect(evaluate(rule, facts({ changed: true }))).toBe(true)
    expect(evaluate(rule, facts({ changed: false }))).toBe(false)
    expect(evaluate(rule, facts({ first: true, changed: true }))).toBe(false)
  })
  it("always fires on every tick, the first included", () => {
    const rule = trigger({ on: "always" })
    expect(evaluate(rule, facts())).toBe(true)
    expect(evaluate(rule, facts({ first: true }))).toBe(true)
  })
})

describe("evaluate: field comparisons", () => {
  const holds = (rule: unknown, extracted: unknown) => evaluate(trigger(rule), facts({ extracted }))
  it.each<[string, unknown, boolean]>([
    ["<", 99, true], ["<", 100, false], ["<", 101, false],
    ["<=", 100, true], ["<=", 101, false],
    [">", 101, true], [">", 100, false],
    [">=", 100, true], [">=", 99, false],
    ["==", 100, true], ["==", 99, false],
    ["!=", 99, true], ["!=", 100, false]
  ])("price %s 100 with price %j is %j", (op, price, expected) => {
    expect(holds({ field: "price", op, value: 100 }, { price })).toBe(expected)
  })
  it("parses numeric strings for <, <=, >, >=", () => {
    expect(holds({ field: "price", op: "<", value: 1300 }, { price: "$1,299.00" })).toBe(true)
    expect(holds({ field: "price", op: ">", value: 1299.5 }, { price: "$1,299.00" })).toBe(false)
    expect(holds({ field: "price", op: "<=", value: "1.299,00 €" }, { price: "$1,299.00" })).toBe(true)
    expect(holds({ field: "price", op: ">=", value: "10" }, { price: 9 })).toBe(false)
    expect(holds({ field: "price", op: "<", value: 0 }, { price: "-$5" })).toBe(true)
    expect(holds({ field: "stock", op: "<", value: 5 }, { stock: "Only 3 left" })).toBe(true)
  })
  it("compares two non-numeric strings by code point and anything else not at all", () => {
    expect(holds({ field: "date", op: "<", value: "2026-07-01" }, { date: "2026-06-30" })).toBe(true)
    expect(holds({ field: "date", op: ">", value: "2026-07-01" }, { date: "2026-06-30" })).toBe(false)
    expect(holds({ field: "price", op: "<", value: 100 }, { price: "call us" })).toBe(false)
    expect(holds({ field: "price", op: ">", value: 100 }, { price: "call us" })).toBe(false)
    expect(holds({ field: "price", op: "<", value: 100 }, { price: true })).toBe(false)
    expect(holds({ field: "price", op: "<", value: 100 }, { price: null })).toBe(false)
    expect(holds({ field: "price", op: "<", value: 100 }, { price: [1] })).toBe(false)
  })
  it("== and != compare JSON deeply, and a number equals a numeric string of its value", () => {
    expect(holds({ field: "tags", op: "==", value: ["a", { b: 1 }] }, { tags: ["a", { b: 1 }] })).toBe(true)
    expect(holds({ field: "tags", op: "==", value: ["a"] }, { tags: ["a", "b"] })).toBe(false)
    expect(holds({ field: "s", op: "==", value: "In stock" }, { s: "In stock" })).toBe(true)
    expect(holds({ field: "s", op: "==", value: "in stock" }, { s: "In stock" })).toBe(false)
    expect(holds({ field: "s", op: "==", value: null }, { s: null })).toBe(true)
    expect(holds({ field: "price", op: "==", value: 1299 }, { price: "$1,299.00" })).toBe(true)
    expect(holds({ field: "price", op: "!=", value: "1299" }, { price: 1299 })).toBe(false)
    expect(holds({ field: "flag", op: "!=", value: true }, { flag: false })).toBe(true)
  })
  it("a missing field never satisfies a comparison, != included", () => {
    for (const op of ["<", "<=", ">", ">=", "==", "!="]) {
      expect(holds({ field: "price", op, value: 1 }, { other: 1 })).toBe(false)
      expect(holds({ field: "items.5.price", op, value: 1 }, { items: [{ price: 1 }] })).toBe(false)
    }
    expect(evaluate(trigger({ field: "price", op: "!=", value: 1 }), facts({ extracted: null }))).toBe(false)
    expect(holds({ field: "price.amount", op: "!=", value: 1 }, { price: 5 })).toBe(false)
  })
  it("follows dot paths through objects and arrays, and JSON pointers", () => {
    const extracted = { items: [{ price: 5 }, { price: 50 }], "a.b": { "c/d": 7 } }
    expect(holds({ field: "items.1.price", op: "==", value: 50 }, extracted)).toBe(true)
    expect(holds({ field: "/a.b/c~1d", op: "==", value: 7 }, extracted)).toBe(true)
    expect(holds({ field: "a.b", op: "!=", value: 0 }, extracted)).toBe(false)
  })
  it("changed fires when the field's value differs from the previous snapshot's", () => {
    const rule = trigger({ field: "items.0.price", op: "changed" })
    const at = (previousExtracted: unknown, extracted: unknown, first = false) =>
      evaluate(rule, facts({ first, previousExtracted, extracted }))
    expect(at({ items: [{ price: 5 }] }, { items: [{ price: 6 }] })).toBe(true)
    expect(at({ items: [{ price: 5 }] }, { items: [{ price: 5 }], other: 1 })).toBe(false)
    expect(at({ items: [{ price: { a: 1, b: 2 } }] }, { items: [{ price: { b: 2, a: 1 } }] })).toBe(false)
    // Appearing counts as a change; disappearing is a missing field, which never satisfies.
    expect(at({ items: [] }, { items: [{ price: 5 }] })).toBe(true)
    expect(at({ items: [{ price: 5 }] }, { items: [] })).toBe(false)
    // No previous snapshot: the baseline, never a change.
    expect(at(null, { items: [{ price: 5 }] }, true)).toBe(false)
    expect(at(null, { items: [{ price: 5 }] })).toBe(false)
  })
})

describe("evaluate: text", () => {
  const text = "Lamp\nPrice: $5\nSOLD OUT today"
  it("contains is case-insensitive and whitespace-normalized", () => {
    expect(evaluate(trigger({ contains: "sold out" }), facts({ text }))).toBe(true)
    expect(evaluate(trigger({ contains: "  Sold\u00A0 Out " }), facts({ text }))).toBe(true)
    expect(evaluate(trigger({ contains: "$5 sold out" }), facts({ text }))).toBe(false)
    expect(evaluate(trigger({ contains: "in stock" }), facts({ text }))).toBe(false)
  })
  it("not_contains is its negation", () => {
    expect(evaluate(trigger({ not_contains: "sold out" }), facts({ text: "Sold out" }))).toBe(false)
    expect(evaluate(trigger({ not_contains: "sold out" }), facts({ text: "In stock" }))).toBe(true)
  })
})

describe("evaluate: combinators", () => {
  const yes = { on: "always" }
  const no = { contains: "never there" }
  it("all needs every rule", () => {
    expect(evaluate(trigger({ all: [yes, yes] }), facts())).toBe(true)
    expect(evaluate(trigger({ all: [yes, no] }), facts())).toBe(false)
  })
  it("any needs one rule", () => {
    expect(evaluate(trigger({ any: [no, yes] }), facts())).toBe(true)
    expect(evaluate(trigger({ any: [no, no] }), facts())).toBe(false)
  })
  it("not negates", () => {
    expect(evaluate(trigger({ not: yes }), facts())).toBe(false)
    expect(evaluate(trigger({ not: { not: yes } }), facts())).toBe(true)
  })
  it("a change that drops the price below a threshold", () => {
    const rule = trigger({ all: [{ on: "change" }, { field: "price", op: "<", value: 100 }] })
    expect(evaluate(rule, facts({ changed: true, extracted: { price: "$99" } }))).toBe(true)
    expect(evaluate(rule, facts({ changed: false, extracted: { price: "$99" } }))).toBe(false)
    expect(evaluate(rule, facts({ changed: true, extracted: { price: "$120" } }))).toBe(false)
  })
})

describe("evaluate: stop conditions", () => {
  it("max_ticks is true once the tick count reached n", () => {
    const rule = stop({ max_ticks: 3 })
    expect(evaluate(rule, facts({ tickN: 2 }))).toBe(false)
    expect(evaluate(rule, facts({ tickN: 3 }))).toBe(true)
    expect(evaluate(rule, facts({ tickN: 4 }))).toBe(true)
  })
  it("until is true when now is at or after the time, offsets respected", () => {
    const rule = stop({ until: "2026-06-01T14:00:00+02:00" })
    expect(evaluate(rule, facts({ now: new Date("2026-06-01T11:59:59.999Z") }))).toBe(false)
    expect(evaluate(rule, facts({ now: new Date("2026-06-01T12:00:00Z") }))).toBe(true)
    expect(evaluate(rule, facts({ now: new Date("2027-01-01T00:00:00Z") }))).toBe(true)
  })
  it("combines with the rest of the language", () => {
    const rule = stop({ any: [{ max_ticks: 10 }, { field: "stock", op: "==", value: 0 }] })
    expect(evaluate(rule, facts({ tickN: 1, extracted: { stock: 0 } }))).toBe(true)
    expect(evaluate(rule, facts({ tickN: 1, extracted: { stock: 2 } }))).toBe(false)
    expect(evaluate(rule, facts({ tickN: 10, extracted: { stock: 2 } }))).toBe(true)
  })
})

describe("helpers", () => {
  it.each<[unknown, number | undefined]>([
    [5, 5], [-2.5, -2.5], [Number.NaN, undefined], ["12", 12], ["-3.5", -3.5], ["1e3", 1000], [".5", 0.5],
    ["$1,299.00", 1299], ["1.299,50 €", 1299.5], ["1 299,50 €", 1299.5], ["USD 12", 12], ["12%", 12],
    ["1,299", 1299], ["1,5", 1.5], ["12,50", 12.5], ["1.299.000", 1299000], ["1,299,000", 1299000], ["−7 €", -7],
    ["3 for $10", undefined], ["2026-01-05", undefined], ["v1.2.3", undefined], ["free", undefined], ["", undefined],
    [true, undefined], [null, undefined], [[1], undefined]
  ])("toNumber(%j) is %j", (input, expected) => {
    expect(toNumber(input)).toBe(expected)
  })
  it("getField resolves own keys and in-range indices only", () => {
    expect(getField({ a: [{ b: 1 }] }, "a.0.b")).toBe(1)
    expect(getField({ a: [{ b: 1 }] }, "a.01.b")).not.toBe(1)
    expect(getField({}, "constructor")).not.toBe(Object)
    expect(getField({ a: null }, "a")).toBe(null)
  })
  it("parseRfc3339 reads offsets and refuses impossible dates", () => {
    expect(parseRfc3339("2026-06-01T14:00:00+02:00")).toBe(Date.parse("2026-06-01T12:00:00Z"))
    expect(parseRfc3339("2024-02-29T00:00:00Z")).toBe(Date.parse("2024-02-29T00:00:00Z"))
    expect(parseRfc3339("2026-02-29T00:00:00Z")).toBeUndefined()
    expect(parseRfc3339("2026-13-01T00:00:00Z")).toBeUndefined()
  })
  it("documents every form", () => {
    for (const form of ["\"on\": \"change\"", "\"on\": \"always\"", "\"op\": \"changed\"", "contains", "not_contains", "all", "any", "not", "max_ticks", "until"]) {
      expect(RULES_DOCUMENTATION).toContain(form)
    }
  })
})

describe("TriggerDsl and StopConditionDsl schemas", () => {
  it("accept valid rules and report a bad one at its path", () => {
    expect(Schema.decodeUnknownSync(TriggerDsl)({ all: [{ on: "change" }] })).toEqual({ all: [{ on: "change" }] })
    expect(Schema.decodeUnknownSync(StopConditionDsl)({ max_ticks: 2 })).toEqual({ max_ticks: 2 })
    const result = Schema.decodeUnknownExit(TriggerDsl)({ all: [{ on: "change" }, { field: "x", op: "~", value: 1 }] })
    expect(result._tag).toBe("Failure")
    expect(String(result)).toContain("[\"all\"][1][\"op\"]")
    expect(Schema.decodeUnknownExit(TriggerDsl)({ max_ticks: 2 })._tag).toBe("Failure")
  })
})
